// File: sim/select/closed_loop_outcomes.h
//
// The project's own outcome table (sim/select/outcome_table.h) with MEASURED correctness: every candidate
// configuration (proto/select.proto) runs on every exact-match task of a task file through the closed-loop
// evaluation (sim/eval/closed_loop_eval.h: a model in the loop, the configuration's token policy or
// quantiser controlling its KV cache at every decode step), and a cell's `correct` is that run's exact
// match. Latency and peak memory are the cost model's (FillCostsFromModel) for the prompt's lengths on a
// chosen model and GPU: the model in the loop decides correctness only.
//
// Candidate -> closed-loop policy (ClosedLoopPolicySpec):
//   neither quant nor token        "full" (kv_dtype FP16/BF16 is not applied: the loop computes in float32)
//   quant, KIVI, b bits            "kivi<b>"
//   quant, KVQUANT, b bits         "kvquant<b>" (outlier_fraction 0) or "kvquant<b>-1pct" (0.01): KVQuant's
//                                  quantiser (policies/token/kvquant_policy.h: pre-rotary per-channel keys,
//                                  per-token values, a non-uniform codebook fitted on the prompt, the 1%
//                                  largest magnitudes exact); group_size is not applied (the cost model
//                                  charges it). Any other outlier share is refused.
//   token policy P                 "P" (with quant: the quantiser's name + "+P") at the budget CandidateBudgetTokens gives
//                                  for the prompt's length (ceil of a ratio), per prompt
// Refused (FailedPrecondition naming the candidate): a token policy that cannot run closed loop
// (CheckClosedLoopPolicy: oracle_evict), a KVQuant outlier share other than 0 and 0.01.
//
// Rows: one prompt per exact-match task, prompt_id = the task's id; perplexity tasks have no `correct`
// and are skipped (a file of perplexity tasks only is refused). Features (ClosedLoopFeatureNames):
//   input_tokens        prompt length
//   output_tokens       len(answer_ids): the tokens the closed loop generates to decide the match (and
//                       the decode length the cost model charges)
//   task_family         kTaskFamilies' index + 1 of the task's family, 0 for any other family
//   prefill_entropy     the prefill attention's spread, from the full-cache prefill's column sums
//                       (LlamaSession::column_sums: each key's attention summed over the prompt's queries):
//                       per (layer, KV head), the entropy of the column sums normalised to 1, divided by
//                       ln(prompt length) (in [0, 1]; 0 for a one-token prompt), averaged over layers and
//                       KV heads. The same for all of a prompt's rows.
//   prefill_mass_kept   the share of those column sums held by the candidate's budget's largest columns
//                       (per (layer, KV head), averaged; 1 without a token policy): how much of the
//                       prompt's attention a budget of B tokens could keep. Differs between the rows.
// Both prefill statistics cost one prefill per prompt, which the closed loop computes anyway.
//
// Deterministic: RunClosedLoopEval's results do not depend on the thread count, nor does the rest.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(OutcomeTable table, MakeClosedLoopOutcomeTable(*model, tasks, set, config, {}));
#ifndef KVSIM_SIM_SELECT_CLOSED_LOOP_OUTCOMES_H_
#define KVSIM_SIM_SELECT_CLOSED_LOOP_OUTCOMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"
#include "sim/eval/eval_tasks.h"
#include "sim/eval/llama_model.h"
#include "sim/select/outcome_table.h"

namespace kvsim {

// The task families of tools/make_tasks.py, in its order; task_family = index + 1 (0: other).
inline constexpr const char* kTaskFamilies[] = {"niah_single",       "niah_multikey", "niah_multivalue",
                                                "variable_tracking", "common_words",  "dialogue_recall"};

// input_tokens, output_tokens, task_family, prefill_entropy, prefill_mass_kept.
std::vector<std::string> ClosedLoopFeatureNames();

// The closed-loop policy spec of a candidate, as above. REQUIRES: `candidate` valid
// (ValidateSelectCandidates). FailedPrecondition "candidate '<name>': ..." when the closed loop cannot run it.
absl::StatusOr<std::string> ClosedLoopPolicySpec(const proto::SelectCandidate& candidate);

struct ClosedLoopOutcomeOptions {
  int num_threads = 1;       // as EvalOptions (0 = every core)
  uint64_t seed = 0;         // for randomised policies
  int64_t query_window = 64;  // as EvalOptions
};

// The table above, costs on `config` (resolved, roofline). Errors: a refused candidate (before any run),
// no exact-match task, and those of RunClosedLoopEval and FillCostsFromModel.
absl::StatusOr<OutcomeTable> MakeClosedLoopOutcomeTable(const LlamaModel& model, const std::vector<EvalTask>& tasks,
                                                        const proto::SelectCandidateSet& set,
                                                        const proto::ExperimentConfig& config,
                                                        const ClosedLoopOutcomeOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_CLOSED_LOOP_OUTCOMES_H_
