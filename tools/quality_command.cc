// `kvsim quality`: offline fidelity of token-level KV policies on an attention trace, over budgets.
// Thin: flags and output only; the work is in sim/quality/quality_run.h and quality_report.h.
#include <ostream>
#include <vector>

#include "absl/flags/flag.h"
#include "sim/quality/quality_evaluator.h"
#include "sim/quality/quality_report.h"
#include "sim/quality/quality_run.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/progress.h"
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

absl::Status RunQuality(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --trace=FILE)");
  const std::string trace = absl::GetFlag(FLAGS_trace);
  if (trace.empty()) return absl::InvalidArgumentError("--trace=FILE (an attention trace, .kvat) is required");
  QualityOptions options;
  KVSIM_ASSIGN_OR_RETURN(options.policies, ParseQualityPolicies(absl::GetFlag(FLAGS_policies)));
  KVSIM_RETURN_IF_ERROR(ParseQualityBudgets(absl::GetFlag(FLAGS_budgets), &options));
  options.top_k = absl::GetFlag(FLAGS_top_k);
  options.seed = absl::GetFlag(FLAGS_seed);
  KVSIM_RETURN_IF_ERROR(SetQualityAttentionMib(absl::GetFlag(FLAGS_attention_mib), &options));
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  // Progress on a terminal only (util/progress.h).
  Progress progress("quality", 0, "samples", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  KVSIM_ASSIGN_OR_RETURN(const QualityResults results,
                         EvaluateQualityTrace(trace, options, absl::GetFlag(FLAGS_max_samples), progress.Callback()));
  progress.Finish();
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
                  "seed", "quiet"},
        .flag_aliases = {{"quality_top_k", "top_k"},
                         {"quality_max_samples", "max_samples"},
                         {"quality_attention_mib", "attention_mib"}},
        .run = RunQuality,
    });

}  // namespace kvsim
