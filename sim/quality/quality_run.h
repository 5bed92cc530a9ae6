// File: sim/quality/quality_run.h
//
// One quality run as `kvsim quality` and the Python module's `kvsim.quality` make it: the policy and budget
// lists parsed from their text ("h2o,snapkv", "64,256,0.25,10%"), then every sample of an attention trace
// (traces/attention/attention_trace_io.h) through a QualityEvaluator. Both callers go through these
// functions, so they accept the same input, refuse it with the same message and give the same results.
//
// Example:
//   QualityOptions options;
//   KVSIM_ASSIGN_OR_RETURN(options.policies, ParseQualityPolicies("h2o,snapkv"));
//   KVSIM_RETURN_IF_ERROR(ParseQualityBudgets("64,0.25", &options));
//   KVSIM_ASSIGN_OR_RETURN(QualityResults results, EvaluateQualityTrace("t.kvat", options, 0));
#ifndef KVSIM_SIM_QUALITY_QUALITY_RUN_H_
#define KVSIM_SIM_QUALITY_QUALITY_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/quality/quality_evaluator.h"

namespace kvsim {

// The comma-separated policy specs of `text`, each stripped of spaces. InvalidArgument naming --policies
// when it is blank or an entry is empty.
absl::StatusOr<std::vector<std::string>> ParseQualityPolicies(const std::string& text);

// Sets options->budget_tokens and budget_ratios from `text`: integers are tokens per KV head (in [1,
// kMaxQualityBudgetTokens]); decimals and percentages are ratios of the prompt length (in (0, 1]).
// InvalidArgument naming --budgets and the entry otherwise.
absl::Status ParseQualityBudgets(const std::string& text, QualityOptions* options);

// Sets options->max_attention_bytes from MiB; InvalidArgument unless 1 <= attention_mib <= 2^30.
absl::Status SetQualityAttentionMib(int64_t attention_mib, QualityOptions* options);

// Evaluates the first `max_samples` samples of the attention trace at `trace_path` (0 = all). Errors of
// the trace reader and evaluator as they are; InvalidArgument for max_samples < 0 or when the samples
// evaluated have no decode steps.
// `progress`, when set, is told (samples done, samples to evaluate) after each sample; results do not
// depend on it.
absl::StatusOr<QualityResults> EvaluateQualityTrace(
    const std::string& trace_path, const QualityOptions& options, int64_t max_samples,
    const std::function<void(int64_t done, int64_t total)>& progress = nullptr);

}  // namespace kvsim

#endif  // KVSIM_SIM_QUALITY_QUALITY_RUN_H_
