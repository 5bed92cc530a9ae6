// File: cost_models/cost_model.h
//
// CostModel: how long one iteration of a replica's batch takes, and how long a tier transfer takes.
// Implementations (analytic roofline, calibrated tables) are pure and deterministic: the same shape always
// gives the same time. They are built from a resolved ExperimentConfig (config/experiment_config.h) and registered by
// name like policies.
//
// An iteration is a list of sequence pieces. A decode is {context_tokens = tokens already cached,
// new_tokens = 1}; a prefill chunk is {context_tokens = tokens before the chunk, new_tokens = chunk};
// the recompute of a missing block at position p (segment reuse) is {context_tokens = p,
// new_tokens = block tokens}. Attention of each piece covers its context plus itself (causal within it).
#ifndef KVSIM_COST_MODELS_COST_MODEL_H_
#define KVSIM_COST_MODELS_COST_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/kv_format.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "util/registry.h"

namespace kvsim {

// One sequence's work in an iteration.
struct SequenceWork {
  int64_t context_tokens = 0;  // tokens already in the KV cache that this piece attends to
  int64_t new_tokens = 0;      // tokens computed in this iteration (1 for a decode); > 0
  int32_t num_segments = 1;    // non-contiguous KV runs of the context (multi-segment attention); >= 1
  // The piece ends with a sampled token (a decode, the last chunk of a prompt): only these pay the LM
  // head. Set false for non-final prefill chunks; ignored (never samples) for recompute pieces.
  bool samples_token = true;
  // The piece restores the KV of tokens that were computed before (segment reuse, preemption by
  // recompute); costed as CostModelConfig.recompute_cost says.
  bool recompute = false;
  // Shared prefixes (unique vs total KV bytes): pieces of one batch with the same non-zero prefix_id
  // attend to the same first shared_prefix_tokens of their context. Decodes after the first of a group
  // read that KV from the L2 cache instead of HBM when it fits there (cost models charge them only
  // their own context's bytes). 0 = not shared.
  uint64_t prefix_id = 0;
  int64_t shared_prefix_tokens = 0;
  // The piece's KV is stored in this format instead of the config's (per-request KV configurations,
  // sim/serving/request_kv.h): its attention reads and writes KV at this format's bytes and dequantisation
  // cost. nullptr = the config's format. Not owned; must outlive the call. Only the roofline prices it
  // (`kvsim replay --kv_configs` refuses other cost models; sim/select/serving_kv.h).
  const KvFormat* kv_format = nullptr;
};

// Where an iteration's time goes (each term already summed over layers and rounded to ns);
// total_ns == the sum of the terms == IterationTimeNs of the same batch.
struct CostBreakdown {
  int64_t linear_ns = 0;     // QKV, O and MLP GEMMs (and K/V projections of recompute pieces)
  int64_t lm_head_ns = 0;    // LM head GEMM of the pieces that sample a token
  int64_t attention_ns = 0;  // prefill, decode and recompute attention, segment merges
  int64_t allreduce_ns = 0;  // tensor-parallel all-reduces
  int64_t overhead_ns = 0;   // CostModelConfig.iteration_overhead_ns
  int64_t other_ns = 0;      // what a model does not attribute to the terms above
  int64_t total_ns = 0;
};

// The shape of one iteration of one replica.
struct BatchShape {
  std::vector<SequenceWork> sequences;
};

// For each decode piece (new_tokens == 1) of `batch`, the context tokens whose KV an earlier decode of
// the same prefix group already read in this iteration and that stay in an L2 cache of `l2_bytes`
// (`kv_bytes_per_token` per layer); 0 for all other pieces. Empty when no piece has a prefix_id.
std::vector<int64_t> L2ResidentTokens(const BatchShape& batch, double kv_bytes_per_token, int64_t l2_bytes);

// Prices the iterations of a decode run (sim/serving/scheduler.h, "Decode runs"): its first batch, then
// the same batch with every piece's context one token longer per iteration. Made by
// CostModel::StartDecodeRun; the counts of the iterations it priced are in the model's Accuracy() once
// it is destroyed. Not thread-safe (one replica's scheduler owns it); must not outlive its model.
class DecodeRunPricer {
 public:
  virtual ~DecodeRunPricer() = default;
  // IterationTimeNs of iteration `step` >= 1 of the run, `batch`: the first batch with every piece's
  // context_tokens + step (the caller keeps it; a model that prices from the first batch alone may not
  // read it). The same value and the same counts as IterationTimeNs(batch).
  virtual absl::StatusOr<int64_t> IterationTimeNs(int64_t step, const BatchShape& batch) = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  // Name and, for tables, the table's path: recorded in results.
  virtual std::string Describe() const = 0;

  // Time of one iteration (all layers, all GPUs of the tensor-parallel group, plus the configured fixed
  // overhead). InvalidArgument for an empty batch or a piece with new_tokens <= 0.
  virtual absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const = 0;

  // Time to move `bytes` between the GPU and `tier`: latency + bytes / bandwidth.
  virtual int64_t TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const = 0;

  // TransferTimeNs of a transfer that is priced but not made (whether to reload or recompute a block, a
  // block's restore estimate): the same time, not counted in Accuracy(). The default (a model that counts
  // nothing) is TransferTimeNs.
  virtual int64_t EstimateTransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const {
    return TransferTimeNs(bytes, tier);
  }

  // The terms of IterationTimeNs(batch), for reports. Errors as IterationTimeNs. The default puts the
  // whole time in other_ns; models that know their terms override it.
  virtual absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const;

  // IterationBreakdown of a batch that is priced but not run (a restore estimate, a probe of the adaptive
  // chunk size, the TTFT decomposition's chunk alone): the same terms, not counted in Accuracy(), whose
  // kernel time and extrapolated share are those of the iterations that ran. The default (a model that
  // counts nothing) is IterationBreakdown.
  virtual absl::StatusOr<CostBreakdown> EstimateBreakdown(const BatchShape& batch) const;

  // Time to recompute the KV of `num_tokens` tokens at positions [position, position + num_tokens) when
  // run alone: IterationTimeNs of a one-piece batch {context_tokens = position, new_tokens = num_tokens,
  // recompute = true}, without the fixed per-iteration overhead, as an estimate (EstimateBreakdown). For
  // restore decisions (reload or recompute). REQUIRES: position >= 0, num_tokens > 0 (InvalidArgument
  // otherwise).
  virtual absl::StatusOr<int64_t> RecomputeTimeNs(int64_t position, int64_t num_tokens) const;

  // The pricer of a decode run whose first iteration is `first` (every piece a decode: new_tokens 1, not a
  // recompute). The default prices every iteration with IterationTimeNs; a model whose time for such a
  // batch is a function of a few sums (the fitted model) prices an iteration in O(1) instead.
  virtual std::unique_ptr<DecodeRunPricer> StartDecodeRun(const BatchShape& first) const;

  // How far to trust the model's kernel times, as recorded in the run's results: a table's held-out
  // error (cost_models/validation.h, held-out split, over all kernel kinds) and the kernel predictions
  // so far; the default (an analytic model) is uncalibrated. Thread-safe.
  virtual proto::CostModelAccuracy Accuracy() const { return {}; }
};

using CostModelFactory =
    std::function<absl::StatusOr<std::unique_ptr<CostModel>>(const proto::ExperimentConfig& config)>;

// The registry of cost models by name ("roofline", "table"; util/registry.h).
Registry<CostModelFactory>& CostModelRegistry();

// The cost model that config.cost_model().kind() names, built from the resolved config.
absl::StatusOr<std::unique_ptr<CostModel>> CreateCostModel(const proto::ExperimentConfig& config);

}  // namespace kvsim

#define KVSIM_REGISTER_COST_MODEL(name, id, factory) KVSIM_REGISTER(::kvsim::CostModelRegistry(), name, factory)

#endif  // KVSIM_COST_MODELS_COST_MODEL_H_
