// Hand-computed replays: every reported time is the sum of the fake cost model's terms, worked out here
// from the scheduling rules (decodes first, FCFS admission, preempt the newest), independently of the code.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "sim/serving/vllm_metrics.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

// iteration = 1000 + 10 per new token + 1 per context token.
constexpr FakeCosts kCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_context_token = 1};

proto::Results Replay(const proto::ExperimentConfig& config, std::vector<Request> requests, int32_t block_tokens = 0,
                      bool record_token_gaps = false) {
  FakeCostModel cost(kCosts);
  VectorTraceReader reader(std::move(requests), TraceInfo{"test", "vector", block_tokens});
  ReplayOptions options;
  options.record_token_gaps = record_token_gaps;
  auto output = RunReplay(config, cost, &reader, options);
  EXPECT_TRUE(output.ok()) << output.status();
  return output.ok() ? output->results : proto::Results();
}

TEST(ReplayHandComputedTest, OneRequest) {
  proto::Results results = Replay(TestConfig(100), {MakeRequest(7, 0, 40, 3)});
  const proto::RequestResult& r = ResultOf(results, 7);
  // Prefill of 40 tokens: 1000 + 400 = 1400. Decode 1 (context 40): 1000 + 10 + 40 = 1050 -> 2450.
  // Decode 2 (context 41): 1000 + 10 + 41 = 1051 -> 3501.
  EXPECT_EQ(r.queueing_ns(), 0);
  EXPECT_EQ(r.ttft_ns(), 1400);
  EXPECT_EQ(r.e2e_ns(), 3501);
  EXPECT_EQ(r.tpot_ns(), (3501 - 1400) / 2);
  EXPECT_EQ(r.output_tokens(), 3);
  EXPECT_EQ(r.recomputed_tokens(), 40);
  EXPECT_EQ(results.summary().finished_requests(), 1);
  EXPECT_EQ(results.summary().num_iterations(), 3);
  EXPECT_DOUBLE_EQ(results.summary().duration_s(), 3501e-9);
}

TEST(ReplayHandComputedTest, ChunkedPrefillAttendsToEarlierChunks) {
  proto::ExperimentConfig overrides;
  overrides.mutable_scheduler()->set_chunk_tokens(16);
  proto::Results results = Replay(TestConfig(100, overrides), {MakeRequest(1, 5000, 40, 1)});
  // Chunks of 16, 16, 8 tokens at contexts 0, 16, 32:
  // (1000 + 160 + 0) + (1000 + 160 + 16) + (1000 + 80 + 32) = 1160 + 1176 + 1112 = 3448.
  const proto::RequestResult& r = ResultOf(results, 1);
  EXPECT_EQ(r.arrival_ns(), 5000);
  EXPECT_EQ(r.ttft_ns(), 3448);
  EXPECT_EQ(r.e2e_ns(), 3448);
  EXPECT_FALSE(r.has_tpot_ns());  // one output token: no TPOT (it read 0)
}

TEST(ReplayHandComputedTest, AdaptiveChunkHoldsTheTarget) {
  proto::ExperimentConfig overrides;
  overrides.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_ADAPTIVE);
  overrides.mutable_scheduler()->set_target_iteration_ns(1500);
  proto::Results results = Replay(TestConfig(100, overrides), {MakeRequest(1, 0, 100, 1)});
  // Largest chunk c with 1000 + 10 c + context <= 1500: context 0 -> c = 50 (1500);
  // context 50 -> 1000 + 10 c + 50 <= 1500 -> c = 45 (1500); context 95 -> 5 left: 1000 + 50 + 95 = 1145.
  EXPECT_EQ(ResultOf(results, 1).ttft_ns(), 1500 + 1500 + 1145);
  EXPECT_EQ(results.summary().num_iterations(), 3);
}

TEST(ReplayHandComputedTest, PrefillFirstRunsWholePromptsBeforeDecodes) {
  proto::ExperimentConfig overrides;
  overrides.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_NONE);
  overrides.mutable_scheduler()->set_max_num_batched_tokens(32);
  proto::Results results = Replay(TestConfig(100, overrides), {MakeRequest(1, 0, 40, 2), MakeRequest(2, 100, 20, 1)});
  // t=0: request 1's whole prompt (40 > 32 tokens, allowed as the first): 1000 + 400 = 1400.
  // t=1400: request 2 waits (arrived at 100) -> prefill-first: 1000 + 200 = 1200 -> 2600 (done).
  // t=2600: decode of request 1 (context 40): 1000 + 10 + 40 = 1050 -> 3650.
  EXPECT_EQ(ResultOf(results, 1).ttft_ns(), 1400);
  EXPECT_EQ(ResultOf(results, 2).ttft_ns(), 2600 - 100);
  EXPECT_EQ(ResultOf(results, 2).queueing_ns(), 1300);
  EXPECT_EQ(ResultOf(results, 1).e2e_ns(), 3650);
}

// Request 1 (blocks 1, 2, 3; 48 tokens) runs alone; request 2 arrives after it finished.
std::vector<Request> SharedPrefix(std::vector<uint64_t> second_hashes, int64_t second_tokens) {
  return {MakeRequest(1, 0, 48, 1, {1, 2, 3}), MakeRequest(2, 10000, second_tokens, 1, second_hashes)};
}

TEST(ReplayHandComputedTest, TwoRequestsSharingAPrefix) {
  proto::Results results = Replay(TestConfig(100), SharedPrefix({1, 2, 9}, 40), 16);
  // Request 1: 1000 + 480 = 1480. Request 2 reuses blocks 1, 2 (32 tokens) and computes 8 tokens at
  // context 32: 1000 + 80 + 32 = 1112.
  EXPECT_EQ(ResultOf(results, 1).ttft_ns(), 1480);
  const proto::RequestResult& r = ResultOf(results, 2);
  EXPECT_EQ(r.ttft_ns(), 1112);
  EXPECT_EQ(r.reused_tokens(), 32);
  EXPECT_EQ(r.reused_blocks(), 2);
  EXPECT_EQ(r.prefix_reused_tokens(), 32);
  EXPECT_EQ(r.segment_reused_tokens(), 32);
  EXPECT_EQ(r.recomputed_tokens(), 8);
  // Hit ratios over all prompt tokens (48 + 40).
  EXPECT_DOUBLE_EQ(results.summary().prefix_hit_ratio(), 32.0 / 88);
  EXPECT_DOUBLE_EQ(results.summary().reuse_hit_ratio(), 32.0 / 88);
}

TEST(ReplayHandComputedTest, ReuseModesOnAMissingMiddleBlock) {
  // Request 2: blocks 1, 7, 3. Prefix reuse: block 1 only; segment: blocks 1 and 3.
  proto::ExperimentConfig prefix, segment, none;
  segment.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_SEGMENT);
  none.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_NONE);
  // Prefix: compute tokens 16..47 at context 16: 1000 + 320 + 16 = 1336.
  const proto::RequestResult p = ResultOf(Replay(TestConfig(100, prefix), SharedPrefix({1, 7, 3}, 48), 16), 2);
  EXPECT_EQ(p.ttft_ns(), 1336);
  EXPECT_EQ(p.reused_tokens(), 16);
  // Segment: compute block 7 only (16 tokens at context 16): 1000 + 160 + 16 = 1176.
  const proto::RequestResult s = ResultOf(Replay(TestConfig(100, segment), SharedPrefix({1, 7, 3}, 48), 16), 2);
  EXPECT_EQ(s.ttft_ns(), 1176);
  EXPECT_EQ(s.reused_tokens(), 32);
  // None: all 48 tokens: 1000 + 480 = 1480; the potentials are still reported.
  const proto::RequestResult n = ResultOf(Replay(TestConfig(100, none), SharedPrefix({1, 7, 3}, 48), 16), 2);
  EXPECT_EQ(n.ttft_ns(), 1480);
  EXPECT_EQ(n.reused_tokens(), 0);
  for (const proto::RequestResult* r : {&p, &s, &n}) {
    EXPECT_EQ(r->prefix_reused_tokens(), 16);
    EXPECT_EQ(r->segment_reused_tokens(), 32);
  }
}

TEST(ReplayHandComputedTest, FullyCachedPromptComputesItsLastToken) {
  proto::Results results = Replay(TestConfig(100), SharedPrefix({1, 2, 3}, 48), 16);
  // All three blocks reused; the last token is computed at context 47: 1000 + 10 + 47 = 1057.
  const proto::RequestResult& r = ResultOf(results, 2);
  EXPECT_EQ(r.ttft_ns(), 1057);
  EXPECT_EQ(r.reused_blocks(), 3);
  EXPECT_EQ(r.recomputed_tokens(), 1);
}

TEST(ReplayHandComputedTest, ForcedPreemptionByRecompute) {
  // GPU of 4 blocks of 16 tokens. Requests A and B (16-token prompts, 40 output tokens) arrive together.
  proto::Results results = Replay(TestConfig(4), {MakeRequest(1, 0, 16, 40, {1}), MakeRequest(2, 0, 16, 40, {2})}, 16);
  // t=0: both prefills in one iteration: 1000 + 10 x 32 = 1320; each has 1 prompt block.
  // Decode i (i = 1..16), both, contexts 16 + i - 1: 1000 + 20 + 2 (15 + i); each holds 1 tail block.
  // Decode 17: A needs a second tail block, the GPU is full (2 + 2): B, the newest, is preempted
  // (its prompt block stays cached). B cannot come back (1 hit + 2 tail blocks, 0 free) until A finishes.
  // A decodes alone, i = 17..39: 1000 + 10 + (15 + i). (At i = 33 A evicts B's cached prompt block.)
  // Then B re-prefills prompt + its 17 tokens = 33 tokens: 1000 + 330 = 1330, and decodes its last
  // 22 tokens at contexts 33 + j - 1, j = 1..22: 1000 + 10 + (32 + j).
  int64_t t = 1320;
  const int64_t ttft = t;
  for (int64_t i = 1; i <= 16; ++i) t += 1000 + 20 + 2 * (15 + i);
  for (int64_t i = 17; i <= 39; ++i) t += 1000 + 10 + (15 + i);
  const int64_t a_end = t;
  t += 1330;
  for (int64_t j = 1; j <= 22; ++j) t += 1000 + 10 + (32 + j);
  const proto::RequestResult& a = ResultOf(results, 1);
  const proto::RequestResult& b = ResultOf(results, 2);
  EXPECT_EQ(a.ttft_ns(), ttft);
  EXPECT_EQ(a.e2e_ns(), a_end);
  EXPECT_EQ(a.preemptions(), 0);
  EXPECT_EQ(b.ttft_ns(), ttft);
  EXPECT_EQ(b.e2e_ns(), t);
  EXPECT_EQ(b.preemptions(), 1);
  EXPECT_EQ(b.output_tokens(), 40);
  EXPECT_EQ(b.recomputed_tokens(), 16 + 33);
  EXPECT_EQ(results.summary().preemptions(), 1);
  EXPECT_EQ(results.summary().evicted_blocks(), 2);  // B's prompt block, then A's
  EXPECT_EQ(results.summary().max_gpu_blocks_used(), 4);
}

// vLLM-style metrics of three requests that never overlap (so each time is the fake model's sum):
//   R1 at 0:      40 in, 3 out: prefill 1000 + 400 = 1400; decodes 1050, 1051 -> e2e 3501; TPOT 2101 / 2.
//   R2 at 10 us:  20 in, 2 out: prefill 1000 + 200 = 1200; decode 1000 + 10 + 20 -> e2e 2230; TPOT 1030.
//   R3 at 20 us:  10 in, 1 out: prefill 1100 = TTFT = e2e; no TPOT.
// Statistics as numpy computes them (mean, median, population std, linear-interpolated percentiles).
TEST(ReplayHandComputedTest, VllmMetricsOfThreeRequests) {
  const proto::Results results =
      Replay(TestConfig(100), {MakeRequest(1, 0, 40, 3), MakeRequest(2, 10000, 20, 2), MakeRequest(3, 20000, 10, 1)});
  VllmMetricsOptions options;
  options.percentiles = {50, 99, 99.9};
  proto::SloConfig slo;
  auto json = VllmBenchmarkJson(results, slo, options);
  ASSERT_TRUE(json.ok()) << json.status();
  const Json& m = *json;
  const double duration_s = 21100e-9;  // first arrival 0 to R3's finish 20000 + 1100
  auto near = [](const Json& value, double want) {
    ASSERT_TRUE(value.is_number()) << value.dump();
    EXPECT_NEAR(value.get<double>(), want, 1e-9 * std::abs(want)) << value.dump();
  };
  EXPECT_EQ(m["completed"], 3);
  EXPECT_EQ(m["total_input_tokens"], 70);
  EXPECT_EQ(m["total_output_tokens"], 6);
  near(m["duration"], duration_s);
  near(m["request_throughput"], 3 / duration_s);
  near(m["input_throughput"], 70 / duration_s);
  near(m["output_throughput"], 6 / duration_s);
  near(m["total_token_throughput"], 76 / duration_s);
  EXPECT_TRUE(m["request_goodput"].is_null());  // no SLO set
  // TTFT (ms): 0.0014, 0.0012, 0.0011.
  const double ttft_mean = 0.0037 / 3;
  near(m["mean_ttft_ms"], ttft_mean);
  near(m["median_ttft_ms"], 0.0012);
  near(m["std_ttft_ms"],
       std::sqrt((std::pow(0.0014 - ttft_mean, 2) + std::pow(0.0012 - ttft_mean, 2) + std::pow(0.0011 - ttft_mean, 2)) /
                 3));
  near(m["p50_ttft_ms"], 0.0012);
  near(m["p99_ttft_ms"], 0.0012 + 0.98 * 0.0002);  // rank 0.99 x 2 = 1.98
  near(m["p99.9_ttft_ms"], 0.0012 + 0.998 * 0.0002);
  // TPOT (ms): 0.0010505, 0.00103 (R3 has none).
  near(m["mean_tpot_ms"], (0.0010505 + 0.00103) / 2);
  near(m["median_tpot_ms"], (0.0010505 + 0.00103) / 2);
  near(m["std_tpot_ms"], (0.0010505 - 0.00103) / 2);
  near(m["p99_tpot_ms"], 0.00103 + 0.99 * 0.0000205);
  // ITL: (2101 + 1030) ns over 3 gaps.
  near(m["mean_itl_ms"], 3131e-6 / 3);
  EXPECT_TRUE(m["median_itl_ms"].is_null());
  // E2E (ms): 0.003501, 0.00223, 0.0011.
  near(m["mean_e2el_ms"], (0.003501 + 0.00223 + 0.0011) / 3);
  near(m["median_e2el_ms"], 0.00223);
  near(m["p99_e2el_ms"], 0.00223 + 0.98 * (0.003501 - 0.00223));

  // Goodput: TTFT <= 1250 ns keeps R2 and R3; adding E2E <= 2000 ns keeps R3 only.
  slo.set_ttft_ms(0.00125);
  near((*VllmBenchmarkJson(results, slo, options))["request_goodput"], 2 / duration_s);
  slo.set_e2e_ms(0.002);
  near((*VllmBenchmarkJson(results, slo, options))["request_goodput"], 1 / duration_s);

  // Warm-up: the first request by count, or the first 15 us by time.
  options.warmup_requests = 1;
  const Json warm = *VllmBenchmarkJson(results, {}, options);
  EXPECT_EQ(warm["completed"], 2);
  EXPECT_EQ(warm["warmup_excluded"], 1);
  near(warm["duration"], 11100e-9);  // R2's arrival to R3's finish
  near(warm["mean_ttft_ms"], 0.00115);
  options.warmup_requests = 0;
  options.warmup_s = 15e-6;
  const Json late = *VllmBenchmarkJson(results, {}, options);
  EXPECT_EQ(late["completed"], 1);
  near(late["mean_e2el_ms"], 0.0011);
  EXPECT_TRUE(late["mean_tpot_ms"].is_null());
}

// ITL of the same three requests with their token gaps recorded: R1's decodes 1050 and 1051 ns, R2's 1030 ns,
// R3 none. Pooled and sorted (ms): 0.00103, 0.00105, 0.001051; numpy's mean, median, population std and
// linear-interpolated percentiles of those.
TEST(ReplayHandComputedTest, VllmItlFromTokenGaps) {
  const proto::Results results =
      Replay(TestConfig(100), {MakeRequest(1, 0, 40, 3), MakeRequest(2, 10000, 20, 2), MakeRequest(3, 20000, 10, 1)},
             /*block_tokens=*/0, /*record_token_gaps=*/true);
  EXPECT_THAT(ResultOf(results, 1).token_gaps_ns(), testing::ElementsAre(1050, 1051));
  EXPECT_THAT(ResultOf(results, 2).token_gaps_ns(), testing::ElementsAre(1030));
  EXPECT_TRUE(ResultOf(results, 3).token_gaps_ns().empty());
  VllmMetricsOptions options;
  options.percentiles = {50, 90, 99};
  auto json = VllmBenchmarkJson(results, {}, options);
  ASSERT_TRUE(json.ok()) << json.status();
  const Json& m = *json;
  auto near = [](const Json& value, double want) {
    ASSERT_TRUE(value.is_number()) << value.dump();
    EXPECT_NEAR(value.get<double>(), want, 1e-9 * std::abs(want)) << value.dump();
  };
  const double mean = (0.00103 + 0.00105 + 0.001051) / 3;
  near(m["mean_itl_ms"], mean);
  near(m["median_itl_ms"], 0.00105);
  near(m["std_itl_ms"],
       std::sqrt((std::pow(0.00103 - mean, 2) + std::pow(0.00105 - mean, 2) + std::pow(0.001051 - mean, 2)) / 3));
  near(m["p50_itl_ms"], 0.00105);
  near(m["p90_itl_ms"], 0.00105 + 0.8 * 0.000001);   // rank 0.9 x 2 = 1.8
  near(m["p99_itl_ms"], 0.00105 + 0.98 * 0.000001);  // rank 1.98

  // Without the gaps (the default), only the mean is known.
  const Json plain = *VllmBenchmarkJson(Replay(TestConfig(100), {MakeRequest(1, 0, 40, 3)}), {}, options);
  near(plain["mean_itl_ms"], 0.0010505);
  EXPECT_TRUE(plain["median_itl_ms"].is_null());
  EXPECT_TRUE(plain["p99_itl_ms"].is_null());
}

// A preempted request's gaps include its time off the GPU (the case of ForcedPreemptionByRecompute): B's
// 17th gap, from its 17th token to the one its re-prefill emits, is A's 23 lone decodes plus that prefill;
// every request's gaps add up to its decode span.
TEST(ReplayHandComputedTest, TokenGapsUnderPreemption) {
  const proto::Results results = Replay(TestConfig(4), {MakeRequest(1, 0, 16, 40, {1}), MakeRequest(2, 0, 16, 40, {2})},
                                        16, /*record_token_gaps=*/true);
  const proto::RequestResult& b = ResultOf(results, 2);
  ASSERT_EQ(b.preemptions(), 1);
  ASSERT_EQ(b.token_gaps_ns_size(), 39);
  int64_t off_gpu = 1330;
  for (int64_t i = 17; i <= 39; ++i) off_gpu += 1000 + 10 + (15 + i);
  EXPECT_EQ(b.token_gaps_ns(16), off_gpu);
  EXPECT_EQ(b.token_gaps_ns(0), 1000 + 20 + 2 * 16);  // decode 1 of both, contexts 16
  for (const proto::RequestResult& r : results.requests()) {
    ASSERT_EQ(r.token_gaps_ns_size(), r.output_tokens() - 1) << r.request_id();
    int64_t sum = 0;
    for (int64_t gap : r.token_gaps_ns()) sum += gap;
    EXPECT_EQ(sum, r.e2e_ns() - r.ttft_ns()) << r.request_id();
  }
}

}  // namespace
}  // namespace kvsim
