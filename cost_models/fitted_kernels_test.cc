#include "cost_models/fitted_kernels.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

DevicePeaks Peaks(int32_t sms) {
  DevicePeaks p;
  p.bf16_flops_per_s = 1e15;
  p.fp8_flops_per_s = 2e15;
  p.int8_ops_per_s = 2e15;
  p.memory_bytes_per_s = 1e12;
  p.num_sms = sms;
  return p;
}

TEST(FittedKernelsTest, SmoothMaxIsAPNorm) {
  EXPECT_DOUBLE_EQ(SmoothMax(3, 4, 2), 5);
  EXPECT_DOUBLE_EQ(SmoothMax(3, 4, 1), 7);
  EXPECT_DOUBLE_EQ(SmoothMax(7, 0, 3), 7);
  EXPECT_NEAR(SmoothMax(3, 4, 200), 4, 1e-9);
  EXPECT_EQ(SmoothMax(0, 0, 2), 0);
  EXPECT_TRUE(std::isfinite(SmoothMax(1e-300, 1e300, 50)));
}

TEST(FittedKernelsTest, GemmIsLaunchPlusRidgeOfComputeAndMemory) {
  proto::GemmFit fit;
  fit.set_launch_ns(1000);
  fit.set_compute_efficiency(0.5);
  fit.set_memory_efficiency(0.5);
  fit.set_ridge_exponent(1);  // the plain sum of the two terms
  fit.set_wave_weight(0);
  // M 128, N 1024, K 1024: compute 2 x 128 x 1024 x 1024 / 5e14 = 0.536870912 us; memory (1024 x 1024 x 2
  // + 128 x 2048 x 2) bytes / 5e11 = 5.24288 us; plus 1 us launch.
  const double s = FittedGemmSeconds(fit, Peaks(0), 1e15, 2, 128, 1024, 1024);
  EXPECT_NEAR(s, 1e-6 + 0.536870912e-6 + 5.24288e-6, 1e-15);
  EXPECT_EQ(FittedGemmSeconds(fit, Peaks(0), 1e15, 2, 0, 1024, 1024), 0);
}

TEST(FittedKernelsTest, GemmWaveQuantisationSlowsPartialWaves) {
  proto::GemmFit fit;
  fit.set_compute_efficiency(1);
  fit.set_memory_efficiency(1);
  fit.set_ridge_exponent(1000);  // effectively max()
  fit.set_wave_weight(1);
  // Bandwidth so high that the memory term (83 MB) is negligible next to compute.
  DevicePeaks four = Peaks(4), three = Peaks(3);
  four.memory_bytes_per_s = three.memory_bytes_per_s = 1e17;
  // 4096 x 640 x 8192: ceil(4096/128) x ceil(640/128) = 160 tiles: 40 full waves on 4 SMs (no loss),
  // 54 waves of 162 slots on 3 SMs.
  const double full = FittedGemmSeconds(fit, four, 1e15, 2, 4096, 640, 8192);
  const double compute = 2.0 * 4096 * 640 * 8192 / 1e15;
  EXPECT_NEAR(full, compute, compute * 1e-9);
  const double partial = FittedGemmSeconds(fit, three, 1e15, 2, 4096, 640, 8192);
  EXPECT_NEAR(partial, compute * 162.0 / 160.0, compute * 1e-9);
  fit.set_wave_weight(0.5);
  const double half = FittedGemmSeconds(fit, three, 1e15, 2, 4096, 640, 8192);
  EXPECT_NEAR(half, compute / (0.5 + 0.5 * 160.0 / 162.0), compute * 1e-9);
}

TEST(FittedKernelsTest, PrefillEfficiencyGrowsWithChunkAndCausalPairsCostMore) {
  proto::PrefillAttentionFit fit;
  fit.set_launch_ns(0);
  fit.set_compute_efficiency(0.5);
  fit.set_half_efficiency_tokens(100);
  fit.set_causal_pair_cost(2);
  fit.set_memory_efficiency(1);
  // n 100, c 1000, 32 heads x 128: pairs 100 x 1000 + 2 x 100 x 101 / 2 = 110100; FLOPs 4 x 32 x 128 x
  // pairs; efficiency 0.5 x 100 / 200 = 0.25 of 1e15. Memory: (1000 + 200) x 4096 bytes / 1e12, smaller.
  const double flops = 4.0 * 32 * 128 * 110100;
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(0), 1, 100, 1000, 32, 8, 128, 4096), flops / 2.5e14, 1e-15);
  // Twice the batch, twice the time (launch 0).
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(0), 2, 100, 1000, 32, 8, 128, 4096), 2 * flops / 2.5e14, 1e-15);
  // 50 more keys per query token inside the chunk: 2 x 100 x (101 + 50) / 2 = 15100 causal pairs.
  fit.set_causal_extra_tokens(50);
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(0), 1, 100, 1000, 32, 8, 128, 4096),
              4.0 * 32 * 128 * (100 * 1000 + 15100) / 2.5e14, 1e-15);
}

proto::PrefillAttentionFit SplitPrefillFit() {
  proto::PrefillAttentionFit fit;
  fit.set_launch_ns(5000);
  fit.set_compute_efficiency(0.5);
  fit.set_half_efficiency_tokens(100);
  fit.set_causal_pair_cost(1);
  fit.set_memory_efficiency(1);
  fit.set_serial_ns_per_token(50);
  fit.set_split_ns(10000);
  fit.set_split_chunk_tokens(512);
  return fit;
}

TEST(FittedKernelsTest, PrefillOfFewThreadBlocksIsBoundByOneBlocksPassOverTheKvOrSplitsIt) {
  const proto::PrefillAttentionFit fit = SplitPrefillFit();
  // A 64-token chunk, 32 query heads on 8 KV heads: 64 x 4 = 256 query rows per KV head, 2 tiles of 128,
  // 16 thread blocks < 108 SMs. After 384 cached tokens (448 <= 512: not split) one block's pass over the
  // 448 keys, 50 ns each (22.4 us), exceeds the compute (4 x 32 x 128 x (64 x 384 + 64 x 65 / 2) FLOPs at
  // 0.5 x 64 / 164 of 1e15: 2.2 us) and the memory (3.1 us).
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(108), 1, 64, 384, 32, 8, 128, 4096), 5000e-9 + 448 * 50e-9, 1e-15);
  // After 3,000 (3,064 > 512 keys): split into 512-token chunks, one chunk's pass (25.6 us) plus the
  // merge's 10 us, more than the compute (16.3 us).
  const double split = 5000e-9 + 10000e-9;
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(108), 1, 64, 3000, 32, 8, 128, 4096), split + 512 * 50e-9, 1e-15);
  // After 6,000 the pass is still 25.6 us, but the compute over 6,064 keys (32.4 us) now binds.
  const double compute_6000 = 4.0 * 32 * 128 * (64 * 6000 + 64 * 65 / 2.0) / (1e15 * 0.5 * 64 / 164);
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(108), 1, 64, 6000, 32, 8, 128, 4096), split + compute_6000, 1e-15);
  // 7 such chunks in a batch: 112 blocks fill the 108 SMs, nothing is split, the pass is over all 3,064 keys.
  const double compute = 7 * 4.0 * 32 * 128 * (64 * 3000 + 64 * 65 / 2.0) / (1e15 * 0.5 * 64 / 164);
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(108), 7, 64, 3000, 32, 8, 128, 4096),
              5000e-9 + std::max(compute, 3064 * 50e-9), 1e-15);
  // Without SMs (num_sms 0) no split either.
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(0), 1, 64, 3000, 32, 8, 128, 4096), 5000e-9 + 3064 * 50e-9, 1e-15);
  // An 8,192-token chunk is 256 tiles x 8 = 2,048 blocks: compute-bound (1.1 ms against a 0.41 ms pass).
  const double big = 4.0 * 32 * 128 * (8192 * 8193 / 2.0) / (1e15 * 0.5 * 8192 / 8292);
  EXPECT_NEAR(FittedPrefillSeconds(fit, Peaks(108), 1, 8192, 0, 32, 8, 128, 4096), 5000e-9 + big, 1e-12);
}

TEST(FittedKernelsTest, PrefillChunksOfOneIterationRunAsOneKernel) {
  const proto::PrefillAttentionFit fit = SplitPrefillFit();
  // 64 tokens after 384 cached (16 blocks, 448 keys) and 64 after 3,000 (16 blocks, 3,064 keys) in one
  // kernel: 32 blocks leave SMs idle and the longer KV exceeds 512, so the KV is split; one launch and one
  // merge, and the pass over one 512-key chunk (25.6 us) exceeds the summed compute (2.2 + 16.3 us) and
  // memory (3.1 + 13.9 us). Apart, the two would cost 27.4 + 40.6 us.
  FittedPrefillTerms both = MakeFittedPrefillTerms(fit, Peaks(108), 1, 64, 384, 32, 8, 128, 4096);
  both.Add(MakeFittedPrefillTerms(fit, Peaks(108), 1, 64, 3000, 32, 8, 128, 4096));
  EXPECT_EQ(both.thread_blocks, 32);
  EXPECT_EQ(both.max_kv_tokens, 3064);
  EXPECT_NEAR(FittedPrefillKernelSeconds(fit, Peaks(108), both), 15000e-9 + 512 * 50e-9, 1e-15);
  // Seven of the second chunk added one by one are the batch of seven (112 blocks: not split).
  FittedPrefillTerms seven;
  for (int i = 0; i < 7; ++i) seven.Add(MakeFittedPrefillTerms(fit, Peaks(108), 1, 64, 3000, 32, 8, 128, 4096));
  EXPECT_NEAR(FittedPrefillKernelSeconds(fit, Peaks(108), seven),
              FittedPrefillSeconds(fit, Peaks(108), 7, 64, 3000, 32, 8, 128, 4096), 1e-15);
  // No chunks: no kernel.
  EXPECT_EQ(FittedPrefillKernelSeconds(fit, Peaks(108), FittedPrefillTerms()), 0);
  EXPECT_EQ(MakeFittedPrefillTerms(fit, Peaks(108), 1, 0, 3000, 32, 8, 128, 4096).thread_blocks, 0);
}

proto::DecodeAttentionFit DecodeFit() {
  proto::DecodeAttentionFit fit;
  fit.set_launch_ns(2000);
  fit.set_per_sequence_ns(100);
  fit.set_memory_efficiency(0.5);
  fit.set_wave_weight(1);
  fit.set_split_ns(10000);
  fit.set_split_memory_efficiency(0.8);
  fit.set_ctas_per_sm(3);  // 324 slots on 108 SMs
  return fit;
}

TEST(FittedKernelsTest, DecodeSplitsKvWhileTheBatchLeavesSlotsFreeAndContextsExceedOneChunk) {
  const proto::DecodeAttentionFit fit = DecodeFit();
  const double kv = 4096;  // bytes per token
  // 40 sequences x 8 KV heads = 320 items < 324 slots, contexts of 1,000 > 128 tokens: split-KV, the
  // merge's 10 us, 80% of the bandwidth, no wave term.
  EXPECT_NEAR(FittedDecodeSeconds(fit, Peaks(108), 40, 40 * 1000, 1000, 8, kv),
              2000e-9 + 4000e-9 + 10000e-9 + 40 * 1000 * kv / 8e11, 1e-15);
  // The same batch over 128-token contexts (one chunk each): no split, one wave of 320 of 324 slots.
  EXPECT_NEAR(FittedDecodeSeconds(fit, Peaks(108), 40, 40 * 128, 128, 8, kv),
              2000e-9 + 4000e-9 + 40 * 128 * kv / 5e11 / (320.0 / 324), 1e-15);
  // 41 x 8 = 328 items: no split, two waves of 324 slots (the step Vidur's A100 profile shows at 41).
  EXPECT_NEAR(FittedDecodeSeconds(fit, Peaks(108), 41, 41 * 1000, 1000, 8, kv),
              2000e-9 + 4100e-9 + 41 * 1000 * kv / 5e11 / (328.0 / 648), 1e-15);
  // The longest context decides (FlashInfer splits when any sequence exceeds one chunk).
  EXPECT_NEAR(FittedDecodeSeconds(fit, Peaks(108), 2, 129 + 10, 129, 8, kv),
              2000e-9 + 200e-9 + 10000e-9 + 139 * kv / 8e11, 1e-15);
  // Unset split efficiency and residency: the unsplit efficiency, one block per SM (108 slots: 13 x 8
  // splits, 14 x 8 does not).
  proto::DecodeAttentionFit plain = fit;
  plain.clear_split_memory_efficiency();
  plain.clear_ctas_per_sm();
  EXPECT_NEAR(FittedDecodeSeconds(plain, Peaks(108), 13, 13 * 1000, 1000, 8, kv),
              2000e-9 + 1300e-9 + 10000e-9 + 13 * 1000 * kv / 5e11, 1e-15);
  EXPECT_NEAR(FittedDecodeSeconds(plain, Peaks(108), 14, 14 * 1000, 1000, 8, kv),
              2000e-9 + 1400e-9 + 14 * 1000 * kv / 5e11 / (112.0 / 216), 1e-15);
  // No SM count: no waves and no split.
  EXPECT_NEAR(FittedDecodeSeconds(fit, Peaks(0), 1, 1000, 1000, 8, kv), 2000e-9 + 100e-9 + 1000 * kv / 5e11, 1e-15);
}

// The terms of a batch size price any total and longest context the way FittedDecodeSeconds does (a
// decode run keeps them while its contexts grow, across the split threshold too).
TEST(FittedKernelsTest, DecodeTermsOfABatchSizePriceEveryContext) {
  const proto::DecodeAttentionFit fit = DecodeFit();
  const FittedDecodeTerms terms = MakeFittedDecodeTerms(fit, Peaks(108), 13, 8, 4096);
  EXPECT_NEAR(terms.fixed_s, 3300e-9, 1e-18);
  EXPECT_NEAR(terms.split_fixed_s, 13300e-9, 1e-18);
  EXPECT_DOUBLE_EQ(terms.bytes_per_s, 5e11);
  EXPECT_DOUBLE_EQ(terms.split_bytes_per_s, 8e11);
  EXPECT_NEAR(terms.slowdown, 324.0 / 104, 1e-15);
  EXPECT_TRUE(terms.can_split);
  for (double max : {100.0, 128.0, 129.0, 1000.0}) {
    for (double total : {0.0, 13 * max, 13 * max + 13, 1e7}) {
      EXPECT_EQ(terms.Seconds(total, max), FittedDecodeSeconds(fit, Peaks(108), 13, total, max, 8, 4096)) << total;
      const double expected = max > 128 ? 13300e-9 + total * 4096 / 8e11 : 3300e-9 + total * 4096 / 5e11 * 324 / 104;
      EXPECT_NEAR(terms.Seconds(total, max), expected, 1e-15) << total << " " << max;
    }
  }
  EXPECT_FALSE(MakeFittedDecodeTerms(fit, Peaks(108), 41, 8, 4096).can_split);
  EXPECT_EQ(MakeFittedDecodeTerms(fit, Peaks(108), 0, 8, 4096).Seconds(5000, 1000), 0);
}

TEST(FittedKernelsTest, AllReduceCurveAndNearestCount) {
  proto::FittedCostParams params;
  for (int g : {2, 8}) {
    proto::AllReduceFit* f = params.add_all_reduce();
    f->set_num_gpus(g);
    f->set_latency_ns(10000 * g);
    f->set_bus_bandwidth_bytes_per_s(1e11);
  }
  bool exact = false;
  const proto::AllReduceFit* two = FindAllReduceFit(params, 2, &exact);
  ASSERT_NE(two, nullptr);
  EXPECT_TRUE(exact);
  // 2 GPUs, 1 MB: 20 us + 2 x 1/2 x 1e6 / 1e11 = 30 us.
  EXPECT_NEAR(FittedAllReduceSeconds(*two, 1e6, 2), 30e-6, 1e-15);
  const proto::AllReduceFit* four = FindAllReduceFit(params, 4, &exact);
  ASSERT_NE(four, nullptr);
  EXPECT_FALSE(exact);
  EXPECT_EQ(four->num_gpus(), 8);                                  // the nearest larger count
  EXPECT_EQ(FindAllReduceFit(params, 16, &exact)->num_gpus(), 8);  // else the largest
  EXPECT_EQ(FindAllReduceFit(proto::FittedCostParams(), 2, &exact), nullptr);
  EXPECT_EQ(FittedAllReduceSeconds(*two, 1e6, 1), 0);
}

TEST(FittedKernelsTest, AllReduceProtocolsBySizeSwitchAtTheirThresholds) {
  proto::AllReduceFit f;
  f.set_latency_ns(20000);  // protocol 1: 20 us + a B / 10 GB/s
  f.set_bus_bandwidth_bytes_per_s(1e10);
  f.set_large_latency_ns(40000);  // protocol 2: 40 us + a B / 100 GB/s
  f.set_large_bus_bandwidth_bytes_per_s(1e11);
  // switch_bytes 0: the faster of the two. 4 GPUs, a = 1.5; 100 kB: 35 us vs 41.5 us.
  EXPECT_NEAR(FittedAllReduceSeconds(f, 1e5, 4), 35e-6, 1e-15);
  // By size: protocol 1 up to 1 MB even where protocol 2 would be faster, protocol 2 above, protocol 3
  // (10 us + a B / 1 TB/s) above 10 MB. A factor 100 from a switch (ln 100 = 46 widths of 0.1) a line holds
  // to 1e-20 of the gap to the next one; at a switch the two lines are averaged; at 3 MB, 11 and 12
  // widths from the switches, the other lines weigh 1/(1 + e^11) = 1.7e-5 and 6e-6 (< 7 ns here).
  f.set_switch_bytes(1e6);
  f.set_bulk_switch_bytes(1e7);
  f.set_bulk_latency_ns(10000);
  f.set_bulk_bus_bandwidth_bytes_per_s(1e12);
  EXPECT_NEAR(FittedAllReduceSeconds(f, 1e4, 4), 20e-6 + 1.5e4 / 1e10, 1e-12);  // 21.5 us
  EXPECT_NEAR(FittedAllReduceSeconds(f, 1e6, 4), 0.5 * (170e-6 + 55e-6), 1e-12);
  EXPECT_NEAR(FittedAllReduceSeconds(f, 3e6, 4), 40e-6 + 4.5e6 / 1e11, 1e-8);   // 3 MB: 85 us
  EXPECT_NEAR(FittedAllReduceSeconds(f, 1e9, 4), 10e-6 + 1.5e9 / 1e12, 1e-12);  // 1.51 ms
  // Without a third protocol the second holds above the first switch.
  f.set_bulk_bus_bandwidth_bytes_per_s(0);
  EXPECT_NEAR(FittedAllReduceSeconds(f, 1e9, 4), 40e-6 + 1.5e9 / 1e11, 1e-12);
}

TEST(FittedKernelsTest, ElementwiseCostPerElementRisesBeyondTheCacheKnee) {
  proto::ElementwiseFit f;
  f.set_launch_ns(20000);
  f.set_ns_per_token_element(0.01);
  // One rate: 20 us + 0.01 ns x 1000 x 4096 = 60.96 us.
  EXPECT_NEAR(FittedElementwiseSeconds(f, 1000, 4096), 60.96e-6, 1e-15);
  f.set_ns_per_token_element_beyond_cache(0.03);
  f.set_cache_resident_token_elements(2048 * 4096);
  // Below the knee the first rate alone; 4096 tokens: 20 us + 0.01 x 2048 x 4096 + 0.03 x 2048 x 4096 ns.
  EXPECT_NEAR(FittedElementwiseSeconds(f, 1000, 4096), 60.96e-6, 1e-15);
  EXPECT_NEAR(FittedElementwiseSeconds(f, 4096, 4096), (20000 + 0.04 * 2048 * 4096) * 1e-9, 1e-15);
  EXPECT_EQ(FittedElementwiseSeconds(f, 0, 4096), 0);
}

TEST(FittedKernelsTest, FitRange) {
  proto::FitQuality q;
  q.add_feature_min(1);
  q.add_feature_max(100);
  const double inside[] = {50}, outside[] = {101}, below[] = {0.5};
  EXPECT_FALSE(FitRange(q).Inside(inside, 1));  // not fitted: every prediction extrapolates
  q.set_fitted(true);
  EXPECT_TRUE(FitRange(q).Inside(inside, 1));
  EXPECT_FALSE(FitRange(q).Inside(outside, 1));
  EXPECT_FALSE(FitRange(q).Inside(below, 1));
  EXPECT_FALSE(FitRange().Inside(inside, 1));
  proto::FitQuality no_range;
  no_range.set_fitted(true);
  EXPECT_TRUE(FitRange(no_range).Inside(outside, 1));  // no range recorded: nothing to check
  // Two features: the second checked too; a feature beyond the recorded ranges is not.
  q.add_feature_min(10);
  q.add_feature_max(20);
  const double both_inside[] = {50, 15}, second_outside[] = {50, 21};
  EXPECT_TRUE(FitRange(q).Inside(both_inside, 2));
  EXPECT_FALSE(FitRange(q).Inside(second_outside, 2));
  EXPECT_TRUE(FitRange(q).Inside(second_outside, 1));
}

}  // namespace
}  // namespace kvsim
