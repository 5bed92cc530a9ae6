// File: sim/eval/closed_loop_eval.h
//
// RunClosedLoopEval: every (policy, budget) on every task of a task file (sim/eval/eval_tasks.h), with a
// model in the loop (sim/eval/llama_session.h). For each task the prompt is prefilled once with full
// attention; each (policy, budget) then continues from a copy of that cache with the policy in control:
//   exact-match tasks  greedy generation of up to len(answer_ids) tokens (enough to decide the match; stops
//                      early at an EOS id of the config), scored by ExactMatch. The first token comes from
//                      the prefill and is therefore the same for every policy.
//   perplexity tasks   the answer tokens fed one by one as decode steps (teacher forcing); the score is the
//                      mean negative log-likelihood per answer token (the first from the prefill's logits).
// Policy kind "full" ignores its budget: it runs once per task and is reported at every budget (the
// first policy of kind full given; another full spec gives the same results).
// Budgets are tokens per KV head, or ratios of each prompt's length (B = max(1, round(r * prompt_len))).
//
// Aggregates (EvalGroup) per (policy, budget, task family, context length): tasks, exact-match accuracy
// (or, for perplexity, the token-weighted mean NLL and its exp), mean tokens the attention read per
// (decode step, layer, query head), mean resolved budget; and per (policy, budget) over all exact-match
// tasks (family "all", context 0). needle_covered counts tasks with answer_position whose needle lies in
// the last `budget` tokens of the prompt (a recency window of the budget would still see it).
//
// Threads: the (task, policy x budget) runs are spread over options.num_threads (util/parallel.h), task-major,
// so workers share a task's prefill (computed once, by the first run that needs it, freed after its last);
// every prefill and run is single-threaded, and results are gathered in a fixed order, so they are
// identical for any thread count.
// Wall-clock times (EvalResults::timing) are the only figures that vary between runs.
//
// Example:
//   EvalOptions options;
//   options.policies = {"full", "streaming_llm"};
//   options.budget_tokens = {64, 256};
//   KVSIM_ASSIGN_OR_RETURN(EvalResults results, RunClosedLoopEval(*model, tasks, options));
#ifndef KVSIM_SIM_EVAL_CLOSED_LOOP_EVAL_H_
#define KVSIM_SIM_EVAL_CLOSED_LOOP_EVAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/eval/eval_tasks.h"
#include "sim/eval/llama_model.h"

namespace kvsim {

struct EvalOptions {
  std::vector<std::string> policies;   // registered token policy specs, each once
  std::vector<int64_t> budget_tokens;  // each >= 1
  std::vector<double> budget_ratios;   // each in (0, 1]
  uint64_t seed = 0;                   // for randomised policies
  int num_threads = 1;                 // 0 = every core; at most kMaxThreads
  int64_t query_window = 64;           // prompt queries the policies may read (the last N; 0 = all)
  // Called after each task with (tasks done, tasks total), from any worker thread, one call at a time.
  std::function<void(int64_t, int64_t)> progress;
};

// One (task, policy, budget).
struct EvalRun {
  int64_t task = 0;   // index into the tasks
  int32_t point = 0;  // index into EvalResults::points
  int64_t budget_tokens = 0;
  bool correct = false;            // exact-match tasks
  double nll_sum = 0;              // perplexity tasks: summed over answer tokens
  int64_t scored_tokens = 0;       // perplexity: answer tokens; exact match: tokens generated
  std::vector<int32_t> generated;  // exact-match tasks
  double mean_tokens_read = 0;     // 0 when no decode step ran
  int64_t decode_steps = 0;
  double seconds = 0;  // wall time of this run after the shared prefill (varies)
};

struct EvalPoint {
  std::string policy;  // as named by the policy (Name())
  std::string kind;    // full, evict, select, quantize
  bool is_ratio = false;
  double budget_value = 0;
};

struct EvalGroup {
  int32_t point = 0;
  std::string task;            // family, or "all"
  int64_t context_tokens = 0;  // 0 for "all"
  int64_t num_tasks = 0;
  int64_t num_correct = 0;
  double accuracy = 0;     // num_correct / num_tasks (exact-match groups)
  int64_t nll_tokens = 0;  // perplexity groups
  double mean_nll = 0, perplexity = 0;
  double mean_tokens_read = 0;  // over runs with decode steps, weighted by their steps
  double mean_budget_tokens = 0;
  int64_t needle_tasks = 0, needle_covered = 0;
};

struct EvalResults {
  std::string model;  // source folder
  int64_t num_tasks = 0;
  uint64_t seed = 0;
  int64_t query_window = 0;
  std::vector<EvalPoint> points;        // policy-major, then token budgets ascending, then ratios ascending
  std::vector<EvalGroup> groups;        // per point: families (sorted) x context lengths (ascending), then "all"
  std::vector<EvalRun> runs;            // task-major, then point
  std::vector<double> prefill_seconds;  // per task (varies)
};

// InvalidArgument for no policies or budgets, a duplicate policy, an unknown policy, a policy whose
// CheckTrace refuses the model's layout (CheckPolicyFitsModel: a KVP model trained for another model,
// naming both), a bad budget or thread count, a task whose ids fall outside the vocabulary (naming its file
// and line); FailedPrecondition for a policy that cannot run closed-loop (naming it).
absl::StatusOr<EvalResults> RunClosedLoopEval(const LlamaModel& model, const std::vector<EvalTask>& tasks,
                                              const EvalOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_CLOSED_LOOP_EVAL_H_
