#include "traces/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"
#include "util/json_text.h"
#include "util/percentile.h"

namespace kvsim {
namespace {

Request Make(int64_t arrival_s, int64_t input, int64_t output, std::vector<uint64_t> blocks, int64_t session = -1,
             int32_t turn = 0) {
  Request r;
  r.arrival_ns = arrival_s * 1'000'000'000;
  r.input_tokens = input;
  r.output_tokens = output;
  r.block_tokens = blocks.empty() ? 0 : 4;
  r.block_hashes = std::move(blocks);
  r.session_id = session;
  r.turn = turn;
  return r;
}

TEST(TraceStatsTest, HandComputedSmallTrace) {
  // Accesses in order: A B C | A B D | C A | E
  //  A(1) miss, B(2) miss, C(3) miss; A hit (between: B C -> distance 2), B hit (C A -> 2), D miss;
  //  C hit (A B D since C -> 3), A hit (B D C -> 3); E miss.
  // References 9, distinct 5 (A..E), hits 4 -> 0.444; leading hits: req1 0, req2 A B = 2, req3 C A = 2,
  // req4 0 -> prefix 4/9. Used twice or more: A B C (3 of 5) = 0.6.
  // Distances sorted: 2 2 3 3 -> nearest-rank p25 = sorted[ceil(1)-1] = 2, p50 = sorted[1] = 2,
  // p75 = sorted[2] = 3.
  VectorTraceReader reader({Make(0, 10, 1, {1, 2, 3}, 7, 1), Make(30, 20, 5, {1, 2, 4}, 7, 2), Make(70, 30, 2, {3, 1}),
                            Make(130, 40, 9, {5}, 8, 1)},
                           {"mem", "test", 4});
  auto stats = ComputeTraceStats(reader);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->num_requests, 4);
  EXPECT_EQ(stats->duration_ns, 130'000'000'000);
  EXPECT_NEAR(stats->mean_requests_per_minute, 4 / (130.0 / 60), 1e-12);
  EXPECT_EQ(stats->peak_requests_per_minute, 2);  // minute 0: t = 0, 30; minute 1: 70; minute 2: 130
  EXPECT_DOUBLE_EQ(stats->input_tokens.mean, 25);
  EXPECT_EQ(stats->input_tokens.p50, 20);  // nearest rank: sorted[ceil(2) - 1]
  EXPECT_EQ(stats->input_tokens.p90, 40);  // sorted[ceil(3.6) - 1]
  EXPECT_EQ(stats->input_tokens.max, 40);
  EXPECT_EQ(stats->output_tokens.p50, 2);  // 1 2 5 9
  EXPECT_EQ(stats->num_sessions, 2);
  EXPECT_EQ(stats->requests_in_sessions, 3);
  EXPECT_EQ(stats->max_turn, 2);
  EXPECT_DOUBLE_EQ(stats->mean_requests_per_session, 1.5);
  EXPECT_EQ(stats->block_references, 9);
  EXPECT_EQ(stats->distinct_blocks, 5);
  EXPECT_DOUBLE_EQ(stats->unbounded_hit_ratio, 4.0 / 9);
  EXPECT_DOUBLE_EQ(stats->prefix_hit_ratio, 4.0 / 9);
  EXPECT_DOUBLE_EQ(stats->reused_block_fraction, 0.6);
  EXPECT_EQ(stats->num_reuses, 4);
  EXPECT_EQ(stats->stack_distance_p25, 2);
  EXPECT_EQ(stats->stack_distance_p50, 2);
  EXPECT_EQ(stats->stack_distance_p75, 3);
}

TEST(TraceStatsTest, StackDistancesMatchABruteForceLruSimulation) {
  // The distance of a reuse is its depth in an LRU stack (blocks above it); it hits in an LRU cache of
  // depth + 1 blocks. Check against a simulated LRU list.
  std::mt19937_64 rng(12345);
  std::vector<Request> requests;
  std::vector<uint64_t> accesses;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint64_t> blocks;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) blocks.push_back(rng() % 40);
    accesses.insert(accesses.end(), blocks.begin(), blocks.end());
    requests.push_back(Make(i, 4 * n, 1, blocks));
  }
  std::vector<int64_t> expected;
  std::vector<uint64_t> lru;  // most recent first
  for (uint64_t id : accesses) {
    auto it = std::find(lru.begin(), lru.end(), id);
    if (it != lru.end()) {
      expected.push_back(it - lru.begin());  // blocks above it in the LRU stack
      lru.erase(it);
    }
    lru.insert(lru.begin(), id);
  }
  VectorTraceReader reader(requests, {"mem", "test", 4});
  auto stats = ComputeTraceStats(reader);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->num_reuses, static_cast<int64_t>(expected.size()));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(stats->stack_distance_p25, NearestRank(expected, 0.25));
  EXPECT_EQ(stats->stack_distance_p50, NearestRank(expected, 0.50));
  EXPECT_EQ(stats->stack_distance_p75, NearestRank(expected, 0.75));
}

TEST(TraceStatsTest, MooncakeCrossCheckMatchesThePublishedFigures) {
  // Issue figures for mooncake_synthetic.jsonl: 3,993 requests, 121,877 block references, 43,924
  // distinct blocks, unbounded hit ratio 0.640, LRU stack distance p25/p50/p75 = 2,269/6,265/12,728.
  auto reader = OpenTrace(DataPath("mooncake_synthetic.jsonl"), {});
  ASSERT_TRUE(reader.ok());
  auto stats = ComputeTraceStats(**reader);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->num_requests, 3993);
  EXPECT_EQ(stats->block_references, 121877);
  EXPECT_EQ(stats->distinct_blocks, 43924);
  EXPECT_NEAR(stats->unbounded_hit_ratio, 0.640, 0.0005);
  EXPECT_EQ(stats->stack_distance_p25, 2269);
  EXPECT_EQ(stats->stack_distance_p50, 6265);
  EXPECT_EQ(stats->stack_distance_p75, 12728);
  EXPECT_LE(stats->prefix_hit_ratio, stats->unbounded_hit_ratio);
}

TEST(TraceStatsTest, TraceWithoutHashesHasNoBlockFacts) {
  auto reader = OpenTrace(DataPath("azure_code_2023.csv"), {});
  ASSERT_TRUE(reader.ok());
  auto stats = ComputeTraceStats(**reader);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->num_requests, 8819);
  EXPECT_EQ(stats->duration_ns, 3'435'948'056'000);  // see azure_reader_test
  EXPECT_EQ(stats->block_references, 0);
  EXPECT_EQ(stats->input_tokens.max >= stats->input_tokens.p99, true);
  const std::string text = FormatTraceStats(*stats);
  EXPECT_NE(text.find("none (the trace has no block hashes)"), std::string::npos) << text;
  const Json json = Json::parse(FormatTraceStatsJson(*stats));
  EXPECT_EQ(json["requests"], 8819);
  EXPECT_EQ(json["duration_ns"], 3'435'948'056'000);
  EXPECT_EQ(json["block_references"], 0);
  EXPECT_EQ(json["input_tokens"]["max"], stats->input_tokens.max);
}

// Means that are not finite (here set by hand) are written as null, so the object stays valid JSON;
// strings are escaped; keys come once each in the documented order.
TEST(TraceStatsTest, JsonIsValidWithNonFiniteMeansAndOddStrings) {
  TraceStats stats;
  stats.path = "dir/a \"b\"\n.jsonl";
  stats.format = "jsonl";
  stats.mean_requests_per_minute = std::nan("");
  stats.input_tokens.mean = std::numeric_limits<double>::infinity();
  stats.mean_tokens_per_id = 2.5;
  stats.stack_distance_p50 = 7;
  stats.warnings = {"w1", "tab\there"};
  const std::string text = FormatTraceStatsJson(stats);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const Json json = Json::parse(text);  // throws (fails the test) on invalid JSON such as `nan`
  EXPECT_EQ(json["path"], "dir/a \"b\"\n.jsonl");
  EXPECT_TRUE(json["mean_requests_per_minute"].is_null());
  EXPECT_TRUE(json["input_tokens"]["mean"].is_null());
  EXPECT_EQ(json["tokens_per_id"]["mean"], 2.5);
  EXPECT_EQ(json["stack_distance"]["p50"], 7);
  EXPECT_EQ(json["warnings"], Json({"w1", "tab\there"}));
  EXPECT_EQ(json.begin().key(), "path");
  EXPECT_EQ(json.size(), 26u);
}

}  // namespace
}  // namespace kvsim
