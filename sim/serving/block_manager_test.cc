#include "sim/serving/block_manager.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/request_state.h"
#include "sim/serving/testing/fake_cost_model.h"

namespace kvsim {
namespace {

// Blocks of 16 tokens and 100 bytes; transfers cost tier latency + 1 ns per byte.
BlockManagerOptions Options(int64_t gpu_blocks) {
  BlockManagerOptions options;
  options.gpu_capacity_blocks = gpu_blocks;
  options.block_tokens = 16;
  options.block_bytes = 100;
  options.restore_rule = proto::RESTORE_RULE_RELOAD;
  options.policy.set_name("test_lru");
  return options;
}

proto::TierConfig Host(int64_t blocks, int64_t latency_ns) {
  proto::TierConfig tier;
  tier.set_kind(proto::TIER_KIND_HOST);
  tier.set_capacity_bytes(blocks * 100);
  tier.set_latency_ns(latency_ns);
  return tier;
}

RequestState MakeState(uint64_t id, int64_t input_tokens, std::vector<uint64_t> hashes) {
  RequestState state;
  state.request.request_id = id;
  state.request.input_tokens = input_tokens;
  state.request.output_tokens = 1;
  state.request.block_hashes = std::move(hashes);
  state.request.block_tokens = 16;
  state.prefill_target_tokens = input_tokens;
  return state;
}

class BlockManagerTest : public testing::Test {
 protected:
  void Make(BlockManagerOptions options,
            FakeCosts costs = {.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_byte = 1}) {
    cost_ = std::make_unique<FakeCostModel>(costs);
    auto made = BlockManager::Create(options, cost_.get());
    ASSERT_TRUE(made.ok()) << made.status();
    blocks_ = std::move(*made);
  }
  // Admits, computes the whole prefill, publishes and releases (a request that ran to completion).
  void RunToCompletion(RequestState* state, SimTime now_ns) {
    ASSERT_TRUE(blocks_->Admit(state, now_ns));
    state->AdvanceCompute(state->remaining_compute_tokens());
    blocks_->Publish(state, now_ns);
    blocks_->Release(state, now_ns);
  }

  std::unique_ptr<FakeCostModel> cost_;
  std::unique_ptr<BlockManager> blocks_;
};

TEST_F(BlockManagerTest, ReusesPublishedPrefixAndComputesTheRest) {
  Make(Options(10));
  RequestState a = MakeState(1, 32, {1, 2});
  RunToCompletion(&a, 0);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 2);  // both cached, unpinned
  EXPECT_EQ(blocks_->gpu_pinned_blocks(), 0);
  EXPECT_TRUE(blocks_->CheckIdle().ok());

  RequestState b = MakeState(2, 40, {1, 3, 4});
  ASSERT_TRUE(blocks_->Admit(&b, 10));
  EXPECT_EQ(b.reused_tokens, 16);
  EXPECT_EQ(b.reused_blocks, 1);
  EXPECT_EQ(b.prefix_potential_tokens, 16);
  ASSERT_EQ(b.compute_runs().size(), 1u);
  EXPECT_EQ(b.compute_runs()[0].start, 16);
  EXPECT_EQ(b.compute_runs()[0].length, 24);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 4);    // 2 cached + 2 private
  EXPECT_EQ(blocks_->gpu_pinned_blocks(), 3);  // block 1 and the 2 private ones
  // While b holds blocks the leak check fails, naming what is held.
  const absl::Status held = blocks_->CheckIdle();
  EXPECT_EQ(held.code(), absl::StatusCode::kInternal);
  EXPECT_NE(held.message().find("block leak"), std::string::npos) << held;
  blocks_->Release(&b, 20);  // before its prefill ran: the private blocks are freed, not cached
  EXPECT_EQ(blocks_->gpu_used_blocks(), 2);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

TEST_F(BlockManagerTest, FailedAdmissionChangesNothing) {
  Make(Options(4));
  RequestState a = MakeState(1, 64, {1, 2, 3, 4});
  ASSERT_TRUE(blocks_->Admit(&a, 0));
  RequestState b = MakeState(2, 16, {5});
  EXPECT_FALSE(blocks_->Admit(&b, 0));
  EXPECT_TRUE(b.block_entries.empty());
  EXPECT_FALSE(b.potentials_known);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 4);
}

TEST_F(BlockManagerTest, ARequestWithoutHashesHoldsItsBlocksPrivatelyWithoutIds) {
  Make(Options(10));
  RequestState a = MakeState(7, 40, {});
  ASSERT_TRUE(blocks_->Admit(&a, 0));
  EXPECT_TRUE(a.unique_blocks);
  EXPECT_TRUE(a.request.block_hashes.empty());                         // no ids made
  EXPECT_EQ(a.block_entries, std::vector<int32_t>(3, kPrivateBlock));  // ceil(40 / 16), all private
  EXPECT_EQ(a.private_blocks, 3);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 3);
  EXPECT_EQ(blocks_->BlocksToComplete(a.request), 3 + 1);  // and its one output token's block
  // Its prefill offers nothing to the cache: a second request without hashes, of the same length,
  // reuses nothing, and once both finish the GPU is empty (their blocks were private).
  a.AdvanceCompute(40);
  blocks_->Publish(&a, 1);
  RequestState b = MakeState(8, 40, {});
  ASSERT_TRUE(blocks_->Admit(&b, 2));
  EXPECT_EQ(b.reused_blocks, 0);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 6);
  blocks_->Release(&a, 3);
  blocks_->Release(&b, 3);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 0);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

TEST_F(BlockManagerTest, EvictsTheLeastRecentlyReleasedBlock) {
  Make(Options(3));
  RequestState a = MakeState(1, 16, {1});
  RunToCompletion(&a, 0);
  RequestState b = MakeState(2, 16, {2});
  RunToCompletion(&b, 1);
  RequestState c = MakeState(3, 32, {3, 5});  // needs 2 blocks, 1 free: evicts block 1 (released first)
  ASSERT_TRUE(blocks_->Admit(&c, 2));
  EXPECT_EQ(blocks_->tier_stats()[0].evicted_blocks, 1);
  EXPECT_EQ(blocks_->tier_stats()[0].dropped_blocks, 1);
  Request probe;
  probe.block_hashes = {1};
  EXPECT_EQ(blocks_->GpuPrefixBlocks(probe), 0);
  probe.block_hashes = {2};
  EXPECT_EQ(blocks_->GpuPrefixBlocks(probe), 1);
}

TEST_F(BlockManagerTest, ReportsEachTiersTransferBytesByDirection) {
  BlockManagerOptions options = Options(1);
  options.lower_tiers = {Host(2, 50)};
  options.gpu_evict_action = proto::EVICT_ACTION_DEMOTE;
  Make(options);
  RequestState a = MakeState(1, 16, {1});
  RunToCompletion(&a, 0);
  RequestState b = MakeState(2, 16, {2});
  ASSERT_TRUE(blocks_->Admit(&b, 1));  // block 1 (100 bytes) offloaded to the host
  std::vector<TierTransfer> transfers;
  EXPECT_EQ(blocks_->TakeTransferNs(&transfers), 150);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_EQ(transfers[0].tier, 1);
  EXPECT_EQ(transfers[0].tier_name, blocks_->tier_stats()[1].name);
  EXPECT_EQ(transfers[0].load_bytes, 0);
  EXPECT_EQ(transfers[0].offload_bytes, 100);
  EXPECT_EQ(transfers[0].duration_ns, 150);
  b.AdvanceCompute(16);
  blocks_->Publish(&b, 2);
  blocks_->Release(&b, 2);
  RequestState c = MakeState(3, 16, {1});
  ASSERT_TRUE(blocks_->Admit(&c, 3));  // block 1 loaded back (100 bytes), block 2 offloaded (100 bytes)
  EXPECT_EQ(blocks_->TakeTransferNs(&transfers), 250);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_EQ(transfers[0].load_bytes, 100);
  EXPECT_EQ(transfers[0].offload_bytes, 100);
  EXPECT_EQ(transfers[0].duration_ns, 250);
  EXPECT_EQ(blocks_->TakeTransferNs(&transfers), 0);  // nothing moved since
  EXPECT_TRUE(transfers.empty());
  blocks_->Release(&c, 4);
}

TEST_F(BlockManagerTest, DemotesToHostAndReloads) {
  BlockManagerOptions options = Options(1);
  options.lower_tiers = {Host(2, 50)};
  options.gpu_evict_action = proto::EVICT_ACTION_DEMOTE;
  Make(options);
  RequestState a = MakeState(1, 16, {1});
  RunToCompletion(&a, 0);
  RequestState b = MakeState(2, 16, {2});
  ASSERT_TRUE(blocks_->Admit(&b, 1));  // evicts block 1 to the host
  EXPECT_EQ(blocks_->host_used_blocks(), 1);
  EXPECT_EQ(blocks_->TakeTransferNs(), 50 + 100);  // latency + 100 bytes x 1 ns
  b.AdvanceCompute(16);
  blocks_->Publish(&b, 2);
  blocks_->Release(&b, 2);

  RequestState c = MakeState(3, 16, {1});
  ASSERT_TRUE(blocks_->Admit(&c, 3));  // block 1 comes back; block 2 goes down
  EXPECT_EQ(c.reloaded_tokens, 16);
  EXPECT_EQ(c.recomputed_tokens, 1);               // a fully reused prompt computes its last token
  EXPECT_EQ(blocks_->TakeTransferNs(), 50 + 200);  // one transfer of 200 bytes to and from the host
  EXPECT_EQ(blocks_->tier_stats()[1].reloaded_blocks, 1);
  EXPECT_EQ(blocks_->tier_stats()[1].demoted_in_blocks, 2);
  blocks_->Release(&c, 4);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

TEST_F(BlockManagerTest, CheaperRuleRecomputesWhenTheTransferIsSlower) {
  BlockManagerOptions options = Options(1);
  options.lower_tiers = {Host(2, 0)};
  options.gpu_evict_action = proto::EVICT_ACTION_DEMOTE;
  options.restore_rule = proto::RESTORE_RULE_CHEAPER;
  // Reload: 100 bytes x 1000 ns = 100000 ns. Recompute of block 0: 16 tokens x 10 ns = 160 ns.
  Make(options, {.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_byte = 1000});
  RequestState a = MakeState(1, 16, {1});
  RunToCompletion(&a, 0);
  RequestState b = MakeState(2, 16, {2});
  RunToCompletion(&b, 1);  // block 1 demoted
  blocks_->TakeTransferNs();
  RequestState c = MakeState(3, 16, {1});
  ASSERT_TRUE(blocks_->Admit(&c, 2));
  EXPECT_EQ(c.reloaded_tokens, 0);
  EXPECT_EQ(c.recomputed_tokens, 16);
  EXPECT_EQ(blocks_->tier_stats()[1].reloaded_blocks, 0);
  blocks_->Release(&c, 3);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

TEST_F(BlockManagerTest, SwapOutAndBackInKeepsComputedTokens) {
  BlockManagerOptions options = Options(10);
  options.lower_tiers = {Host(10, 0)};
  Make(options);
  RequestState a = MakeState(1, 32, {1, 2});
  ASSERT_TRUE(blocks_->Admit(&a, 0));
  a.AdvanceCompute(20);  // block 1 complete, block 2 has 4 of 16 tokens
  blocks_->Publish(&a, 1);
  a.Admit(0);  // phase prefill, as the scheduler does
  ASSERT_TRUE(blocks_->SwapOut(&a, 2));
  EXPECT_TRUE(a.swapped);
  EXPECT_EQ(a.swap_blocks, 2);
  EXPECT_EQ(a.swapped_tokens, 20);
  EXPECT_EQ(blocks_->host_used_blocks(), 2);
  EXPECT_EQ(blocks_->gpu_used_blocks(), 1);  // block 1 stays cached, unpinned
  EXPECT_EQ(blocks_->TakeTransferNs(), 200);

  ASSERT_TRUE(blocks_->Admit(&a, 3));
  EXPECT_FALSE(a.swapped);
  EXPECT_EQ(blocks_->host_used_blocks(), 0);
  ASSERT_EQ(a.compute_runs().size(), 1u);  // only the rest of block 2
  EXPECT_EQ(a.compute_runs()[0].start, 20);
  EXPECT_EQ(a.compute_runs()[0].length, 12);
  EXPECT_EQ(blocks_->TakeTransferNs(), 200);
  blocks_->Release(&a, 4);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

TEST_F(BlockManagerTest, GrowAllocatesGeneratedTokenBlocksUntilFull) {
  Make(Options(3));
  RequestState a = MakeState(1, 16, {1});
  ASSERT_TRUE(blocks_->Admit(&a, 0));
  EXPECT_TRUE(blocks_->Grow(&a, 17, 1));  // first generated token: a tail block
  EXPECT_EQ(a.tail_blocks, 1);
  EXPECT_TRUE(blocks_->Grow(&a, 32, 1));  // same block
  EXPECT_EQ(a.tail_blocks, 1);
  EXPECT_TRUE(blocks_->Grow(&a, 48, 1));
  EXPECT_EQ(blocks_->gpu_used_blocks(), 3);
  EXPECT_FALSE(blocks_->Grow(&a, 49, 1));  // a fourth block does not exist
  EXPECT_EQ(a.tail_blocks, 2);
  blocks_->Release(&a, 2);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
  EXPECT_EQ(blocks_->BlocksToComplete(a.request), 1 + 1);  // 16 prompt tokens + 1 output token
}

TEST_F(BlockManagerTest, UnknownPolicyIsAnError) {
  BlockManagerOptions options = Options(4);
  options.policy.set_name("no_such_policy");
  auto made = BlockManager::Create(options, nullptr);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(made.status().message().find("test_lru"), std::string::npos) << made.status();
}

// Records the request-end records the block manager passes to its GPU policy.
std::vector<RequestEndInfo>& RecordedEnds() {
  static auto* ends = new std::vector<RequestEndInfo>();
  return *ends;
}

class EndRecordingLru final : public EvictionPolicy {
 public:
  absl::string_view Name() const override { return "test_end_recording"; }
  void OnInsert(BlockId block, const AccessInfo& info) override { blocks_.push_back(block); }
  void OnAccess(BlockId block, const AccessInfo& info) override {}
  void OnRemove(BlockId block) override { blocks_.erase(std::find(blocks_.begin(), blocks_.end(), block)); }
  void OnRequestEnd(const RequestEndInfo& end) override { RecordedEnds().push_back(end); }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override {
    for (BlockId b : blocks_) {
      if (evictable(b)) return b;
    }
    return absl::nullopt;
  }
  std::vector<BlockId> blocks_;
};

KVSIM_REGISTER_EVICTION_POLICY("test_end_recording", EndRecordingLru);

// A request that ends in two tool calls tells the policy the first tool's name and the time the session
// is away: both calls' durations (3 s + 2 s), as cache replay does (MakeRequestEndInfo).
TEST_F(BlockManagerTest, RequestEndCarriesTheSumOfItsToolCalls) {
  BlockManagerOptions options = Options(8);
  options.policy.set_name("test_end_recording");
  Make(options);
  RequestState state = MakeState(7, 32, {1, 2});
  state.request.session_id = 4;
  state.request.tool_calls = {{"search", 3'000'000'000}, {"read", 2'000'000'000}};
  RunToCompletion(&state, 100);
  RecordedEnds().clear();
  blocks_->EndRequest(state, 500);
  ASSERT_EQ(RecordedEnds().size(), 1u);
  const RequestEndInfo& end = RecordedEnds()[0];
  EXPECT_EQ(end.request_id, 7u);
  EXPECT_EQ(end.session_id, 4);
  EXPECT_EQ(end.time_ns, 500);
  EXPECT_TRUE(end.ends_in_tool_call);
  EXPECT_EQ(end.tool_name, "search");
  EXPECT_EQ(end.tool_duration_ns, 5'000'000'000);
}

// A session's next request is classified at the entries its previous one held (its hint) only where
// those entries still hold its blocks: here the first turn's blocks were evicted and their entries
// reused by other blocks before the second turn, which must reuse nothing.
TEST_F(BlockManagerTest, StaleSessionHintIsNotReused) {
  Make(Options(2));
  RequestState turn1 = MakeState(1, 32, {1, 2});
  turn1.request.session_id = 7;
  RunToCompletion(&turn1, 0);
  RequestState other = MakeState(2, 32, {3, 4});  // evicts blocks 1 and 2, takes their entries
  RunToCompletion(&other, 1);
  RequestState turn2 = MakeState(3, 32, {1, 2});
  turn2.request.session_id = 7;
  ASSERT_TRUE(blocks_->Admit(&turn2, 2));
  EXPECT_EQ(turn2.reused_blocks, 0);
  EXPECT_EQ(turn2.prefix_potential_blocks, 0);
  blocks_->Release(&turn2, 3);
  // A hint that still holds: the second turn reuses what the first left.
  RequestState turn3 = MakeState(4, 32, {3, 4});
  turn3.request.session_id = 8;
  RunToCompletion(&turn3, 4);  // both hits; the hint of session 8 is entries of blocks 3, 4
  RequestState turn4 = MakeState(5, 32, {3, 4});
  turn4.request.session_id = 8;
  ASSERT_TRUE(blocks_->Admit(&turn4, 5));
  EXPECT_EQ(turn4.reused_blocks, 2);
  blocks_->Release(&turn4, 6);
  EXPECT_TRUE(blocks_->CheckIdle().ok());
}

// Session hints change no result: two managers run the same random multi-turn sessions (turns that
// extend the previous prompt, conversations that start over with new blocks, evictions, a host tier),
// one with the requests' session ids (classified through hints) and one without (every block looked up),
// and agree on every admission's reuse and potentials and every tier count.
TEST(BlockManagerHintsTest, SameResultsAsLookups) {
  for (bool host : {false, true}) {
    FakeCostModel cost(FakeCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_byte = 1});
    BlockManagerOptions options = Options(24);
    if (host) {
      options.lower_tiers = {Host(16, 50)};
      options.gpu_evict_action = proto::EVICT_ACTION_DEMOTE;
    }
    options.policy.set_name("lru");
    std::unique_ptr<BlockManager> managers[2];
    for (auto& m : managers) {
      auto made = BlockManager::Create(options, &cost);
      ASSERT_TRUE(made.ok()) << made.status();
      m = std::move(*made);
    }
    std::mt19937_64 rng(11);
    std::vector<RequestState> flight[2];
    std::vector<int64_t> turn_blocks(6, 0), epoch(6, 0);
    SimTime now_ns = 0;
    int64_t admitted = 0, reused = 0;
    for (int step = 0; step < 4000; ++step) {
      now_ns += 10;
      if (flight[0].size() < 3 && rng() % 2 == 0) {
        const uint64_t session = rng() % 6;
        if (rng() % 8 == 0 || turn_blocks[session] >= 12) {  // starts over
          ++epoch[session];
          turn_blocks[session] = 0;
        }
        turn_blocks[session] += 1 + static_cast<int64_t>(rng() % 3);
        std::vector<uint64_t> blocks;
        for (int64_t k = 0; k < turn_blocks[session]; ++k) blocks.push_back(session * 100000 + epoch[session] * 100 + k);
        const int64_t tokens = 16 * turn_blocks[session] - static_cast<int64_t>(rng() % 16);
        bool ok[2];
        for (int m = 0; m < 2; ++m) {
          RequestState state = MakeState(step, tokens, blocks);
          state.request.session_id = m == 0 ? static_cast<int64_t>(session) : -1;
          ok[m] = managers[m]->Admit(&state, now_ns);
          if (ok[m]) flight[m].push_back(std::move(state));
        }
        ASSERT_EQ(ok[0], ok[1]) << "step " << step;
        if (ok[0]) {
          ++admitted;
          const RequestState& a = flight[0].back();
          const RequestState& b = flight[1].back();
          reused += a.reused_blocks;
          ASSERT_EQ(a.reused_tokens, b.reused_tokens) << "step " << step;
          ASSERT_EQ(a.reloaded_tokens, b.reloaded_tokens) << "step " << step;
          ASSERT_EQ(a.prefix_potential_tokens, b.prefix_potential_tokens) << "step " << step;
          ASSERT_EQ(a.segment_potential_tokens, b.segment_potential_tokens) << "step " << step;
        }
      } else if (!flight[0].empty()) {
        const size_t i = rng() % flight[0].size();
        const int64_t chunk = 1 + static_cast<int64_t>(rng() % 40);
        for (int m = 0; m < 2; ++m) {
          RequestState& state = flight[m][i];
          state.AdvanceCompute(std::min(chunk, state.remaining_compute_tokens()));
          managers[m]->Publish(&state, now_ns);
          if (state.remaining_compute_tokens() == 0) {
            managers[m]->Release(&state, now_ns);
            flight[m].erase(flight[m].begin() + i);
          }
        }
      }
      for (size_t t = 0; t < managers[0]->tier_stats().size(); ++t) {
        const TierStats& a = managers[0]->tier_stats()[t];
        const TierStats& b = managers[1]->tier_stats()[t];
        ASSERT_EQ(a.cached_blocks, b.cached_blocks) << "step " << step << " tier " << t;
        ASSERT_EQ(a.evicted_blocks, b.evicted_blocks) << "step " << step << " tier " << t;
        ASSERT_EQ(a.reloaded_blocks, b.reloaded_blocks) << "step " << step << " tier " << t;
      }
    }
    // The run exercised hints that hold and hints gone stale.
    EXPECT_GT(admitted, 500);
    EXPECT_GT(reused, 1000);
    EXPECT_GT(managers[0]->tier_stats()[0].evicted_blocks, 500);
  }
}

// Slot ids (the GPU policy numbering blocks by entry slot, with no AccessInfo) choose the same victims as
// the blocks' hashes: two managers, one each way, run the same random requests (shared prefixes, up to
// three in flight, chunked prefills), with and without a host tier, and agree on every admission's reuse,
// every block's residency and every tier count. "lru" is also checked against the independent "test_lru".
struct SlotIdCase {
  const char* policy;
  const char* reference_policy;
  bool host;
};

class SlotIdsTest : public testing::TestWithParam<SlotIdCase> {};

TEST_P(SlotIdsTest, SameVictimsAsHashIds) {
  const SlotIdCase& c = GetParam();
  FakeCostModel cost(FakeCosts{.fixed_ns = 1000, .ns_per_new_token = 10, .ns_per_byte = 1});
  BlockManagerOptions options = Options(24);
  if (c.host) {
    options.lower_tiers = {Host(16, 50)};
    options.gpu_evict_action = proto::EVICT_ACTION_DEMOTE;
  }
  options.policy.set_name(c.policy);
  auto slots = BlockManager::Create(options, &cost);
  ASSERT_TRUE(slots.ok()) << slots.status();
  options.allow_slot_ids = false;
  options.policy.set_name(c.reference_policy);
  auto hashes = BlockManager::Create(options, &cost);
  ASSERT_TRUE(hashes.ok()) << hashes.status();
  BlockManager* managers[2] = {slots->get(), hashes->get()};

  std::mt19937_64 rng(5);
  std::vector<RequestState> flight[2];
  SimTime now_ns = 0;
  int64_t admitted = 0;
  for (int step = 0; step < 3000; ++step) {
    now_ns += 10;
    if (flight[0].size() < 3 && rng() % 2 == 0) {
      const uint64_t session = rng() % 6;
      const int64_t num_blocks = 1 + static_cast<int64_t>(rng() % 10);
      std::vector<uint64_t> blocks;
      for (int64_t k = 0; k < num_blocks; ++k) blocks.push_back(session * 1000 + k);
      const int64_t tokens = 16 * num_blocks - static_cast<int64_t>(rng() % 16);
      bool ok[2];
      for (int m = 0; m < 2; ++m) {
        RequestState state = MakeState(step, tokens, blocks);
        ok[m] = managers[m]->Admit(&state, now_ns);
        if (ok[m]) flight[m].push_back(std::move(state));
      }
      ASSERT_EQ(ok[0], ok[1]) << "step " << step;
      if (ok[0]) {
        ++admitted;
        EXPECT_EQ(flight[0].back().reused_tokens, flight[1].back().reused_tokens) << "step " << step;
        EXPECT_EQ(flight[0].back().reloaded_tokens, flight[1].back().reloaded_tokens) << "step " << step;
      }
    } else if (!flight[0].empty()) {
      const size_t i = rng() % flight[0].size();
      const int64_t chunk = 1 + static_cast<int64_t>(rng() % 40);
      for (int m = 0; m < 2; ++m) {
        RequestState& state = flight[m][i];
        state.AdvanceCompute(std::min(chunk, state.remaining_compute_tokens()));
        managers[m]->Publish(&state, now_ns);
        if (state.remaining_compute_tokens() == 0) {
          managers[m]->Release(&state, now_ns);
          managers[m]->EndRequest(state, now_ns);
          flight[m].erase(flight[m].begin() + i);
        }
      }
    }
    for (uint64_t session = 0; session < 6; ++session) {
      for (uint64_t k = 0; k < 10; ++k) {
        Request probe;
        probe.block_hashes = {session * 1000 + k};
        ASSERT_EQ(managers[0]->GpuPrefixBlocks(probe), managers[1]->GpuPrefixBlocks(probe))
            << "step " << step << " block " << session * 1000 + k;
      }
    }
    for (size_t t = 0; t < managers[0]->tier_stats().size(); ++t) {
      const TierStats& a = managers[0]->tier_stats()[t];
      const TierStats& b = managers[1]->tier_stats()[t];
      ASSERT_EQ(a.cached_blocks, b.cached_blocks) << "step " << step << " tier " << t;
      ASSERT_EQ(a.evicted_blocks, b.evicted_blocks) << "step " << step << " tier " << t;
      ASSERT_EQ(a.dropped_blocks, b.dropped_blocks) << "step " << step << " tier " << t;
      ASSERT_EQ(a.reloaded_blocks, b.reloaded_blocks) << "step " << step << " tier " << t;
    }
  }
  // The run exercised what it compares: many admissions and evictions (and reloads with a host tier).
  EXPECT_GT(admitted, 500);
  EXPECT_GT(managers[0]->tier_stats()[0].evicted_blocks, 500);
  if (c.host) {
    EXPECT_GT(managers[0]->tier_stats()[1].reloaded_blocks, 50);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, SlotIdsTest,
                         testing::Values(SlotIdCase{"lru", "lru", false}, SlotIdCase{"lru", "lru", true},
                                         SlotIdCase{"lru", "test_lru", false}, SlotIdCase{"lru", "test_lru", true},
                                         SlotIdCase{"fifo", "fifo", false}, SlotIdCase{"fifo", "fifo", true},
                                         SlotIdCase{"clock", "clock", false}, SlotIdCase{"clock", "clock", true},
                                         SlotIdCase{"sieve", "sieve", false}, SlotIdCase{"sieve", "sieve", true}),
                         [](const testing::TestParamInfo<SlotIdCase>& info) {
                           return std::string(info.param.policy) + "_vs_" + info.param.reference_policy +
                                  (info.param.host ? "_host" : "");
                         });

}  // namespace
}  // namespace kvsim
