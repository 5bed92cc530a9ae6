// File: cost_models/cost_model.h
//
// CostModel: how long one iteration of a replica's batch takes, and how long a tier transfer takes.
// Implementations (analytic roofline, calibrated tables) are pure and deterministic: the same shape always
// gives the same time. They are built from a resolved ExperimentConfig (sim/config.h) and registered by
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
#include "proto/config.pb.h"

namespace kvsim {

// One sequence's work in an iteration.
struct SequenceWork {
  int64_t context_tokens = 0;  // tokens already in the KV cache that this piece attends to
  int64_t new_tokens = 0;      // tokens computed in this iteration (1 for a decode); > 0
  int32_t num_segments = 1;    // non-contiguous KV runs of the context (multi-segment attention); >= 1
};

// The shape of one iteration of one replica.
struct BatchShape {
  std::vector<SequenceWork> sequences;
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
};

using CostModelFactory =
    std::function<absl::StatusOr<std::unique_ptr<CostModel>>(const proto::ExperimentConfig& config)>;

// Registers a factory under `name` ("roofline", "table"). Returns true.
bool RegisterCostModel(absl::string_view name, CostModelFactory factory);

// The cost model that config.cost_model().kind() names, built from the resolved config.
absl::StatusOr<std::unique_ptr<CostModel>> CreateCostModel(const proto::ExperimentConfig& config);

}  // namespace kvsim

#define KVSIM_REGISTER_COST_MODEL(name, id, factory) \
  static const bool kvsim_cost_model_registered_##id = ::kvsim::RegisterCostModel(name, factory)

#endif  // KVSIM_COST_MODELS_COST_MODEL_H_
