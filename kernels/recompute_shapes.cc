#include "kernels/recompute_shapes.h"

namespace kvsim {

std::vector<GemmShape> KvProjectionGemms(const LayerShape& l, int64_t tokens) {
  return {{"kv_proj", tokens, 2 * l.num_kv_heads * l.head_dim, l.d_model}};
}

std::vector<GemmShape> FullLayerGemms(const LayerShape& l, int64_t tokens) {
  const int64_t q_dim = l.num_q_heads * l.head_dim;
  return {{"qkv_proj", tokens, q_dim + 2 * l.num_kv_heads * l.head_dim, l.d_model},
          {"o_proj", tokens, l.d_model, q_dim},
          {"mlp_gate_up", tokens, 2 * l.d_ff, l.d_model},
          {"mlp_down", tokens, l.d_model, l.d_ff}};
}

}  // namespace kvsim
