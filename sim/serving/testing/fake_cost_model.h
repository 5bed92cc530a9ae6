// File: sim/serving/testing/fake_cost_model.h
//
// FakeCostModel: a cost model whose times tests compute by hand.
//   iteration_ns = fixed_ns + ns_per_new_token x sum(new_tokens) + ns_per_context_token x sum(context_tokens)
//   transfer_ns  = tier.latency_ns + ns_per_byte x bytes
//   recompute_ns = iteration_ns of the piece alone - fixed_ns
// Example: FakeCostModel cost({.fixed_ns = 1000, .ns_per_new_token = 10});
#ifndef KVSIM_SIM_SERVING_TESTING_FAKE_COST_MODEL_H_
#define KVSIM_SIM_SERVING_TESTING_FAKE_COST_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cost_models/cost_model.h"

namespace kvsim {

struct FakeCosts {
  int64_t fixed_ns = 0;
  int64_t ns_per_new_token = 0;
  int64_t ns_per_context_token = 0;
  int64_t ns_per_byte = 0;
};

class FakeCostModel final : public CostModel {
 public:
  explicit FakeCostModel(FakeCosts costs) : costs_(costs) {}

  std::string Describe() const override { return "fake"; }

  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override {
    if (batch.sequences.empty()) return absl::InvalidArgumentError("empty batch");
    int64_t ns = costs_.fixed_ns;
    for (const SequenceWork& s : batch.sequences) {
      if (s.new_tokens <= 0) return absl::InvalidArgumentError("new_tokens <= 0");
      ns += costs_.ns_per_new_token * s.new_tokens + costs_.ns_per_context_token * s.context_tokens;
    }
    return ns;
  }

  // The fixed part is the per-iteration overhead (so RecomputeTimeNs excludes it).
  absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const override {
    absl::StatusOr<int64_t> total = IterationTimeNs(batch);
    if (!total.ok()) return total.status();
    CostBreakdown breakdown;
    breakdown.overhead_ns = costs_.fixed_ns;
    breakdown.other_ns = *total - costs_.fixed_ns;
    breakdown.total_ns = *total;
    return breakdown;
  }

  int64_t TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const override {
    return tier.latency_ns() + costs_.ns_per_byte * bytes;
  }

 private:
  FakeCosts costs_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_TESTING_FAKE_COST_MODEL_H_
