#include "sim/cache/cache_batches.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "policies/policy_factory.h"
#include "traces/trace_io.h"

namespace kvsim {
namespace {

constexpr char kMooncake[] = "traces/data/mooncake_synthetic.jsonl";

CacheRunSpec Spec(const std::string& policy, int64_t capacity) {
  CacheRunSpec spec;
  spec.policy = *ParsePolicySpec(policy);
  spec.capacity_blocks = capacity;
  return spec;
}

TEST(CacheBatchesTest, EstimatesByHand) {
  // Streaming: overhead + ids x bytes per id, ids = min(capacity x ids per capacity, distinct).
  EXPECT_EQ(EstimatePointBytes(Spec("lru", 1000), -1, false), 4096 + 1000 * 136);
  EXPECT_EQ(EstimatePointBytes(Spec("lru", 1000), 300, false), 4096 + 300 * 136);
  EXPECT_EQ(EstimatePointBytes(Spec("arc", 1000), -1, false), 4096 + 2000 * 136);
  EXPECT_EQ(EstimatePointBytes(Spec("s3fifo", 1000), -1, false), 4096 + 1900 * 136);
  EXPECT_EQ(EstimatePointBytes(Spec("2q", 1000), -1, false), 4096 + 2000 * 136);
  EXPECT_EQ(EstimatePointBytes(Spec("lfu+leaf_first", 10), -1, false), 4096 + 10 * (128 + 96));
  EXPECT_EQ(EstimatePointBytes(Spec("lru+ttl", 10), -1, false), 4096 + 10 * (136 + 64));
  // Compiled: the dense arrays cost every distinct block.
  EXPECT_EQ(EstimatePointBytes(Spec("belady", 10), 100, true), 4096 + 10 * 128 + 100 * 24);
  // Belady's arrays over the access indices: 9 bytes per access of the compiled trace.
  EXPECT_EQ(EstimatePointBytes(Spec("belady", 10), 100, true, 1000), 4096 + 10 * 128 + 100 * 24 + 1000 * 9);
  EXPECT_EQ(EstimatePointBytes(Spec("lru", 10), 100, true, 1000), 4096 + 10 * 136 + 100 * 24);
}

TEST(CacheBatchesTest, PlanGroupsInOrderAndRefusesWhatCannotFit) {
  CacheBatchPlan plan;
  plan.shared_bytes = 100;
  plan.point_bytes = {40, 40, 30, 50, 10};
  const std::vector<CacheRunSpec> specs = {Spec("lru", 1), Spec("lru", 2), Spec("lru", 3), Spec("lru", 4),
                                           Spec("lru", 5)};
  ASSERT_TRUE(PlanCacheBatches(200, &plan, specs).ok());  // budget 100 per batch
  ASSERT_EQ(plan.batches.size(), 2u);
  EXPECT_EQ(plan.batches[0], (std::vector<size_t>{0, 1}));  // 40 + 40 (+ 30 would pass 100)
  EXPECT_EQ(plan.batches[1], (std::vector<size_t>{2, 3, 4}));
  ASSERT_TRUE(PlanCacheBatches(150, &plan, specs).ok());  // budget 50: 40 | 40 | 30 | 50 | 10 (50 + 10 > 50)
  EXPECT_EQ(plan.batches.size(), 5u);
  plan.point_bytes = {20, 30, 30, 20, 10};
  ASSERT_TRUE(PlanCacheBatches(150, &plan, specs).ok());  // 20 + 30 | 30 + 20 | 10 (in order, not packed)
  ASSERT_EQ(plan.batches.size(), 3u);
  EXPECT_EQ(plan.batches[2], (std::vector<size_t>{4}));
  plan.point_bytes = {40, 40, 30, 50, 10};
  const absl::Status refused = PlanCacheBatches(145, &plan, specs);  // budget 45: point 3 (50) cannot fit
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("run lru @ 4 needs an estimated 150 B"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("--memory_limit=145 B"), std::string::npos) << refused;
}

// Batched runs give the results of one run over every point, for a limit that puts each point in its own
// pass (the trace reopened each time) when the points are of one size, streaming and over a compiled trace
// (with Belady, whose points are the largest).
TEST(CacheBatchesTest, OnePointPerBatchEqualsOneRun) {
  for (const std::vector<std::string>& policies :
       {std::vector<std::string>{"lru", "fifo", "sieve", "clock"}, std::vector<std::string>{"belady", "lru"}}) {
    std::vector<CacheRunSpec> specs;
    for (const std::string& p : policies) {
      for (int64_t c : {1000, 1100, 1200}) specs.push_back(Spec(p, c));
    }
    auto reader = OpenTrace(kMooncake, {});
    ASSERT_TRUE(reader.ok()) << reader.status();
    CacheReplayOptions options;
    options.num_threads = 2;
    auto all = RunCacheReplays(reader->get(), specs, options);
    ASSERT_TRUE(all.ok()) << all.status();
    int opens = 0;
    TraceReopener open = [&]() {
      ++opens;
      return OpenTrace(kMooncake, {});
    };
    CacheBatchPlan plan;
    auto once = RunCacheReplaysInBatches(open, specs, options, {.memory_limit_bytes = int64_t{1} << 40}, &plan);
    ASSERT_TRUE(once.ok()) << once.status();
    EXPECT_EQ(plan.batches.size(), 1u);
    int64_t largest = 0;
    for (int64_t b : plan.point_bytes) largest = std::max(largest, b);
    opens = 0;
    auto batched =
        RunCacheReplaysInBatches(open, specs, options, {.memory_limit_bytes = plan.shared_bytes + largest}, &plan);
    ASSERT_TRUE(batched.ok()) << batched.status();
    if (!plan.compiled) {
      EXPECT_EQ(plan.batches.size(), specs.size()) << DescribeCacheBatchPlan(plan, plan.shared_bytes + largest);
    } else {
      // Belady's points (the largest: its arrays over the access indices) each fill a pass; the smaller
      // LRU points may share one.
      for (const std::vector<size_t>& batch : plan.batches) {
        if (specs[batch[0]].policy.name() == "belady") {
          EXPECT_EQ(batch.size(), 1u);
        }
      }
      EXPECT_GE(plan.batches.size(), 4u) << DescribeCacheBatchPlan(plan, plan.shared_bytes + largest);
    }
    // Streaming: one pass per batch and one to count the distinct blocks; compiled: one read in all.
    EXPECT_EQ(opens, plan.compiled ? 1 : static_cast<int>(specs.size()) + 1);
    ASSERT_EQ(batched->size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const CacheStats& a = (*all)[i].stats;
      for (const auto* r : {&(*once)[i], &(*batched)[i]}) {
        EXPECT_EQ(r->policy_label, (*all)[i].policy_label);
        EXPECT_EQ(r->spec.capacity_blocks, specs[i].capacity_blocks);
        EXPECT_EQ(r->stats.hits, a.hits) << i;
        EXPECT_EQ(r->stats.prefix_hits, a.prefix_hits) << i;
        EXPECT_EQ(r->stats.hit_tokens, a.hit_tokens) << i;
        EXPECT_EQ(r->stats.evictions, a.evictions) << i;
        EXPECT_EQ(r->stats.bypasses, a.bypasses) << i;
        EXPECT_EQ(r->stats.accesses, a.accesses) << i;
      }
    }
  }
}

// A capacity far beyond the trace is estimated by the trace's distinct blocks (counted in a pass), not
// refused for what the capacity alone would need.
TEST(CacheBatchesTest, DistinctBlocksBoundAHugeCapacity) {
  TraceReopener open = [] { return OpenTrace(kMooncake, {}); };
  CacheBatchPlan plan;
  auto results = RunCacheReplaysInBatches(open, {Spec("lru", int64_t{1} << 40)}, {},
                                          {.memory_limit_bytes = int64_t{1} << 30}, &plan);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_GT(plan.distinct_blocks, 0);
  EXPECT_EQ(plan.point_bytes[0], 4096 + plan.distinct_blocks * 136);
  // A limit below what the trace's blocks need is refused before any run.
  auto refused = RunCacheReplaysInBatches(open, {Spec("lru", int64_t{1} << 40)}, {},
                                          {.memory_limit_bytes = kPassOverheadBytes + 1000}, &plan);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("raise --memory_limit"), std::string::npos) << refused.status();
}

}  // namespace
}  // namespace kvsim
