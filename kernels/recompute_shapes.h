// File: kernels/recompute_shapes.h
//
// The matrix products of recomputing missing KV for `tokens` tokens of one transformer layer, as plain
// shapes (row-major C[m][n] = A[m][k] . B[k][n], bf16 in, fp32 accumulation), for timing and for FLOP
// counts. Two paths:
//   KV projection only ("kv_proj"): [T x d_model] . [d_model x 2 Hkv D]. Exact only when the layer's
//     input hidden states were kept (HCache-style); RoPE on K (elementwise) is not included.
//   Full layer prefill: "qkv_proj" [T x d] . [d x (Hq + 2 Hkv) D], the attention over the prefix and
//     the chunk (timed separately by the prefill kernel), "o_proj" [T x Hq D] . [Hq D x d], "mlp_gate_up"
//     [T x d] . [d x 2 d_ff] (SwiGLU gate and up fused), "mlp_down" [T x d_ff] . [d_ff x d]. Not
//     included: RMSNorms, RoPE, the SiLU-and-multiply and residual adds (elementwise and memory-bound,
//     a few percent of a layer at these sizes), and any MoE routing.
//
// Example:
//   for (const GemmShape& g : FullLayerGemms(LayerShape{4096, 32, 8, 128, 14336}, 2048)) total += g.Flops();
//
// Thread-safety: pure functions.
#ifndef KVSIM_KERNELS_RECOMPUTE_SHAPES_H_
#define KVSIM_KERNELS_RECOMPUTE_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

struct LayerShape {
  int64_t d_model = 4096;
  int64_t num_q_heads = 32;
  int64_t num_kv_heads = 8;
  int64_t head_dim = 128;
  int64_t d_ff = 14336;
};

struct GemmShape {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  double Flops() const { return 2.0 * m * n * k; }
  // Bytes read and written once each in bf16: A, B and C.
  double Bytes() const { return 2.0 * (m * k + k * n + m * n); }
};

std::vector<GemmShape> KvProjectionGemms(const LayerShape& layer, int64_t tokens);
std::vector<GemmShape> FullLayerGemms(const LayerShape& layer, int64_t tokens);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_RECOMPUTE_SHAPES_H_
