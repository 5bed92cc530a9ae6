// `kvsim eval`: closed-loop evaluation of token-level KV policies with a model in the loop.
// Thin: parsing and output only; the work is in sim/eval/closed_loop_eval and sim/eval/eval_report.
#include <unistd.h>

#include <cstdio>
#include <ostream>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/eval/closed_loop_eval.h"
#include "sim/eval/eval_report.h"
#include "sim/eval/eval_tasks.h"
#include "sim/eval/llama_model.h"
#include "sim/quality/quality_evaluator.h"
#include "sim/quality/quality_run.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "tools/model_flags.h"
#include "util/progress.h"
#include "util/status_macros.h"

// Shared with `kvsim quality` (tools/quality_command.cc).
ABSL_DECLARE_FLAG(std::string, policies);
ABSL_DECLARE_FLAG(std::string, budgets);

namespace kvsim {

namespace {

absl::Status RunEval(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --model and --tasks)");
  const std::string model_dir = absl::GetFlag(FLAGS_model), task_file = absl::GetFlag(FLAGS_tasks);
  if (model_dir.empty()) return absl::InvalidArgumentError("--model=DIR (a Hugging Face model folder) is required");
  if (task_file.empty()) return absl::InvalidArgumentError("--tasks=FILE (a task JSONL) is required");
  const std::string policies = absl::GetFlag(FLAGS_policies);
  if (absl::StripAsciiWhitespace(policies).empty()) {
    return absl::InvalidArgumentError("--policies is required, e.g. --policies=full,streaming_llm,snapkv");
  }
  EvalOptions options;
  for (absl::string_view name : absl::StrSplit(policies, ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("--policies: empty entry in '", policies, "'"));
    options.policies.emplace_back(name);
  }
  QualityOptions budgets;
  KVSIM_RETURN_IF_ERROR(ParseQualityBudgets(absl::GetFlag(FLAGS_budgets), &budgets));
  options.budget_tokens = budgets.budget_tokens;
  options.budget_ratios = budgets.budget_ratios;
  options.seed = absl::GetFlag(FLAGS_seed);
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  KVSIM_ASSIGN_OR_RETURN(options.query_window, QueryWindowFromFlag());
  KVSIM_ASSIGN_OR_RETURN(std::vector<EvalTask> tasks, TasksFromFlags());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model, LoadLlamaModel(model_dir));
  // Progress on a terminal only (util/progress.h); the evaluator calls it under its own lock.
  Progress progress("eval", static_cast<int64_t>(tasks.size()), "tasks",
                    Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  options.progress = [&progress](int64_t done, int64_t /*total*/) { progress.Update(done); };
  KVSIM_ASSIGN_OR_RETURN(EvalResults results, RunClosedLoopEval(*model, tasks, options));
  progress.Finish();
  const std::string dir = absl::GetFlag(FLAGS_out);
  if (!dir.empty()) KVSIM_RETURN_IF_ERROR(WriteEvalReports(results, tasks, dir));
  out << (absl::GetFlag(FLAGS_json) ? EvalJson(results) : FormatEvalTable(results));
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    eval,
    {
        .name = "eval",
        .summary = "closed-loop task accuracy and perplexity of token-level KV policies with a model in the loop",
        .usage = "kvsim eval --model=DIR --tasks=FILE --policies=full,streaming_llm --budgets=64,256 [--out=DIR] "
                 "[--threads=N] [--max_tasks=N] [--query_window=64] [--json]",
        .details =
            "Runs a Llama-architecture model (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM; config.json\n"
            "and safetensors in fp32/fp16/bf16) on CPU over every task of the JSONL: the prompt is prefilled with\n"
            "full attention, then each policy controls the KV cache at every decode step at each budget (tokens\n"
            "per KV head, or fractions of the prompt). Exact-match tasks are scored on the greedy generation;\n"
            "'perplexity' tasks by the teacher-forced mean negative log-likelihood of their answer tokens.\n"
            "Every registered token policy runs except oracle_evict (it needs attention of future steps).\n"
            "--query_window: the last N prompt queries the policies may read (SnapKV's window, Expected\n"
            "Attention's statistics; 0 = all), 64 by default as in recorded traces.\n"
            "--policies as for 'kvsim quality', except that oracle_select is not added (list it to evaluate it).\n"
            "--threads: runs (task x policy x budget) in parallel (0 = all cores); results do not depend on it.\n"
            "--out=DIR writes results.csv, tasks.csv, results.json, accuracy.svg and timing.csv (wall times).",
        .flags = {"model", "tasks", "policies", "budgets", "threads", "max_tasks", "query_window", "out", "json",
                  "seed", "quiet"},
        .run = RunEval,
    });

}  // namespace kvsim
