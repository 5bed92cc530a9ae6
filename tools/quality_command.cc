// `kvsim quality`: offline fidelity of token-level KV policies on an attention trace, over budgets.
// Thin: parsing and output only; the work is in sim/quality_evaluator and sim/quality_report.
#include <ostream>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/quality/quality_evaluator.h"
#include "sim/quality/quality_report.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/attention/attention_trace_io.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, policies, "",
          "comma-separated token policies (see 'kvsim help quality'); oracle_select is always added");
ABSL_FLAG(std::string, budgets, "",
          "comma-separated budgets: an integer is tokens per KV head (e.g. 256), a decimal or percentage is "
          "a fraction of the prompt length (e.g. 0.25 or 25%)");
ABSL_FLAG(int32_t, top_k, 32, "k of the top-k overlap metric, in tokens");
ABSL_FLAG(int64_t, max_samples, 0, "evaluate at most this many samples of the trace; 0 = all");
ABSL_FLAG(int64_t, attention_mib, 1024,
          "memory for attention rows held at once, in MiB: a layer's exact attention is kept whole when it "
          "fits (faster: oracle_evict reuses it), else decode steps go in blocks; results do not depend on it");

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

// Parses "--budgets": integers are tokens; decimals and percentages are ratios of the prompt length.
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

namespace {

absl::Status RunQuality(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --trace=FILE)");
  const std::string trace = absl::GetFlag(FLAGS_trace);
  if (trace.empty()) return absl::InvalidArgumentError("--trace=FILE (an attention trace, .kvat) is required");
  QualityOptions options;
  const std::string policies = absl::GetFlag(FLAGS_policies);
  KVSIM_ASSIGN_OR_RETURN(std::vector<absl::string_view> names,
                         ListEntries("policies", policies, "--policies=h2o,snapkv"));
  for (absl::string_view name : names) options.policies.emplace_back(name);
  KVSIM_RETURN_IF_ERROR(ParseQualityBudgets(absl::GetFlag(FLAGS_budgets), &options));
  options.top_k = absl::GetFlag(FLAGS_top_k);
  options.seed = absl::GetFlag(FLAGS_seed);
  const int64_t max_samples = absl::GetFlag(FLAGS_max_samples);
  if (max_samples < 0) return absl::InvalidArgumentError("--max_samples must be >= 0");
  const int64_t attention_mib = absl::GetFlag(FLAGS_attention_mib);
  if (attention_mib < 1 || attention_mib > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat("--attention_mib=", attention_mib, ": must be in [1, 2^30]"));
  }
  options.max_attention_bytes = attention_mib << 20;
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  KVSIM_ASSIGN_OR_RETURN(auto reader, AttentionTraceReader::Open(trace));
  KVSIM_ASSIGN_OR_RETURN(auto evaluator, QualityEvaluator::Create(reader->header(), options));
  int64_t count = reader->num_samples();
  if (max_samples > 0) count = std::min(count, max_samples);
  for (int64_t s = 0; s < count; ++s) {
    KVSIM_ASSIGN_OR_RETURN(AttentionSample sample, reader->ReadSample(s));
    KVSIM_RETURN_IF_ERROR(evaluator->AddSample(sample));
  }
  const QualityResults results = evaluator->Finish();
  if (results.num_decode_steps == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace, ": the ", count, " sample(s) evaluated have no decode steps: nothing to measure"));
  }
  const std::string dir = absl::GetFlag(FLAGS_out);
  if (!dir.empty()) KVSIM_RETURN_IF_ERROR(WriteQualityReports(results, dir));
  out << (absl::GetFlag(FLAGS_json) ? QualityJson(results) : FormatQualityTable(results));
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    quality,
    {
        .name = "quality",
        .summary = "attention-mass recall and output error of token-level KV policies over budgets",
        .usage = "kvsim quality --trace=T.kvat --policies=a,b --budgets=64,256,0.25 [--threads=0] [--out=DIR] [--json]",
        .details =
            "Replays every decode step of an attention trace (tools/record_attention.py, or\n"
            "'kvsim synth_attention'): recomputes each query's full attention row from the stored queries and\n"
            "keys, asks each policy which tokens it keeps at each budget, and reports attention-mass recall,\n"
            "relative output error ||o - o'||/||o|| and top-k overlap (mean, p10 tail, worst), tokens read,\n"
            "per-layer and per-head means, and areas under the curves relative to oracle_select.\n"
            "Policies: {token_policies};\n"
            "wrappers: {token_policy_wrappers} (adakv+POLICY for score policies; kivi alone or as kivi4+POLICY);\n"
            "with parameters: {token_policies_with_params} (kvp:model=FILE, learned by 'kvsim train').\n"
            "Budgets: tokens per KV head (integers) or fractions of the prompt (0.25 or 25%).\n"
            "--threads: policies x budgets are evaluated in parallel (0 = all cores); results do not depend on it.\n"
            "--out=DIR writes summary.csv, per_layer.csv, per_head.csv, areas.csv, results.json, curves.svg.",
        .flags = {"trace", "policies", "budgets", "top_k", "max_samples", "attention_mib", "threads", "out", "json",
                  "seed"},
        .flag_aliases = {{"quality_top_k", "top_k"},
                         {"quality_max_samples", "max_samples"},
                         {"quality_attention_mib", "attention_mib"}},
        .run = RunQuality,
    });

}  // namespace kvsim
