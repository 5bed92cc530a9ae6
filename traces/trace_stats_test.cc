#include "traces/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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

// Conversations with prefix-chained ids (each session's turns re-send its history and add blocks; no block
// carries a large share of the accesses), sessions interleaved at random.
std::vector<Request> ConversationTrace(int num_sessions, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> history(num_sessions);
  std::vector<int> turns(num_sessions, 0), remaining(num_sessions);
  std::vector<int> open;
  for (int s = 0; s < num_sessions; ++s) {
    remaining[s] = 1 + static_cast<int>(rng() % 6);
    open.push_back(s);
  }
  std::vector<Request> requests;
  while (!open.empty()) {
    const size_t pick = rng() % open.size();
    const int s = open[pick];
    const int added = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < added; ++k)
      history[s].push_back((uint64_t{1} << 40) + s * uint64_t{100000} + history[s].size());
    Request r = Make(static_cast<int64_t>(requests.size()), 4 * static_cast<int64_t>(history[s].size()) - rng() % 3,
                     1 + static_cast<int64_t>(rng() % 3000), history[s], s, ++turns[s]);
    r.request_id = requests.size();
    requests.push_back(std::move(r));
    if (--remaining[s] == 0) {
      open[pick] = open.back();
      open.pop_back();
    }
  }
  return requests;
}

// Small exact limits force every approximation: the figures that stay exact equal a brute-force computation,
// the estimates are within their stated bounds (util/stream_sketch.h, the header comment).
TEST(TraceStatsTest, BoundedMemoryEstimatesWithinTheirBoundsOfBruteForce) {
  const std::vector<Request> requests = ConversationTrace(600, 99);
  // Brute force: every value kept, the LRU stack as a vector.
  std::vector<int64_t> inputs, outputs, distances;
  std::set<uint64_t> seen;
  std::map<uint64_t, int64_t> uses;
  int64_t references = 0, prefix_hits = 0;
  long double input_sum = 0;
  std::vector<uint64_t> lru;
  for (const Request& r : requests) {
    inputs.push_back(r.input_tokens);
    outputs.push_back(r.output_tokens);
    input_sum += r.input_tokens;
    bool leading = true;
    for (uint64_t id : r.block_hashes) {
      ++references;
      const bool hit = !seen.insert(id).second;
      ++uses[id];
      leading = leading && hit;
      prefix_hits += leading;
      auto it = std::find(lru.begin(), lru.end(), id);
      if (it != lru.end()) {
        distances.push_back(it - lru.begin());
        lru.erase(it);
      }
      lru.insert(lru.begin(), id);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  std::sort(outputs.begin(), outputs.end());
  std::sort(distances.begin(), distances.end());
  const int64_t distinct = static_cast<int64_t>(seen.size());
  int64_t reused = 0;
  for (const auto& [id, n] : uses) reused += n >= 2;
  ASSERT_GT(distinct, 4000);

  TraceStatsOptions options;
  options.max_tracked_blocks = 1500;
  options.exact_distinct_values = 1000;
  options.exact_quantile_values = 64;
  VectorTraceReader reader(requests, {"mem", "test", 4});
  auto stats = ComputeTraceStats(reader, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  // Exact figures.
  EXPECT_EQ(stats->num_requests, static_cast<int64_t>(requests.size()));
  EXPECT_EQ(stats->block_references, references);
  EXPECT_EQ(stats->requests_in_sessions, static_cast<int64_t>(requests.size()));
  EXPECT_EQ(stats->num_sessions, 600);  // fewer than 1000: still exact
  EXPECT_DOUBLE_EQ(stats->input_tokens.mean, static_cast<double>(input_sum / inputs.size()));
  EXPECT_EQ(stats->input_tokens.max, inputs.back());
  EXPECT_EQ(stats->output_tokens.max, outputs.back());
  // Percentiles: within 1% + 0.5.
  for (const auto& [sketch, exact] :
       {std::pair{&stats->input_tokens, &inputs}, std::pair{&stats->output_tokens, &outputs}}) {
    for (const auto& [value, q] :
         {std::pair{sketch->p50, 0.5}, std::pair{sketch->p90, 0.9}, std::pair{sketch->p99, 0.99}}) {
      const double truth = static_cast<double>(NearestRank(*exact, q));
      EXPECT_LE(std::abs(value - truth), 0.01 * truth + 0.5) << q;
    }
  }
  // Distinct blocks: HyperLogLog, 4 standard errors; reuses and the unbounded hit ratio follow from it.
  EXPECT_LE(std::abs(stats->distinct_blocks - distinct), 4 * 0.0081 * distinct);
  EXPECT_EQ(stats->num_reuses, references - stats->distinct_blocks);
  // The per-block figures from a sample within the bound.
  const double rate = stats->block_sample_rate;
  ASSERT_LT(rate, 1);
  ASSERT_GT(stats->block_sample_error, 0);
  EXPECT_LE(std::abs(stats->prefix_hit_ratio - static_cast<double>(prefix_hits) / references),
            stats->block_sample_error);
  const double reused_fraction = static_cast<double>(reused) / distinct;
  // Binomial over the sampled blocks: 3 sqrt(p (1 - p) (1 - R) / (R distinct)).
  EXPECT_LE(std::abs(stats->reused_block_fraction - reused_fraction),
            3 * std::sqrt(reused_fraction * (1 - reused_fraction) * (1 - rate) / (rate * distinct)));
  EXPECT_TRUE(stats->ids_look_chained);
  // Stack distance quartiles: the exact share of distances at most v (1 + d), d = 1% + 3 sqrt((1 - R) / (R v)),
  // reaches q - error, and the share below v (1 - d) stays under q + error.
  auto share_at_most = [&](double v) {
    return static_cast<double>(std::upper_bound(distances.begin(), distances.end(), static_cast<int64_t>(v)) -
                               distances.begin()) /
           distances.size();
  };
  auto share_below = [&](double v) {
    return static_cast<double>(
               std::lower_bound(distances.begin(), distances.end(), static_cast<int64_t>(std::ceil(v))) -
               distances.begin()) /
           distances.size();
  };
  for (const auto& [value, q] : {std::pair{stats->stack_distance_p25, 0.25}, std::pair{stats->stack_distance_p50, 0.5},
                                 std::pair{stats->stack_distance_p75, 0.75}}) {
    const double d = 0.01 + 3 * std::sqrt((1 - rate) / (rate * std::max<int64_t>(1, value)));
    EXPECT_GE(share_at_most(value * (1 + d)), q - stats->block_sample_error) << q << " " << value;
    EXPECT_LE(share_below(value * (1 - d)), q + stats->block_sample_error) << q << " " << value;
  }
  // Every estimate is named in the output.
  std::set<std::string> named;
  for (const auto& [figure, how] : stats->approximate) named.insert(figure);
  for (const char* figure : {"input_tokens", "output_tokens", "distinct_blocks", "unbounded_hit_ratio",
                             "prefix_hit_ratio", "reused_block_fraction", "stack_distance"}) {
    EXPECT_EQ(named.count(figure), 1u) << figure;
  }
  EXPECT_EQ(named.count("sessions"), 0u);
  EXPECT_NE(FormatTraceStats(*stats).find("approximate"), std::string::npos);
  EXPECT_TRUE(Json::parse(FormatTraceStatsJson(*stats)).contains("approximate"));

  // With the default limits the same trace is exact and says nothing of estimates.
  VectorTraceReader again(requests, {"mem", "test", 4});
  auto exact = ComputeTraceStats(again);
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(exact->approximate.empty());
  EXPECT_EQ(exact->distinct_blocks, distinct);
  EXPECT_DOUBLE_EQ(exact->prefix_hit_ratio, static_cast<double>(prefix_hits) / references);
  EXPECT_DOUBLE_EQ(exact->reused_block_fraction, reused_fraction);
  EXPECT_EQ(exact->stack_distance_p50, NearestRank(distances, 0.5));
  EXPECT_EQ(exact->output_tokens.p99, NearestRank(outputs, 0.99));
  EXPECT_FALSE(Json::parse(FormatTraceStatsJson(*exact)).contains("approximate"));
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
