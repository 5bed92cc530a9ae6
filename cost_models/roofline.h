// File: cost_models/roofline.h
//
// RooflineCostModel: the analytic cost model ("roofline"), built from the resolved model and device specs.
// Every operation costs max(FLOPs / (peak x compute_efficiency), HBM bytes / (bandwidth x
// memory_efficiency)), and an iteration is the SUM of its operations' times (operations run one after
// another on the GPU; each is bound by compute or by memory, never both at once):
//
//   iteration = iteration_overhead_ns
//             + layers x [ GEMM(QKV) + GEMM(O) + GEMM(gate+up) + GEMM(down)   over N tokens
//                        + GEMM(K/V projection)                              over R tokens (see below)
//                        + sum over pieces of Attention(piece)
//                        + 2 x AllReduce(N tokens)                           if tensor_parallel_size > 1 ]
//             + GEMM(LM head) over the pieces that sample a token
//
//   GEMM(M tokens, n out, k in)   FLOPs 2 M n k at the weight dtype's peak; bytes n k (weights, at
//                                 weight_dtype) + M (n + k) (bf16 activations in and out).
//   Attention(context c, new n)   per piece, per layer (one op each, so a mixed batch is the sum of its
//                                 pieces): tensor-core FLOPs 4 x heads x head_dim x (n c + n (n + 1) / 2)
//                                 (causal within the chunk); bytes: the KV of c + n tokens read once, the
//                                 KV of n tokens written, Q and O in bf16. Decodes (n = 1) do the dot
//                                 products on CUDA cores (2 x heads-per-KV-head ops per KV element); every
//                                 piece dequantises each KV element it reads (KvFormat), also on CUDA
//                                 cores (peak_fp32_flops). That ALU work is why decode over 4-bit KV turns
//                                 compute-bound while bf16/fp8/int8 stay memory-bound. Decodes sharing
//                                 a prefix (SequenceWork.prefix_id) that fits in L2 read it from HBM
//                                 once per iteration (L2ResidentTokens in cost_model.h).
//   AllReduce(M tokens)           ring: 2 (t - 1) steps x interconnect_latency_ns + 2 (t - 1) / t x
//                                 M x hidden x 2 bytes / (interconnect bandwidth x efficiency); PCIe when
//                                 the device has no interconnect.
//
// Per GPU of a tensor-parallel group of t: heads, KV heads (at least one), intermediate and vocab are
// divided by t; the hidden size is not. N = new tokens of non-recompute pieces plus, under
// RECOMPUTE_COST_FULL_LAYERS, of recompute pieces; under RECOMPUTE_COST_KV_PROJECTION recompute pieces
// skip attention and the MLP and cost a K/V projection GEMM over their R tokens (hidden states read from
// HBM). Peaks: bf16/fp16 -> peak_bf16_flops, fp8 -> peak_fp8_flops, int8 -> peak_int8_ops (each falling
// back to bf16 when 0); int4 weights are dequantised to bf16 (W4A16); attention runs at bf16 peak, or fp8
// peak with fp8 KV. Not modelled: norms, RoPE, activation functions, the input embedding gather, the
// LM head's logits gather under TP, and multi-segment merges (the table model adds those).
//
// Each term is rounded to integer ns separately and the total is their sum, so IterationBreakdown's terms
// add up exactly to IterationTimeNs. Immutable after construction; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<RooflineCostModel> model, RooflineCostModel::Create(config));
//   BatchShape batch;
//   batch.sequences.push_back({.context_tokens = 1000, .new_tokens = 1});
//   KVSIM_ASSIGN_OR_RETURN(int64_t ns, model->IterationTimeNs(batch));
#ifndef KVSIM_COST_MODELS_ROOFLINE_H_
#define KVSIM_COST_MODELS_ROOFLINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/kv_format.h"
#include "cost_models/cost_model.h"
#include "cost_models/kernel_roofline.h"
#include "proto/config.pb.h"

namespace kvsim {

// Shapes and rates of one GPU of the group, derived once from the resolved config.
struct RooflineParams {
  int64_t num_layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;     // query heads per GPU
  int64_t kv_heads = 0;  // KV heads per GPU (at least 1)
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // per GPU
  int64_t vocab = 0;         // per GPU
  int64_t tp = 1;
  double weight_bytes_per_element = 2;
  KvFormat kv;
  double kv_bytes_per_token_per_layer = 0;  // KvBytesPerTokenPerLayer (config/kv_format.h)
  DeviceRates rates;
  double linear_flops_per_s = 0;  // GEMM peak at the weight dtype x compute efficiency
  int64_t overhead_ns = 0;
  proto::RecomputeCost recompute_cost = proto::RECOMPUTE_COST_FULL_LAYERS;
};

// Derives RooflineParams. InvalidArgument naming the field for specs it cannot use.
absl::StatusOr<RooflineParams> MakeRooflineParams(const proto::ExperimentConfig& config);

class RooflineCostModel final : public CostModel {
 public:
  // REQUIRES: a resolved config (config/experiment_config.h). Errors from MakeRooflineParams.
  static absl::StatusOr<std::unique_ptr<RooflineCostModel>> Create(const proto::ExperimentConfig& config);
  explicit RooflineCostModel(const RooflineParams& params);

  std::string Describe() const override;
  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override;
  absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const override;
  // latency_ns + bytes / the tier's bandwidth (the device's PCIe bandwidth if the tier gives none); the
  // tier's figure is taken as achieved, with no efficiency factor. 0 for bytes <= 0.
  int64_t TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const override;
  // As the base class defines it, computed without building a batch (the block manager asks often).
  absl::StatusOr<int64_t> RecomputeTimeNs(int64_t position, int64_t num_tokens) const override;
  // Not calibrated; lists the roofline's held-out error per kernel kind against the device's bundled
  // measurements when its preset was fitted (FitQuality.roofline_heldout_*), else nothing.
  proto::CostModelAccuracy Accuracy() const override { return accuracy_; }

  // Per-operation times in seconds, for one layer where it applies (the table model uses them as its
  // prior and to scale measured points).
  double GemmSeconds(int64_t tokens, int64_t out_features, int64_t in_features) const;
  // One layer, one piece, `l2_resident_tokens` of its context read from L2.
  double AttentionSeconds(const SequenceWork& piece, int64_t l2_resident_tokens = 0) const;
  // KV bytes per token per layer on this GPU (scales included).
  double KvBytesPerTokenPerLayer() const;
  double AllReduceSeconds(int64_t tokens) const;  // one all-reduce; 0 without TP
  // Linear layers of one layer over `tokens` tokens: QKV, O, gate+up and down GEMMs.
  double LayerLinearSeconds(int64_t tokens) const;
  double KvProjectionSeconds(int64_t tokens) const;  // one layer
  double LmHeadSeconds(int64_t tokens) const;

  const RooflineParams& params() const { return p_; }

 private:
  // Iteration terms that depend only on a token count, as IterationBreakdown computes them, for counts
  // below kTermTableTokens (every decode-only iteration of up to that many sequences).
  static constexpr int64_t kTermTableTokens = 512;
  int64_t LinearNs(int64_t layer_tokens, int64_t projection_tokens) const;
  int64_t LmHeadNs(int64_t sampling) const;
  int64_t AllReduceNs(int64_t layer_tokens) const;

  RooflineParams p_;
  proto::CostModelAccuracy accuracy_;  // set by Create
  AttentionKernel attention_;          // p_'s attention constants, for the per-piece loop
  std::vector<int64_t> linear_ns_;     // by layer tokens, no projection tokens: LinearNs
  std::vector<int64_t> lm_head_ns_;    // by sampled tokens: LmHeadNs
  std::vector<int64_t> allreduce_ns_;  // by layer tokens: AllReduceNs
};

// Checks the pieces of a batch: InvalidArgument naming the piece for an empty batch, new_tokens <= 0,
// context_tokens < 0 or num_segments < 1. Shared by the cost models.
absl::Status ValidateBatch(const BatchShape& batch);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_ROOFLINE_H_
