// File: sim/train/kvp_trainer.h
//
// Trains KVP's rankers (arXiv 2602.10238; policies/token/kvp_model.h) from attention traces: one agent per
// kept (layer, KV head), each on its own examples, independently.
//
// Data (BuildKvpTrainData): every sample of every trace gives one example per kept head: the cache after
// prefill (n = prompt_len tokens; their keys and values are copied, the queries dropped) and the target
// I (kvp_target.h) over the next f = min(future_queries, decode steps) queries. A sample without decode
// steps is an error. The last round(holdout_fraction x samples) samples (in trace order) are held out:
// never trained on, scored at the end. Memory: the kept heads' prompt keys and values of every sample,
// plus one sample's tensors while it is read.
//
// Training (TrainKvp): per agent, `steps` AdamW steps (cosine schedule); each takes the next example of a
// seeded shuffle (reshuffled every pass), optionally a seeded subset of max_tokens_per_step of its tokens,
// scores them, and ascends the REINFORCE leave-one-out estimate of the all-budget reward's gradient
// (kvp_objective.h) or, for the soft-sort baseline, descends its cross-entropy. Inputs are standardised
// with the agent's training tokens' mean and standard deviation. The training curve records the mean
// normalised reward of the agent's greedy ranking (scores descending) on its step examples.
//
// Threads: agents are trained in parallel (util/parallel.h), each with its own generator seeded from
// (seed, layer, KV head), so the model is byte-identical for a seed whatever the thread count.
//
// Example:
//   KvpTrainOptions options;  // the paper's defaults; KvpSmallModelOptions() for a quick one
//   KVSIM_ASSIGN_OR_RETURN(KvpTrainData data, BuildKvpTrainData({"a.kvat"}, options));
//   KVSIM_ASSIGN_OR_RETURN(proto::KvpModel model, TrainKvp(data, options));
//   KVSIM_RETURN_IF_ERROR(SaveKvpModel("m.kvpm", model));
#ifndef KVSIM_SIM_TRAIN_KVP_TRAINER_H_
#define KVSIM_SIM_TRAIN_KVP_TRAINER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/token/kvp_model.h"
#include "proto/kvp_model.pb.h"
#include "sim/train/adam.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

enum class KvpObjective { kReinforce, kSoftSort };

struct KvpTrainOptions {
  // The paper's agent and optimiser: 2 hidden layers of 256, AdamW 5e-5 cosine to 1e-6, 4,000 steps.
  int hidden_units = 256;
  int future_queries = 64;   // f (clamped to each sample's decode steps)
  int samples_per_step = 8;  // K permutations (>= 2)
  int64_t steps = 4000;      // per agent
  int epochs = 0;            // > 0: steps = epochs x the agent's training examples instead
  AdamOptions adam;
  KvpObjective objective = KvpObjective::kReinforce;
  double softsort_temperature = 0.1;
  int max_tokens_per_step = 0;  // 0 = every token of the example
  double holdout_fraction = 0;  // in [0, 1)
  uint64_t seed = 1;
  int num_threads = 1;    // 0 = every core
  int curve_points = 20;  // training-curve points per agent
  // Bound on the examples held in memory (prompt keys, values and targets of every kept head and sample):
  // BuildKvpTrainData refuses traces that need more (ResourceExhausted naming the sample).
  int64_t max_data_bytes = int64_t{16} << 30;
};

// The documented small-model setting (CPU minutes, not hours): 32 hidden units, AdamW 3e-3 cosine to
// 1e-4, 600 steps, K = 8, at most 1,024 tokens per step.
KvpTrainOptions KvpSmallModelOptions();

// OK or InvalidArgument naming the option.
absl::Status ValidateKvpTrainOptions(const KvpTrainOptions& options);

struct KvpExample {
  int64_t sample = 0;              // index over all samples given
  int64_t n = 0;                   // cached tokens
  std::vector<float> keys;         // n x head_dim
  std::vector<float> values;       // n x head_dim
  std::vector<double> importance;  // n
};

struct KvpTrainData {
  AttentionTraceHeader header;
  std::vector<std::string> traces;
  int64_t train_samples = 0, heldout_samples = 0;
  int64_t bytes = 0;  // held by the examples
  // Per kept head, layer-major (header.kept_layers x header.kept_kv_heads).
  std::vector<std::vector<KvpExample>> train, heldout;
};

// Reads the traces (the same layout in each: model, layers, heads, head_dim, kept layers and heads;
// InvalidArgument naming the file otherwise) and builds every head's examples, within max_data_bytes.
absl::StatusOr<KvpTrainData> BuildKvpTrainData(const std::vector<std::string>& paths, const KvpTrainOptions& options);
// The same from samples in memory (`name` stands for the file in messages).
absl::StatusOr<KvpTrainData> BuildKvpTrainData(const AttentionTraceHeader& header,
                                               const std::vector<AttentionSample>& samples, const std::string& name,
                                               const KvpTrainOptions& options);

// Called after each agent finishes, from the worker that trained it (serialised by the trainer).
using KvpProgress = std::function<void(int agents_done, int agents_total)>;

// Trains every agent; the model message holds the layout, hyperparameters, seed, curves and weights.
absl::StatusOr<proto::KvpModel> TrainKvp(const KvpTrainData& data, const KvpTrainOptions& options,
                                         const KvpProgress& progress = {});

// The mean normalised all-budget reward of `agent`'s greedy ranking over `examples` (NaN if empty).
double KvpMeanReward(const KvpMlp& agent, int head_dim, const std::vector<KvpExample>& examples);

}  // namespace kvsim

#endif  // KVSIM_SIM_TRAIN_KVP_TRAINER_H_
