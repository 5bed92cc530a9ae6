// TTL pinning changes a serving replay where it must: a session's blocks, pinned across its tool call,
// survive an eviction that plain LRU would make, so the session's next turn hits them. The schedule and
// every expected count below are worked out by hand from the fake cost model (1000 ns + 10 ns per new
// token + 1 ns per context token) and the pinning rule of policies/ttl_pin_policy.h.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

constexpr FakeCosts kCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_context_token = 1};
constexpr int64_t kToolNs = 100000;  // tool "f" runs 100 us

Request SessionTurn(uint64_t id, int64_t arrival_ns, int32_t turn, int64_t input_tokens, std::vector<uint64_t> hashes,
                    bool tool_call) {
  Request r = MakeRequest(id, arrival_ns, input_tokens, 1, std::move(hashes));
  r.session_id = 7;
  r.turn = turn;
  r.parent_id = turn > 1 ? static_cast<int64_t>(id) - 1 : -1;
  if (tool_call) r.tool_calls.push_back(ToolCall{"f", kToolNs});
  return r;
}

// 16-token blocks, a GPU of 5 blocks, one output token per request (made by the prefill: no decode, no
// generated-token block).
//   1: session turn 1, blocks {1, 2}, at 0; ends 1320 (1000 + 320) in a tool call to f. f has no
//      observed duration yet: no pin. f's 100 us enters the history at 101320.
//   2: session turn 2, blocks {1, 2, 3}, at 200000: hits 1, 2; ends 201192 (1000 + 160 + 32) in a tool
//      call to f. History {100 us}: tau* = 100 us when T x eta + C > 100 us, so blocks 1, 2, 3 are
//      pinned until 301192.
//   3: no session, blocks {10, 11}, at 210000: takes the 2 free blocks; GPU {1, 2, 3, 10, 11}, full.
//   4: no session, block {20}, at 220000: one eviction. LRU takes block 3: a request releases its last
//      block first, so 3 is the least recently used. With the pin, block 10 (the least recently used
//      unpinned one; 11 was released after it).
//   5: session turn 3, blocks {1, 2, 3, 4} (56 tokens, the last block 8: 4 + 1 blocks to complete, which
//      fits), at 310000, after f returned. With the pin: prefix 1, 2, 3 resident (48 tokens), 8 tokens
//      computed at context 48: TTFT 1000 + 80 + 48 = 1128. Without: block 3 is gone, so the prefix hit is
//      1, 2 (32 tokens) and 24 tokens are computed at context 32: 1000 + 240 + 32 = 1272.
std::vector<Request> Trace() {
  Request other3 = MakeRequest(3, 210000, 32, 1, {10, 11});
  Request other4 = MakeRequest(4, 220000, 16, 1, {20});
  return {SessionTurn(1, 0, 1, 32, {1, 2}, true), SessionTurn(2, 200000, 2, 48, {1, 2, 3}, true), other3, other4,
          SessionTurn(5, 310000, 3, 56, {1, 2, 3, 4}, false)};
}

// `ttl`: wrap LRU in TTL pinning with C = 1 ns per block and T x eta = 1 ms x `queueing_weight`.
proto::Results Replay(bool ttl, double queueing_weight) {
  proto::ExperimentConfig config = TestConfig(5);
  config.mutable_eviction()->set_name("lru");
  if (ttl) {
    proto::TtlPinParams* pin = config.mutable_eviction()->mutable_ttl_pin();
    pin->set_default_restore_ns(1);
    pin->set_queueing_delay_ns(1000000);
    pin->set_queueing_weight(queueing_weight);
  }
  FakeCostModel cost(kCosts);
  VectorTraceReader reader(Trace(), TraceInfo{"test", "vector", 16});
  auto output = RunReplay(config, cost, &reader, ReplayOptions());
  EXPECT_TRUE(output.ok()) << output.status();
  return output.ok() ? output->results : proto::Results();
}

// The schedule the comment above relies on, the same in every run.
void ExpectCommonSchedule(const proto::Results& results) {
  EXPECT_EQ(ResultOf(results, 1).ttft_ns(), 1320);
  EXPECT_EQ(ResultOf(results, 2).ttft_ns(), 1192);
  EXPECT_EQ(ResultOf(results, 2).prefix_reused_tokens(), 32);
  EXPECT_EQ(ResultOf(results, 3).recomputed_tokens(), 32);
  EXPECT_EQ(ResultOf(results, 4).recomputed_tokens(), 16);
}

// The session's third turn (request 5): what it found cached and what it recomputed.
void ExpectTurn3(const proto::Results& results, int64_t prefix_reused_tokens, int64_t reused_blocks,
                 int64_t recomputed_tokens, int64_t ttft_ns) {
  const proto::RequestResult& turn3 = ResultOf(results, 5);
  EXPECT_EQ(turn3.prefix_reused_tokens(), prefix_reused_tokens);
  EXPECT_EQ(turn3.reused_blocks(), reused_blocks);
  EXPECT_EQ(turn3.recomputed_tokens(), recomputed_tokens);
  EXPECT_EQ(turn3.ttft_ns(), ttft_ns);
}

TEST(TtlPinReplayTest, PinKeepsTheSessionsBlocksAcrossTheToolCall) {
  const proto::Results results = Replay(/*ttl=*/true, /*queueing_weight=*/1);
  ExpectCommonSchedule(results);
  ExpectTurn3(results, /*prefix_reused_tokens=*/48, /*reused_blocks=*/3, /*recomputed_tokens=*/8, /*ttft_ns=*/1128);
}

TEST(TtlPinReplayTest, LruEvictsThemAndTheNextTurnRecomputes) {
  const proto::Results results = Replay(/*ttl=*/false, 0);
  ExpectCommonSchedule(results);
  ExpectTurn3(results, /*prefix_reused_tokens=*/32, /*reused_blocks=*/2, /*recomputed_tokens=*/24, /*ttft_ns=*/1272);
}

TEST(TtlPinReplayTest, NoPinWhenTheBenefitIsBelowTheToolDuration) {
  // eta = 0: T x eta + C = 3 ns < 100 us, so tau* = 0 and the replay is plain LRU's.
  const proto::Results results = Replay(/*ttl=*/true, /*queueing_weight=*/0);
  ExpectCommonSchedule(results);
  ExpectTurn3(results, /*prefix_reused_tokens=*/32, /*reused_blocks=*/2, /*recomputed_tokens=*/24, /*ttft_ns=*/1272);
}

}  // namespace
}  // namespace kvsim
