#include "sim/quality/quality_run.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "traces/attention/attention_trace_io.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// The comma-separated entries of the required list flag --`flag`, each stripped of spaces. InvalidArgument
// when the flag is blank ("--flag is required, e.g. `example`") or an entry is empty.
absl::StatusOr<std::vector<absl::string_view>> ListEntries(absl::string_view flag, absl::string_view text,
                                                           absl::string_view example) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required, e.g. ", example));
  }
  std::vector<absl::string_view> entries;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": empty entry in '", text, "'"));
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseQualityPolicies(const std::string& text) {
  KVSIM_ASSIGN_OR_RETURN(std::vector<absl::string_view> names, ListEntries("policies", text, "--policies=h2o,snapkv"));
  return std::vector<std::string>(names.begin(), names.end());
}

absl::Status ParseQualityBudgets(const std::string& text, QualityOptions* options) {
  std::vector<int64_t> budget_tokens;
  std::vector<double> budget_ratios;
  KVSIM_ASSIGN_OR_RETURN(std::vector<absl::string_view> items,
                         ListEntries("budgets", text, "--budgets=64,256,1024 or --budgets=0.1,0.25"));
  for (absl::string_view item : items) {
    const bool percent = absl::ConsumeSuffix(&item, "%");
    int64_t tokens;
    double ratio;
    const bool digits = !percent && item.find_first_not_of("+-0123456789") == absl::string_view::npos;
    if (digits) {
      if (!absl::SimpleAtoi(item, &tokens) || tokens < 1 || tokens > kMaxQualityBudgetTokens) {
        return absl::InvalidArgumentError(
            absl::StrCat("--budgets: ", item, " tokens: must be in [1, ", kMaxQualityBudgetTokens, "]"));
      }
      budget_tokens.push_back(tokens);
    } else if (absl::SimpleAtod(item, &ratio)) {
      if (percent) ratio /= 100;
      if (!(ratio > 0 && ratio <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--budgets: ratio '", item, percent ? "%" : "", "' must be in (0, 1] of the prompt"));
      }
      budget_ratios.push_back(ratio);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--budgets: '", item, "' is neither a token count (256) nor a ratio (0.25 or 25%)"));
    }
  }
  options->budget_tokens = std::move(budget_tokens);
  options->budget_ratios = std::move(budget_ratios);
  return absl::OkStatus();
}

absl::Status SetQualityAttentionMib(int64_t attention_mib, QualityOptions* options) {
  if (attention_mib < 1 || attention_mib > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat("--attention_mib=", attention_mib, ": must be in [1, 2^30]"));
  }
  options->max_attention_bytes = attention_mib << 20;
  return absl::OkStatus();
}

absl::StatusOr<QualityResults> EvaluateQualityTrace(const std::string& trace_path, const QualityOptions& options,
                                                    int64_t max_samples,
                                                    const std::function<void(int64_t, int64_t)>& progress) {
  if (max_samples < 0) return absl::InvalidArgumentError("--max_samples must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(auto reader, AttentionTraceReader::Open(trace_path));
  KVSIM_ASSIGN_OR_RETURN(auto evaluator, QualityEvaluator::Create(reader->header(), options));
  int64_t count = reader->num_samples();
  if (max_samples > 0) count = std::min(count, max_samples);
  for (int64_t s = 0; s < count; ++s) {
    KVSIM_ASSIGN_OR_RETURN(AttentionSample sample, reader->ReadSample(s));
    KVSIM_RETURN_IF_ERROR(evaluator->AddSample(sample));
    if (progress) progress(s + 1, count);
  }
  QualityResults results = evaluator->Finish();
  if (results.num_decode_steps == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace_path, ": the ", count, " sample(s) evaluated have no decode steps: nothing to measure"));
  }
  return results;
}

}  // namespace kvsim
