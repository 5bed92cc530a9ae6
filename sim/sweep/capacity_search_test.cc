#include "sim/sweep/capacity_search.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

// One replica; every prompt is 512 tokens and one iteration holds one prompt (max_num_batched_tokens =
// 512, prefill first); one output token, so a request is done when its prefill is. Every iteration costs
// 10 ms (the fake model's fixed cost), so the service time per request is 10 ms. With deterministic
// arrivals T apart, TTFT = 10 ms for T >= 10 ms, and for T < 10 ms the k-th request waits k (10 ms - T):
// "max TTFT <= 10 ms" holds exactly up to 1 / 10 ms = 100 requests/s.
constexpr int64_t kServiceNs = 10'000'000;

proto::ExperimentConfig HandConfig() {
  proto::ExperimentConfig overrides;
  overrides.mutable_scheduler()->set_max_num_batched_tokens(512);
  overrides.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_NONE);
  return TestConfig(100000, overrides);
}

// n requests, one a second.
CapacityTrace EverySecond(int n) {
  std::vector<Request> trace;
  for (int i = 0; i < n; ++i) trace.push_back(MakeRequest(i, int64_t{i} * 1'000'000'000, 512, 1));
  absl::StatusOr<CapacityTrace> scanned = CapacityTraceFromRequests(std::move(trace));
  EXPECT_TRUE(scanned.ok()) << scanned.status();
  return *std::move(scanned);
}

const FakeCostModel& Cost() {
  static const FakeCostModel* cost = new FakeCostModel({.fixed_ns = kServiceNs});
  return *cost;
}

TEST(CapacitySearchTest, HandCaseHoldsAtTheServiceRateAndNotAbove) {
  const CapacityTrace trace = EverySecond(40);
  ASSERT_DOUBLE_EQ(trace.rate_per_s, 1.0);
  EXPECT_EQ(trace.num_requests, 40);
  auto at_100 = ReplayAtRate(trace, 100.0, HandConfig(), Cost());
  ASSERT_TRUE(at_100.ok()) << at_100.status();
  EXPECT_EQ(at_100->finished_requests(), 40);
  EXPECT_DOUBLE_EQ(at_100->ttft_ms().max(), 10.0);
  auto at_101 = ReplayAtRate(trace, 101.0, HandConfig(), Cost());
  ASSERT_TRUE(at_101.ok()) << at_101.status();
  // The last of 40 requests waits 39 x (10 - 1000/101) ms.
  EXPECT_NEAR(at_101->ttft_ms().max(), 10.0 + 39 * (10.0 - 1000.0 / 101.0), 1e-5);
}

TEST(CapacitySearchTest, ScanReadsTheFirstMaxRequestsAndEachReplayReopensTheTrace) {
  // 40 requests a second apart, then 10 more 0.1 s apart: the first 40 have rate 1/s, all 50 have
  // 49 / 39.9 s. Every open is counted: the scan opens once, each replay once more.
  std::vector<Request> requests;
  for (int i = 0; i < 40; ++i) requests.push_back(MakeRequest(i, int64_t{i} * 1'000'000'000, 512, 1));
  for (int i = 0; i < 10; ++i) requests.push_back(MakeRequest(40 + i, 39'000'000'000 + (i + 1) * 100'000'000, 512, 1));
  int opens = 0;
  const TraceReopener open = [&]() -> absl::StatusOr<std::unique_ptr<TraceReader>> {
    ++opens;
    return std::unique_ptr<TraceReader>(new VectorTraceReader(requests, TraceInfo()));
  };
  auto first40 = ScanCapacityTrace(open, 40);
  ASSERT_TRUE(first40.ok()) << first40.status();
  EXPECT_EQ(first40->num_requests, 40);
  EXPECT_DOUBLE_EQ(first40->rate_per_s, 1.0);
  auto all = ScanCapacityTrace(open, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->num_requests, 50);
  EXPECT_DOUBLE_EQ(all->rate_per_s, 49 / 40.0);
  EXPECT_NE(first40->digest, all->digest);
  EXPECT_EQ(opens, 2);
  // A replay of the first 40 at 100/s: 40 requests, none waiting (the hand case below).
  auto replayed = ReplayAtRate(*first40, 100.0, HandConfig(), Cost());
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->num_requests(), 40);
  EXPECT_DOUBLE_EQ(replayed->ttft_ms().max(), 10.0);
  EXPECT_EQ(opens, 3);
  // One distinct arrival has no rate.
  std::vector<Request> same_instant = {MakeRequest(0, 5, 512, 1), MakeRequest(1, 5, 512, 1)};
  auto no_rate = CapacityTraceFromRequests(same_instant);
  EXPECT_EQ(no_rate.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_rate.status().message().find("two distinct arrival times"), absl::string_view::npos);
}

TEST(CapacitySearchTest, FindsTheHandComputedRateWithinTolerance) {
  const CapacityTrace trace = EverySecond(40);
  auto slos = ParseSloBounds("ttft_ms:max<=10");
  ASSERT_TRUE(slos.ok()) << slos.status();
  CapacityOptions options;
  options.tolerance = 0.02;
  auto result = SearchCapacity(trace, HandConfig(), Cost(), *slos, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->max_rate_per_s, 100.0);
  EXPECT_GT(result->first_fail_per_s, 100.0);
  EXPECT_LE(result->first_fail_per_s - result->max_rate_per_s, 0.02 * result->max_rate_per_s);
  EXPECT_GE(result->max_rate_per_s, 100.0 * (1 - 0.02));
  // Every rate tried agrees with the hand rule.
  for (const CapacityEvaluation& e : result->path) EXPECT_EQ(e.holds, e.rate_per_s <= 100.0) << e.rate_per_s;
}

TEST(CapacitySearchTest, StartAboveTheAnswerSearchesDownward) {
  auto slos = ParseSloBounds("ttft_ms:P99<=10");
  ASSERT_TRUE(slos.ok());
  CapacityOptions options;
  options.start_rate_per_s = 5000;
  auto result = SearchCapacity(EverySecond(40), HandConfig(), Cost(), *slos, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->max_rate_per_s, 100.0);
  EXPECT_GE(result->max_rate_per_s, 98.0);
}

TEST(CapacitySearchTest, PathIsTheSameForAnyThreadCount) {
  auto slos = ParseSloBounds("ttft_ms:P99<=10,tpot_ms:P99<=100");
  ASSERT_TRUE(slos.ok());
  std::string first;
  for (int threads : {1, 3}) {
    CapacityOptions options;
    options.num_threads = threads;
    auto result = SearchCapacity(EverySecond(40), HandConfig(), Cost(), *slos, options);
    ASSERT_TRUE(result.ok()) << result.status();
    const std::string json = CapacityJson(*result, *slos, options.tolerance);
    if (first.empty()) first = json;
    EXPECT_EQ(json, first) << threads;
  }
}

// capacity.json is one JSON document (each key once, numbers as numbers) holding the result's values.
TEST(CapacitySearchTest, JsonHoldsTheResult) {
  auto slos = ParseSloBounds("ttft_ms:P99<=10,tpot_ms:P99<=100");
  ASSERT_TRUE(slos.ok());
  CapacityOptions options;
  auto result = SearchCapacity(EverySecond(40), HandConfig(), Cost(), *slos, options);
  ASSERT_TRUE(result.ok()) << result.status();
  const Json json = Json::parse(CapacityJson(*result, *slos, 0.02));
  ASSERT_EQ(json["slo"].size(), 2u);
  EXPECT_EQ(json["slo"][1]["metric"], "tpot_ms");
  EXPECT_EQ(json["slo"][1]["stat"], "p99");  // as ParseSloBounds normalises it
  EXPECT_EQ(json["slo"][1]["limit"], 100.0);
  EXPECT_EQ(json["tolerance"], 0.02);
  EXPECT_EQ(json["max_rate_per_s"], result->max_rate_per_s);
  EXPECT_EQ(json["first_fail_per_s"], result->first_fail_per_s);
  EXPECT_EQ(json["trace_rate_per_s"], result->trace_rate_per_s);
  ASSERT_TRUE(json["path"].is_array());
  EXPECT_EQ(json["path"].size(), result->path.size());
  EXPECT_EQ(json["path"][0]["rate_per_s"], result->path[0].rate_per_s);
}

// Shards take turns, each stopping where the other's rate is missing, until one finishes the search.
// Returns the finishing shard's result and counts the calls.
CapacityResult RunShardsInTurn(const CapacityTrace& trace, const std::vector<SloBound>& slos,
                               CapacityOptions options, int* calls) {
  for (*calls = 1; *calls <= 200; ++*calls) {
    options.shard_index = (*calls - 1) % options.num_shards;
    auto result = SearchCapacity(trace, HandConfig(), Cost(), slos, options);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok() || result->complete) return result.ok() ? *result : CapacityResult();
    // Only its own rates (at most 2 of a round of 4 among 3 shards): those of the round the others had
    // finished, then of the next one, where it stopped.
    EXPECT_LE(result->rates_replayed, 4);
  }
  ADD_FAILURE() << "the shards never finished";
  return CapacityResult();
}

TEST(CapacitySearchTest, ShardedAndResumedSearchEqualsTheSingleOne) {
  const CapacityTrace trace = EverySecond(40);
  auto slos = ParseSloBounds("ttft_ms:max<=10");
  ASSERT_TRUE(slos.ok());
  CapacityOptions single;
  auto expected = SearchCapacity(trace, HandConfig(), Cost(), *slos, single);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::string expected_json = CapacityJson(*expected, *slos, single.tolerance);

  CapacityOptions options;
  options.out_dir = ::testing::TempDir() + "/capacity_shards";
  options.num_shards = 3;
  int calls = 0;
  const CapacityResult sharded = RunShardsInTurn(trace, *slos, options, &calls);
  EXPECT_EQ(CapacityJson(sharded, *slos, options.tolerance), expected_json);
  EXPECT_GT(calls, 3);  // every round needed every shard
  // Every rate of the path was replayed exactly once, by some shard, into its own file.
  EXPECT_TRUE(
      ReadFile(options.out_dir + "/points/capacity-rate-" + FormatDouble(expected->path[0].rate_per_s) + ".txt").ok());
  // A rerun of any shard reads every rate and replays none; the answer is the same.
  options.shard_index = 2;
  auto again = SearchCapacity(trace, HandConfig(), Cost(), *slos, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->complete);
  EXPECT_EQ(again->rates_replayed, 0);
  EXPECT_EQ(again->rates_read, static_cast<int64_t>(expected->path.size()));
  EXPECT_EQ(CapacityJson(*again, *slos, options.tolerance), expected_json);

  // Other SLOs: the stored outcomes are of another search, so they are replayed (and overwritten).
  auto other_slos = ParseSloBounds("ttft_ms:max<=20");
  ASSERT_TRUE(other_slos.ok());
  options.num_shards = 1;
  options.shard_index = 0;
  auto other = SearchCapacity(trace, HandConfig(), Cost(), *other_slos, options);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->rates_read, 0);
  EXPECT_EQ(other->rates_replayed, static_cast<int64_t>(other->path.size()));
  // TTFT max <= 20 ms: the k-th of 40 requests waits k (10 ms - T) <= 10 ms, so T >= 10 - 10/39 ms.
  const double rate_20 = 1000.0 / (10.0 - 10.0 / 39.0);
  EXPECT_LE(other->max_rate_per_s, rate_20);
  EXPECT_GE(other->max_rate_per_s, rate_20 * (1 - options.tolerance));
}

TEST(CapacitySearchTest, ShardOptionsAndStoredFilesAreChecked) {
  const CapacityTrace trace = EverySecond(40);
  auto slos = ParseSloBounds("ttft_ms:max<=10");
  ASSERT_TRUE(slos.ok());
  CapacityOptions options;
  options.num_shards = 2;
  auto no_dir = SearchCapacity(trace, HandConfig(), Cost(), *slos, options);
  EXPECT_EQ(no_dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_dir.status().message().find("--out"), std::string::npos) << no_dir.status();
  options.out_dir = ::testing::TempDir() + "/capacity_bad";
  options.shard_index = 2;
  EXPECT_EQ(SearchCapacity(trace, HandConfig(), Cost(), *slos, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A damaged outcome file is refused with its name and line, not taken as a result.
  options.num_shards = 1;
  options.shard_index = 0;
  ASSERT_TRUE(MakeDirectories(options.out_dir + "/points").ok());
  const std::string damaged = options.out_dir + "/points/capacity-rate-1.txt";
  ASSERT_TRUE(WriteFileAtomically(damaged, "digest=x\nholds=maybe\n").ok());
  auto bad = SearchCapacity(trace, HandConfig(), Cost(), *slos, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find(damaged + ": cannot read the line 'holds=maybe'"), std::string::npos)
      << bad.status();
}

TEST(CapacitySearchTest, SloErrorsNameTheBound) {
  for (const char* bad : {"ttft:P99<=10", "ttft_ms:P98<=10", "ttft_ms:P99<10", "ttft_ms:P99<=x", ""}) {
    auto slos = ParseSloBounds(bad);
    EXPECT_EQ(slos.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(slos.status().message().find("--slo"), std::string::npos) << slos.status();
  }
  auto slos = ParseSloBounds("ttft_ms:P99<=2000, tpot_ms:mean<=100");
  ASSERT_TRUE(slos.ok());
  ASSERT_EQ(slos->size(), 2u);
  EXPECT_EQ((*slos)[0].stat, "p99");
  EXPECT_EQ((*slos)[1].metric, "tpot_ms");
  EXPECT_EQ((*slos)[1].limit, 100);
}

TEST(CapacityGridTest, CheapestOptionMeetingTheTargetAcrossShards) {
  // At 150 requests/s one replica (100/s) fails; two (round robin, 75/s each) and three hold; two is
  // cheapest: 2 GPUs x 1e6 / 150 / 3600 GPU-hours per million requests.
  auto axes = ParseGrid("cluster.num_replicas=3,1,2");
  ASSERT_TRUE(axes.ok());
  auto slos = ParseSloBounds("ttft_ms:max<=10");
  ASSERT_TRUE(slos.ok());
  CapacityGridOptions options;
  options.out_dir = ::testing::TempDir() + "/capacity_grid";
  options.target_rate_per_s = 150;
  options.num_shards = 2;
  options.cost_model_factory = [](const proto::ExperimentConfig&) -> absl::StatusOr<std::unique_ptr<CostModel>> {
    return std::unique_ptr<CostModel>(new FakeCostModel({.fixed_ns = kServiceNs}));
  };
  options.shard_index = 0;
  auto shard0 = RunCapacityGrid(*axes, HandConfig(), EverySecond(40), *slos, options);
  ASSERT_TRUE(shard0.ok()) << shard0.status();
  EXPECT_EQ(shard0->points_run, 2);
  EXPECT_FALSE(shard0->complete);
  options.shard_index = 1;
  auto shard1 = RunCapacityGrid(*axes, HandConfig(), EverySecond(40), *slos, options);
  ASSERT_TRUE(shard1.ok()) << shard1.status();
  ASSERT_TRUE(shard1->complete);
  EXPECT_EQ(shard1->cheapest_point, 2);
  EXPECT_EQ(shard1->cheapest_label, "cluster.num_replicas=2");
  EXPECT_DOUBLE_EQ(shard1->cheapest_gpu_hours_per_million, 2 * 1e6 / 150 / 3600);
  ASSERT_EQ(shard1->table.rows().size(), 3u);
  EXPECT_EQ(shard1->table.rows()[1][3], "no");  // one replica
  // A rerun resumes: nothing left to run, same table.
  auto again = RunCapacityGrid(*axes, HandConfig(), EverySecond(40), *slos, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->points_run, 0);
  EXPECT_EQ(again->points_skipped, 1);
  EXPECT_EQ(again->table.ToCsv(), shard1->table.ToCsv());
  EXPECT_EQ(*ReadFile(options.out_dir + "/capacity_grid.csv"), shard1->table.ToCsv());
}

}  // namespace
}  // namespace kvsim
