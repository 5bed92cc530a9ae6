// File: sim/select/synthetic_outcomes.h
//
// A SYNTHETIC outcome table with a planted structure, for tests and the demo of `kvsim select` until the
// closed-loop model evaluation gives measured correctness. Its correctness is invented; its latency and
// peak memory come from the cost model (FillCostsFromModel) for each prompt's lengths.
//
// Per prompt (seeded mt19937_64, hand-written inverse-transform sampling):
//   input_tokens       log-uniform in [256, 32768]
//   output_tokens      log-uniform in [16, 1024]
//   task_type          uniform in {0 maths, 1 science, 2 commonsense, 3 reading comprehension}
//   attention_entropy  uniform in [0, 1]: how spread the prompt's attention is (observed)
//   difficulty         uniform in [0, 1]: hidden, never a feature (irreducible error)
// P(correct | prompt, c) = sigmoid(2.5 - 3 difficulty - damage(c)), with
//   quantisation at b bits     damage = s_q(task) x {8: 0, 4: 0.15, 3: 0.6, 2: 1.8}[b],
//                              times 0.6 with dense-and-sparse outliers; s_q = 2 for maths, else 1
//   token policy at budget B   kept = min(1, B / input_tokens);
//                              damage = s_e(task) x k x attention_entropy x (1 - kept), k = 5 for kEvict
//                              policies and 3 for selection (rocketkv, quest, ...); s_e = 1.5 for reading
//                              comprehension, else 1
//   neither                    damage = 0
// correct = 1[u < P] with ONE uniform u per prompt, shared by its configurations: a prompt answered
// correctly under a more damaging configuration is answered under every less damaging one, as with a real
// model (independent draws per configuration would hand the oracle successes by luck alone).
// Features written: input_tokens, output_tokens, task_type, attention_entropy (the same for all of a
// prompt's rows).
//
// So compression hurts maths prompts under low-bit quantisation and diffuse-attention prompts under
// eviction, while it saves latency and memory on long prompts: no static configuration is best for all.
#ifndef KVSIM_SIM_SELECT_SYNTHETIC_OUTCOMES_H_
#define KVSIM_SIM_SELECT_SYNTHETIC_OUTCOMES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"
#include "sim/select/outcome_table.h"

namespace kvsim {

struct SyntheticOutcomeOptions {
  int num_prompts = 400;
  uint64_t seed = 1;
};

// The planted P(correct) of candidate `c` for one prompt, as documented above.
double PlantedCorrectProbability(const proto::SelectCandidate& candidate, int64_t input_tokens, int task_type,
                                 double attention_entropy, double difficulty);

// InvalidArgument for num_prompts < 1; cost-model errors as FillCostsFromModel. `config` resolved.
absl::StatusOr<OutcomeTable> MakeSyntheticOutcomeTable(const proto::SelectCandidateSet& set,
                                                       const proto::ExperimentConfig& config,
                                                       const SyntheticOutcomeOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_SYNTHETIC_OUTCOMES_H_
