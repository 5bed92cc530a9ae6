// File: cost_models/fitted_model.h
//
// FittedCostModel ("fitted", cost_model.kind COST_MODEL_KIND_FITTED): iteration times from per-op
// efficiency curves fitted to measured kernel times (cost_models/cost_fit.h), whose parameters the device
// preset carries (DeviceSpec.fitted; formulas and units on the messages in proto/spec.proto, code in
// cost_models/fitted_kernels.h). Composed like the roofline and the table model:
//
//   iteration = iteration_overhead_ns (cost_model config) + fitted.iteration_overhead_ns
//             + layers x [ GEMM(QKV) + GEMM(O) + GEMM(gate+up) + GEMM(down)      over N tokens
//                        + GEMM(K/V projection)                                  over R recompute tokens
//                        + decode attention of the B decodes (one kernel)
//                        + prefill attention of the chunks and recompute pieces (one kernel)
//                        + element-wise ops (norms, RoPE, activation, residual adds) over N tokens
//                        + 2 x all-reduce(N x hidden x 2 bytes)                  if tensor_parallel_size > 1 ]
//             + GEMM(LM head) over the pieces that sample a token
//
// The terms go to CostBreakdown as: GEMMs -> linear_ns, LM head -> lm_head_ns, attention -> attention_ns,
// all-reduce -> allreduce_ns, the two fixed overheads -> overhead_ns, element-wise ops -> other_ns.
// Weights of 8 bits use the fp8 or int8 peak, 4 bits and below the bf16 peak (W4A16); the curves were
// fitted on 16-bit GEMMs, so other formats keep the fitted efficiencies (an extrapolation, counted).
// Compressed KV scales the attention bytes; multi-segment pieces add the roofline's segment merge.
// Shared-prefix decodes read L2-resident prefix tokens for free (L2ResidentTokens, cost_model.h).
//
// Accuracy(): per kernel kind used in this run, its share of the predicted kernel time and the held-out
// error the fit recorded (FitQuality), their time-weighted sum, and the share of predicted time that
// fell outside the measured ranges or in a kind that was not fitted (extrapolated_time_fraction).
// Create() refuses a device whose preset is unfitted (L40S, B200) naming it. Thread-safe (atomic
// counters).
//
// Example:
//   config.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_FITTED);
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model, CreateCostModel(config));
#ifndef KVSIM_COST_MODELS_FITTED_MODEL_H_
#define KVSIM_COST_MODELS_FITTED_MODEL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cost_models/cost_model.h"
#include "cost_models/fitted_kernels.h"
#include "cost_models/roofline.h"
#include "proto/config.pb.h"

namespace kvsim {

class FittedCostModel final : public CostModel {
 public:
  // FailedPrecondition naming the device when its preset has no fitted parameters; errors of
  // MakeRooflineParams for specs it cannot use.
  static absl::StatusOr<std::unique_ptr<FittedCostModel>> Create(const proto::ExperimentConfig& config);

  std::string Describe() const override;
  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override;
  absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const override;
  absl::StatusOr<CostBreakdown> EstimateBreakdown(const BatchShape& batch) const override;
  int64_t TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const override;
  proto::CostModelAccuracy Accuracy() const override;
  // O(1) per iteration: the terms that do not change within the run (GEMMs, element-wise ops, all-reduce,
  // LM head) and their counts are computed once, each iteration prices its decode attention only. Other
  // batches (a prefix group, a piece that is not a decode) take the default.
  std::unique_ptr<DecodeRunPricer> StartDecodeRun(const BatchShape& first) const override;

  // Kernel kinds as counted for Accuracy(), in FitQuality order.
  enum Kind { kGemm = 0, kPrefill, kDecode, kElementwise, kAllReduce, kNumKinds };

 private:
  FittedCostModel(const RooflineParams& params, const proto::DeviceSpec& device);

  // The kernel predictions of one priced batch, added to the counters behind Accuracy() by Commit (for
  // an iteration that runs) or dropped (an estimate).
  struct Tally {
    std::array<int64_t, kNumKinds> time_ns{};
    std::array<int64_t, kNumKinds> extrapolated_ns{};
    int64_t predictions = 0;
    int64_t extrapolated = 0;
    // Adds `times` copies of `other` (the same kernels priced that many times).
    void Add(const Tally& other, int64_t times) {
      for (int k = 0; k < kNumKinds; ++k) {
        time_ns[k] += times * other.time_ns[k];
        extrapolated_ns[k] += times * other.extrapolated_ns[k];
      }
      predictions += times * other.predictions;
      extrapolated += times * other.extrapolated;
    }
  };
  void Commit(const Tally& tally) const;
  // IterationBreakdown, its predictions in `tally`.
  absl::StatusOr<CostBreakdown> Breakdown(const BatchShape& batch, Tally* tally) const;
  // What a batch's terms depend on: Breakdown's pass over its pieces (which prices the prefill and
  // recompute pieces' attention, one kernel for all of them).
  struct BatchSums {
    int64_t layer_tokens = 0, projection_tokens = 0, sampling = 0;
    int64_t decodes = 0, decode_context = 0, max_context = 0, merge_decodes = 0, max_segments = 1;
    double prefill_s = 0;  // per layer
  };
  BatchSums Sum(const BatchShape& batch, Tally* tally) const;
  // Attention per layer: prefill_s, then the decode attention of the decodes (`decode`: DecodeTerms of
  // sums.decodes), then their segment merge.
  double AttentionSeconds(const BatchSums& sums, const FittedDecodeTerms& decode, Tally* tally) const;
  // Every term of the breakdown but attention_ns and total_ns.
  CostBreakdown OtherTerms(const BatchSums& sums, Tally* tally) const;
  class DecodeRun;  // StartDecodeRun's pricer
  // Seconds of one kernel, counted in `tally` against `kind` (as extrapolated when `inside` is false),
  // charged `times` times (the layers; once for the LM head).
  static double Count(Kind kind, double seconds, bool inside, double times, Tally* tally);
  double CountPerLayer(Kind kind, double seconds, bool inside, Tally* tally) const {
    return Count(kind, seconds, inside, p_.num_layers, tally);
  }
  // The GEMM shapes an iteration runs (per layer: QKV, output, gate+up, down, the KV projection of a
  // recompute; once per iteration: the LM head).
  enum GemmShape { kQkv = 0, kOutput, kGateUp, kDown, kKvProjection, kLmHead, kNumGemmShapes };
  // FittedGemmSeconds of `shape` at `tokens` (> 0), memoised for tokens < kGemmMemoTokens.
  double GemmSeconds(GemmShape shape, int64_t tokens) const;
  // GemmSeconds counted as a per-layer GEMM (0 for tokens <= 0).
  double Gemm(GemmShape shape, int64_t tokens, Tally* tally) const;
  // The decode attention terms of `batch` decodes, and their time over `total_context` tokens.
  FittedDecodeTerms DecodeTerms(int64_t batch) const;
  double Decode(const FittedDecodeTerms& terms, int64_t batch, int64_t total_context, int64_t max_context,
                Tally* tally) const;

  RooflineParams p_;
  proto::FittedCostParams fit_;
  DevicePeaks peaks_;
  double gemm_peak_flops_per_s_ = 0;
  bool gemm_format_fitted_ = true;  // 16-bit weights (the fitted format)
  // Each kind's measured ranges (from fit_), and the all-reduce curve for p_.tp > 1 GPUs
  // (FindAllReduceFit; points into fit_; nullptr for one GPU or when none was measured).
  FitRange gemm_range_, prefill_range_, decode_range_, elementwise_range_, all_reduce_range_;
  const proto::AllReduceFit* all_reduce_fit_ = nullptr;
  bool all_reduce_exact_ = false;
  std::string device_name_;
  std::array<std::array<int64_t, 2>, kNumGemmShapes> gemm_features_{};  // out, in features per shape
  // GemmSeconds memo by shape x tokens; < 0 = not computed yet. Atomic, as the model is shared by
  // threads: every thread that computes an entry stores the same value. Up to the usual token budget of
  // an iteration (8,192), so prefill chunks hit it too (384 KiB).
  static constexpr int64_t kGemmMemoTokens = 8193;
  mutable std::unique_ptr<std::atomic<double>[]> gemm_memo_;
  // Predicted ns (x layers, as charged) per kind, and of them outside the measured range.
  mutable std::array<std::atomic<int64_t>, kNumKinds> time_ns_{};
  mutable std::array<std::atomic<int64_t>, kNumKinds> extrapolated_ns_{};
  mutable std::atomic<int64_t> predictions_{0};
  mutable std::atomic<int64_t> extrapolated_{0};
};

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_FITTED_MODEL_H_
