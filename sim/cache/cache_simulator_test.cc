#include "sim/cache/cache_simulator.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "policies/policy_factory.h"

namespace kvsim {
namespace {

Request Req(uint64_t id, std::vector<uint64_t> hashes, int64_t input_tokens, int32_t block_tokens = 16) {
  Request r;
  r.request_id = id;
  r.block_hashes = std::move(hashes);
  r.input_tokens = input_tokens;
  r.block_tokens = r.block_hashes.empty() ? 0 : block_tokens;
  return r;
}

CacheRunSpec Spec(const std::string& policy, int64_t capacity) {
  CacheRunSpec spec;
  spec.policy = *ParsePolicySpec(policy);
  spec.capacity_blocks = capacity;
  return spec;
}

std::vector<Request> ThreeRequests() {
  // 40 tokens in 16-token blocks: 16, 16, 8.
  return {Req(0, {1, 2, 3}, 40), Req(1, {1, 2, 4}, 40), Req(2, {5, 1, 2}, 40)};
}

TEST(CacheReplayTest, LruCountsHitsPrefixHitsAndTokens) {
  VectorTraceReader reader(ThreeRequests(), {});
  auto results = RunCacheReplays(&reader, {Spec("lru", 4)}, {});
  ASSERT_TRUE(results.ok()) << results.status();
  const CacheStats& s = (*results)[0].stats;
  // Request 0 misses 1 2 3. Request 1 hits 1 and 2 (both leading: prefix hits), misses 4 (cache now full).
  // Request 2 misses 5 and evicts the least recently used block, 3; then hits 1 and 2 (not prefix hits:
  // block 5 missed first).
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.accesses, 9);
  EXPECT_EQ(s.hits, 4);
  EXPECT_EQ(s.prefix_hits, 2);
  EXPECT_EQ(s.evictions, 1);
  // Tokens: 3 x 40 = 120. Hit tokens: request 1: 16 + 16; request 2: block 1 (16) + block 2 as its last
  // block (8) = 56. Prefix hit tokens: 32.
  EXPECT_EQ(s.tokens, 120);
  EXPECT_EQ(s.hit_tokens, 56);
  EXPECT_EQ(s.prefix_hit_tokens, 32);
  EXPECT_DOUBLE_EQ(s.HitRatio(), 4.0 / 9);
  EXPECT_DOUBLE_EQ(s.TokenHitRatio(), 56.0 / 120);
  EXPECT_EQ((*results)[0].policy_label, "lru");
}

TEST(CacheReplayTest, RecordsVictims) {
  CacheSimulator sim(*CreateEvictionPolicy("lru"), 4);
  std::vector<BlockId> victims;
  sim.RecordVictims(&victims);
  VectorTraceReader reader(ThreeRequests(), {});
  auto trace = CompileTrace(&reader, {});
  ASSERT_TRUE(trace.ok());
  for (int64_t r = 0; r < trace->num_requests(); ++r) sim.ProcessRequest(trace->View(r));
  EXPECT_EQ(victims, std::vector<BlockId>({3}));
  EXPECT_TRUE(sim.IsResident(5));
  EXPECT_FALSE(sim.IsResident(3));
}

TEST(CacheReplayTest, RequestsWithoutHashesGetFreshBlocks) {
  // Two hash-less requests of 33 tokens: 3 blocks of 16 each (16, 16, 1 tokens), never shared.
  VectorTraceReader reader({Req(0, {}, 33), Req(1, {}, 33)}, {});
  CacheReplayOptions options;
  options.block_tokens = 16;
  auto results = RunCacheReplays(&reader, {Spec("lru", 100)}, options);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ((*results)[0].stats.accesses, 6);
  EXPECT_EQ((*results)[0].stats.hits, 0);
  EXPECT_EQ((*results)[0].stats.tokens, 66);
}

TEST(CacheReplayTest, StreamingAndInMemoryRunsAgree) {
  std::vector<Request> requests;
  for (uint64_t i = 0; i < 200; ++i) {
    requests.push_back(Req(i, {i % 3, 100 + i % 13, 200 + i % 5, 300 + i % 11}, 64));
  }
  VectorTraceReader streamed(requests, {});
  auto a = RunCacheReplays(&streamed, {Spec("lru", 16), Spec("fifo", 16)}, {});
  VectorTraceReader loaded(requests, {});
  auto trace = CompileTrace(&loaded, {});
  ASSERT_TRUE(a.ok() && trace.ok());
  CacheReplayOptions options;
  options.num_threads = 2;
  auto b = RunCacheReplaysOnTrace(&*trace, {Spec("lru", 16), Spec("fifo", 16)}, options);
  ASSERT_TRUE(b.ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ((*a)[i].stats.hits, (*b)[i].stats.hits);
    EXPECT_EQ((*a)[i].stats.prefix_hits, (*b)[i].stats.prefix_hits);
    EXPECT_GT((*a)[i].stats.hits, 0);
  }
}

TEST(CacheReplayTest, NextUseIsTheNextAccessOfTheSameBlock) {
  VectorTraceReader reader(ThreeRequests(), {});
  auto trace = CompileTrace(&reader, {});
  ASSERT_TRUE(trace.ok());
  ComputeNextUse(&*trace);
  // Stream: 1 2 3 | 1 2 4 | 5 1 2 (clocks 0..8).
  const int64_t N = AccessInfo::kNever;
  EXPECT_EQ(trace->next_use, std::vector<int64_t>({3, 4, N, 7, 8, N, N, N, N}));
}

TEST(CacheReplayTest, InputErrorsAreReported) {
  VectorTraceReader reader(ThreeRequests(), {});
  auto zero = RunCacheReplays(&reader, {Spec("lru", 0)}, {});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("capacity_blocks"), absl::string_view::npos);

  CacheReplayOptions options;
  options.block_tokens = 0;
  VectorTraceReader reader2(ThreeRequests(), {});
  auto bad = RunCacheReplays(&reader2, {Spec("lru", 4)}, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("block_tokens"), absl::string_view::npos);

  VectorTraceReader reader3(ThreeRequests(), {});
  auto unknown = RunCacheReplays(&reader3, {Spec("nope", 4)}, {});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("nope @ 4"), absl::string_view::npos);

  Request broken = Req(9, {1, 2}, 10);
  broken.block_tokens = 0;
  VectorTraceReader reader4({broken}, {});
  auto no_size = RunCacheReplays(&reader4, {Spec("lru", 4)}, {});
  EXPECT_EQ(no_size.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_size.status().message().find("request 9"), absl::string_view::npos);
}

// Residency from the policy's own index (the fast path) and from the simulator's index agree for every
// policy and wrapper: same statistics and the same victims.
TEST(CacheReplayTest, PolicyResidencyMatchesTheSimulatorsIndex) {
  std::vector<Request> requests;
  uint64_t x = 12345;
  for (uint64_t i = 0; i < 3000; ++i) {
    std::vector<uint64_t> hashes = {i % 4};
    for (int k = 0; k < 4; ++k) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      hashes.push_back(10 + (x >> 33) % 700);
    }
    requests.push_back(Req(i, hashes, 16 * 5));
    requests.back().session_id = static_cast<int64_t>(i % 9);
    requests.back().arrival_ns = static_cast<int64_t>(i) * 100;
    requests.back().tool_calls.push_back({"t", 250});
  }
  VectorTraceReader reader(requests, {});
  auto trace = CompileTrace(&reader, {});
  ASSERT_TRUE(trace.ok());
  ComputeNextUse(&*trace);
  for (const std::string& name : EvictionPolicyNames()) {
    for (const char* modifier : {"", "+leaf_first", "+ttl"}) {
      const std::string label = name + modifier;
      // Variants: the policy's index or the simulator's, each with hashes or with dense ids. With its own
      // index a plain LRU, FIFO, SIEVE, CLOCK, ARC, S3-FIFO or Belady runs the loop compiled for its
      // class; with the simulator's index (and with a wrapper) the loop through EvictionPolicy.
      std::vector<BlockId> victims[4];
      CacheStats stats[4];
      for (int variant = 0; variant < 4; ++variant) {
        const bool own = variant % 2 == 1, dense = variant >= 2;
        CacheSimulator sim(*CreateEvictionPolicyFromConfig(*ParsePolicySpec(label)), 50, RestoreCost::kPosition, own);
        if (dense) sim.UseDenseIds(&trace->distinct_blocks);
        sim.RecordVictims(&victims[variant]);
        for (int64_t r = 0; r < trace->num_requests(); ++r) sim.ProcessRequest(trace->View(r));
        stats[variant] = sim.stats();
      }
      for (int variant = 1; variant < 4; ++variant) {
        EXPECT_EQ(stats[0].hits, stats[variant].hits) << label << " variant " << variant;
        EXPECT_EQ(stats[0].prefix_hits, stats[variant].prefix_hits) << label << " variant " << variant;
        EXPECT_EQ(stats[0].evictions, stats[variant].evictions) << label << " variant " << variant;
        EXPECT_EQ(stats[0].bypasses, stats[variant].bypasses) << label << " variant " << variant;
        EXPECT_EQ(stats[0].hit_tokens, stats[variant].hit_tokens) << label << " variant " << variant;
        EXPECT_EQ(stats[0].restore_cost_saved, stats[variant].restore_cost_saved) << label << " variant " << variant;
        EXPECT_EQ(victims[0], victims[variant]) << label << " variant " << variant;
      }
      EXPECT_GT(stats[0].hits, 0) << label;
    }
  }
}

TEST(CacheReplayTest, DenseIdsNumberBlocksByFirstUseAndKeepTheNextUses) {
  std::vector<Request> requests = {Req(0, {900, 7, 300}, 48), Req(1, {7, 900, 5}, 48), Req(2, {300, 5, 7}, 48)};
  VectorTraceReader reader(requests, {});
  auto trace = CompileTrace(&reader, {});
  ASSERT_TRUE(trace.ok());
  // First uses: 900, 7, 300, then 5: ids 0..3.
  EXPECT_EQ(trace->distinct_blocks, (std::vector<BlockId>{900, 7, 300, 5}));
  EXPECT_EQ(trace->dense_blocks, (std::vector<uint32_t>{0, 1, 2, 1, 0, 3, 2, 3, 1}));
  CompiledTrace hashed = *trace;
  hashed.dense_blocks.clear();  // the hash-map pass
  ComputeNextUse(&*trace);
  ComputeNextUse(&hashed);
  const int64_t never = AccessInfo::kNever;
  EXPECT_EQ(trace->next_use, (std::vector<int64_t>{4, 3, 6, 8, never, 7, never, never, never}));
  EXPECT_EQ(trace->next_use, hashed.next_use);
}

// S3-FIFO's step that evicts two blocks (a block moving into a full main queue evicts from it first)
// runs as the paper's INSERT does: both go before the insert, leaving a free slot.
TEST(CacheReplayTest, EvictsWhileThePolicyHasAVictimPending) {
  proto::EvictionPolicyConfig config;
  config.set_name("s3fifo");
  config.mutable_s3fifo()->set_small_queue_ratio(0.5);
  CacheSimulator sim(*CreateEvictionPolicyFromConfig(config), 4);
  std::vector<BlockId> victims;
  sim.RecordVictims(&victims);
  // The hand-computed sequence of policies/s3fifo_policy_test.cc (FollowsAlgorithmOneByHand), one block
  // per request.
  const std::vector<BlockId> accesses = {1, 2, 1, 1, 3, 4, 5, 2, 4, 4, 5, 5, 6, 7, 8};
  int32_t tokens = 16;
  for (size_t i = 0; i < accesses.size(); ++i) {
    RequestView view;
    view.request_id = i;
    view.block_tokens = 16;
    view.blocks = &accesses[i];
    view.tokens = &tokens;
    view.num_blocks = 1;
    sim.ProcessRequest(view);
    if (accesses[i] == 6) {  // 2 and 1 evicted for 6
      EXPECT_EQ(sim.resident_blocks(), 3);
    }
  }
  EXPECT_EQ(victims, (std::vector<BlockId>{2, 3, 2, 1, 6}));
  EXPECT_EQ(sim.stats().evictions, 5);
  EXPECT_EQ(sim.stats().hits, 6);
}

TEST(CacheReplayTest, BeladyRunsWithTheOraclePrePass) {
  VectorTraceReader reader(ThreeRequests(), {});
  auto results = RunCacheReplays(&reader, {Spec("belady", 4), Spec("lru", 4)}, {});
  ASSERT_TRUE(results.ok()) << results.status();
  // At request 2's miss on 5 (never used again) the cache is full: Belady bypasses it, keeping 1 and 2.
  EXPECT_EQ((*results)[0].stats.hits, 4);
  EXPECT_EQ((*results)[0].stats.bypasses, 1);
  EXPECT_EQ((*results)[0].stats.evictions, 0);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// A small random trace: 80 requests of 1-6 blocks drawn from 24 ids, last blocks partial.
std::vector<Request> RandomSmallTrace() {
  std::mt19937_64 rng(7);  // the engine's output sequence is fixed by the standard
  std::vector<Request> requests;
  for (uint64_t id = 0; id < 80; ++id) {
    const int64_t blocks = 1 + static_cast<int64_t>(rng() % 6);
    std::vector<uint64_t> hashes;
    for (int64_t k = 0; k < blocks; ++k) hashes.push_back(1 + rng() % 24);
    requests.push_back(Req(id, hashes, blocks * 16 - static_cast<int64_t>(rng() % 16)));
  }
  return requests;
}

// Brute force: each access's cost is (tokens before it in the prompt) + (its tokens); hits are found by
// replaying residency from the victims the simulator recorded (a plain vector, scanned linearly).
void BruteForceCosts(const std::vector<Request>& requests, const std::vector<BlockId>& victims, int64_t* total,
                     int64_t* saved) {
  std::vector<BlockId> resident;
  size_t next_victim = 0;
  *total = *saved = 0;
  for (const Request& r : requests) {
    for (size_t k = 0; k < r.block_hashes.size(); ++k) {
      const int64_t before = static_cast<int64_t>(k) * 16;
      const int64_t tokens = k + 1 < r.block_hashes.size() ? 16 : r.input_tokens - before;
      const int64_t cost = before + tokens;
      *total += cost;
      const BlockId block = r.block_hashes[k];
      if (std::find(resident.begin(), resident.end(), block) != resident.end()) {
        *saved += cost;
        continue;
      }
      if (static_cast<int64_t>(resident.size()) == 5) {  // full: the simulator's next victim leaves
        resident.erase(std::find(resident.begin(), resident.end(), victims[next_victim++]));
      }
      resident.push_back(block);
    }
  }
}

TEST(CostWeightedReplayTest, RestoreCostSavedEqualsBruteForce) {
  const std::vector<Request> requests = RandomSmallTrace();
  for (const char* policy : {"lru", "asym", "gdsf", "s3fifo"}) {
    proto::EvictionPolicyConfig config = *ParsePolicySpec(policy);
    CacheSimulator sim(*CreateEvictionPolicyFromConfig(config), 5, ResolveRestoreCost(RestoreCost::kAuto, config));
    std::vector<BlockId> victims;
    sim.RecordVictims(&victims);
    VectorTraceReader reader(requests, {});
    auto trace = CompileTrace(&reader, {});
    ASSERT_TRUE(trace.ok());
    for (int64_t r = 0; r < trace->num_requests(); ++r) sim.ProcessRequest(trace->View(r));
    int64_t total = 0, saved = 0;
    BruteForceCosts(requests, victims, &total, &saved);
    EXPECT_EQ(sim.stats().restore_cost, total) << policy;
    EXPECT_EQ(sim.stats().restore_cost_saved, saved) << policy;
    EXPECT_GT(saved, 0) << policy;
  }
}

TEST(CostWeightedReplayTest, CostAwarePoliciesSeePositionCostByDefault) {
  EXPECT_EQ(ResolveRestoreCost(RestoreCost::kAuto, *ParsePolicySpec("asym")), RestoreCost::kPosition);
  EXPECT_EQ(ResolveRestoreCost(RestoreCost::kAuto, *ParsePolicySpec("gdsf")), RestoreCost::kPosition);
  EXPECT_EQ(ResolveRestoreCost(RestoreCost::kAuto, *ParsePolicySpec("lru")), RestoreCost::kUniform);
  EXPECT_EQ(ResolveRestoreCost(RestoreCost::kUniform, *ParsePolicySpec("asym")), RestoreCost::kUniform);
  // With the default options asym is no longer LRU on a trace where positions differ, and it is exactly
  // the position-cost run.
  const std::vector<Request> requests = RandomSmallTrace();
  auto run = [&](RestoreCost cost) {
    VectorTraceReader reader(requests, {});
    CacheReplayOptions options;
    options.restore_cost = cost;
    options.num_threads = 1;
    auto results = RunCacheReplays(&reader, {Spec("lru", 5), Spec("asym", 5)}, options);
    EXPECT_TRUE(results.ok()) << results.status();
    return *results;
  };
  const std::vector<CacheRunResult> by_default = run(CacheReplayOptions().restore_cost);
  const std::vector<CacheRunResult> position = run(RestoreCost::kPosition);
  const std::vector<CacheRunResult> uniform = run(RestoreCost::kUniform);
  EXPECT_NE(by_default[1].stats.hits, by_default[0].stats.hits);
  EXPECT_EQ(by_default[1].stats.hits, position[1].stats.hits);
  EXPECT_EQ(by_default[1].stats.restore_cost_saved, position[1].stats.restore_cost_saved);
  EXPECT_EQ(uniform[1].stats.hits, uniform[0].stats.hits);  // asym under uniform cost is LRU
}

}  // namespace
}  // namespace kvsim
