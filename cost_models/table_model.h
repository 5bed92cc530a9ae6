// File: cost_models/table_model.h
//
// TableCostModel ("table"): iteration times from a calibration table (cost_model.table_path), kernel by
// kernel, composed exactly like the roofline (roofline.h) so that the two differ only in where each
// kernel's time comes from:
//
//   iteration = iteration_overhead_ns
//             + layers x [ QKV + O + gate/up + down GEMMs over N tokens, K/V projection over R tokens
//                        + decode attention + sum of prefill/recompute attention pieces
//                        + 2 x all-reduce(N x hidden x 2 bytes)            if tensor_parallel_size > 1 ]
//             + LM head GEMM over the pieces that sample
//
// Decode attention: the B decodes of an iteration run as one kernel of batch B. Instead of Vidur's mean
// context, each decode is charged T(B, its own context) / B, so a skewed batch (one long request among
// short ones) costs what its parts cost; this is exact when T is linear in the summed context at fixed B.
// Prefill and recompute pieces are charged T(batch 1, chunk, context) each.
// Shared prefixes (SequenceWork.prefix_id): a decode whose shared prefix an earlier decode of the batch
// already read, and that fits in L2, is charged as if its context lacked those tokens (unique, not
// total, KV bytes; see L2ResidentTokens in cost_model.h).
// Multi-segment attention: a piece with k > 1 segments uses a series measured with k segments if the
// table has one; else the log-log interpolation between the series of the nearest measured power-of-two
// segment counts below and above k; else the single-segment attention plus a segment merge of k states
// (for every decode of the batch, or every query token of a chunk).
// Recompute (CostModelConfig.recompute_cost): FULL_LAYERS runs the piece through every kernel;
// KV_PROJECTION runs only the K/V projection GEMM (kind kv_projection, or any GEMM series of that shape).
// Compressed KV (cost_model.kv_quant_bits or model.kv_dtype) selects the attention series of that format;
// missing ones borrow bf16 x the roofline ratio (see kernel_table.h), which keeps the dequantisation
// turn to compute-bound at 4 bits and below.
//
// Kernels predicted outside the table's range, or with no series, are counted; Accuracy() reports the
// counts with the table's held-out error (cost_models/validation.h, held-out split, computed at
// creation), printed by the replay next to its results ("cost model error"), and, per kernel kind this
// run used, the share of predicted time it contributed with that kind's held-out error, their
// time-weighted sum, and the share of predicted time that was extrapolated (or had no series).
// Thread-safe (counters are atomic).
//
// Example:
//   config.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_TABLE);
//   config.mutable_cost_model()->set_table_path("cost_models/tables/h200_llama-3.1-8b.csv");
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model, CreateCostModel(config));
#ifndef KVSIM_COST_MODELS_TABLE_MODEL_H_
#define KVSIM_COST_MODELS_TABLE_MODEL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cost_models/cost_model.h"
#include "cost_models/kernel_table.h"
#include "cost_models/roofline.h"
#include "proto/calibration.pb.h"
#include "proto/config.pb.h"

namespace kvsim {

class TableCostModel final : public CostModel {
 public:
  // Reads config.cost_model().table_path(). Errors: the table's (file:line), or the config's.
  static absl::StatusOr<std::unique_ptr<TableCostModel>> Create(const proto::ExperimentConfig& config);
  // From an already loaded table; `table_name` is what Describe() reports as its path.
  static absl::StatusOr<std::unique_ptr<TableCostModel>> FromTable(const proto::ExperimentConfig& config,
                                                                   const proto::CalibrationTable& table,
                                                                   const std::string& table_name);

  std::string Describe() const override;
  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override;
  absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const override;
  absl::StatusOr<CostBreakdown> EstimateBreakdown(const BatchShape& batch) const override;
  int64_t TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const override;
  int64_t EstimateTransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const override;

  // Kernel predictions so far, and how many were extrapolated or had no measured series.
  int64_t num_predictions() const { return predictions_.load(std::memory_order_relaxed); }
  int64_t num_extrapolated() const { return extrapolated_.load(std::memory_order_relaxed); }
  int64_t num_unmeasured() const { return unmeasured_.load(std::memory_order_relaxed); }
  // One line, empty when nothing was extrapolated.
  // Held-out error of the table (computed once, at creation) and the counters above.
  proto::CostModelAccuracy Accuracy() const override;

  const KernelTable& table() const { return table_; }

 private:
  TableCostModel(const RooflineParams& params, KernelTable table, std::string description)
      : p_(params), table_(std::move(table)), description_(std::move(description)) {}

  // Predicted seconds of one iteration by kernel kind (indexed by proto::KernelKind), as charged: each
  // kernel's time x how often the composition charges it (layers, 1 / decodes, interpolation weight).
  static constexpr int kNumKinds = 9;
  // With the kernel predictions, added to the counters behind Accuracy() by Commit (an iteration that
  // runs) or dropped (an estimate).
  struct Tally {
    std::array<double, kNumKinds> seconds{};
    std::array<double, kNumKinds> extrapolated{};
    int64_t predictions = 0;
    int64_t extrapolated_predictions = 0;
    int64_t unmeasured_predictions = 0;
  };
  void Commit(const Tally& tally) const;
  // TransferTimeNs, its prediction (a measured host copy) in `tally`.
  int64_t Transfer(int64_t bytes, const proto::TierConfig& tier, Tally* tally) const;
  // IterationBreakdown, its predictions in `tally`.
  absl::StatusOr<CostBreakdown> Breakdown(const BatchShape& batch, Tally* tally) const;

  // Seconds, counted in `tally` (the prediction, and `weight` x seconds as kernel time).
  double Kernel(const KernelQuery& q, Tally* tally, double weight) const;
  double Gemm(proto::KernelKind kind, int64_t tokens, int64_t out_features, int64_t in_features, Tally* tally,
              double weight) const;
  double Attention(proto::KernelKind kind, int64_t batch, const SequenceWork& piece, Tally* tally, double weight) const;
  double DecodeAttention(const BatchShape& batch, bool skip_recompute, Tally* tally, double weight) const;

  RooflineParams p_;
  KernelTable table_;
  std::string description_;
  std::string weight_dtype_;
  proto::CostModelAccuracy heldout_;                                  // prediction counters unset
  std::map<std::string, std::pair<double, double>> heldout_by_kind_;  // kind name -> held-out median, p95
  std::map<std::string, int64_t> heldout_points_by_kind_;
  mutable std::array<std::atomic<int64_t>, kNumKinds> time_ns_{};
  mutable std::array<std::atomic<int64_t>, kNumKinds> extrapolated_ns_{};
  mutable std::atomic<int64_t> predictions_{0};
  mutable std::atomic<int64_t> extrapolated_{0};
  mutable std::atomic<int64_t> unmeasured_{0};
};

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_TABLE_MODEL_H_
