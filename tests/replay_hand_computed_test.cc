// Hand-computed replays: every reported time is the sum of the fake cost model's terms, worked out here
// from the scheduling rules (decodes first, FCFS admission, preempt the newest), independently of the code.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

// iteration = 1000 + 10 per new token + 1 per context token.
constexpr FakeCosts kCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_context_token = 1};

proto::Results Replay(const proto::ExperimentConfig& config, std::vector<Request> requests, int32_t block_tokens = 0) {
  FakeCostModel cost(kCosts);
  VectorTraceReader reader(std::move(requests), TraceInfo{"test", "vector", block_tokens});
  auto output = RunReplay(config, cost, &reader, ReplayOptions{});
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
  EXPECT_EQ(r.tpot_ns(), 0);
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

}  // namespace
}  // namespace kvsim
