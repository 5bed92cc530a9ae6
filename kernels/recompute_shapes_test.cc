#include "kernels/recompute_shapes.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Llama-3-8B-like layer (d 4096, 32/8 heads of 128, d_ff 14336): weights per layer are
// 4096 x 6144 (qkv) + 4096 x 4096 (o) + 3 x 4096 x 14336 (mlp) = 218,103,808 parameters, so a full-layer
// recompute of T tokens is 2 x 218,103,808 x T FLOPs (attention excluded); for 32 layers that is the
// familiar ~2 x 7e9 x T (embeddings and head excluded).
TEST(RecomputeShapesTest, FullLayerFlopsMatchTheParameterCount) {
  const LayerShape layer{4096, 32, 8, 128, 14336};
  double flops = 0;
  for (const GemmShape& g : FullLayerGemms(layer, 1000)) flops += g.Flops();
  EXPECT_DOUBLE_EQ(flops, 2.0 * 218103808.0 * 1000);
}

// KV projection: 4096 x (2 x 8 x 128) = 8,388,608 parameters, 2 x that x T FLOPs; 8K tokens over 32 layers
// is 4.4 TFLOP (KERNELS.md's 5.6 ms at 790 TFLOP/s).
TEST(RecomputeShapesTest, KvProjectionIsOneGemm) {
  const std::vector<GemmShape> g = KvProjectionGemms(LayerShape{4096, 32, 8, 128, 14336}, 8192);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].m, 8192);
  EXPECT_EQ(g[0].n, 2048);
  EXPECT_EQ(g[0].k, 4096);
  EXPECT_NEAR(g[0].Flops() * 32 / 790e12 * 1e3, 5.6, 0.05);
}

}  // namespace
}  // namespace kvsim
