#include "sim/report/result_set.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(JsonNumberAtTest, CountsAsNumbersOrStrings) {
  const Json j = Json::parse(R"({"summary": {"num_requests": "3993", "finished": 3990, "ttft_ms": {"p50": 1.5},
                               "none": null, "flag": true, "text": "abc"}})");
  EXPECT_EQ(JsonNumberAt(j, "summary.num_requests"), 3993);  // proto3 JSON writes int64 as a string
  EXPECT_EQ(JsonNumberAt(j, "summary.finished"), 3990);
  EXPECT_EQ(JsonNumberAt(j, "summary.ttft_ms.p50"), 1.5);
  EXPECT_FALSE(JsonNumberAt(j, "summary.none").has_value());
  EXPECT_FALSE(JsonNumberAt(j, "summary.flag").has_value());
  EXPECT_FALSE(JsonNumberAt(j, "summary.text").has_value());
  EXPECT_FALSE(JsonNumberAt(j, "summary.missing").has_value());
  EXPECT_FALSE(JsonNumberAt(j, "summary.ttft_ms.p50.deeper").has_value());
}

TEST(LoadResultSetTest, ReplayFolderReadsFinishedRequests) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/replay";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/summary.json") << R"({"run": {}, "summary": {"num_requests": 3}})";
  std::ofstream(dir + "/requests.csv") << "request_id,finished,ttft_ns,tpot_ns,e2e_ns,output_tokens\n"
                                       << "0,1,2000000,500000,4000000,5\n"  // 2 ms, 0.5 ms, 4 ms
                                       << "1,0,0,0,0,0\n"                   // unfinished: left out
                                       << "2,1,1000000,0,1000000,1\n";      // 1 output token: no TPOT
  auto set = LoadResultSet(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->kind, ResultKind::kReplay);
  EXPECT_EQ(set->label, "replay");
  // CDFs: values ascending, y = fraction at or below.
  EXPECT_EQ(set->latencies.ttft.count, 2);
  EXPECT_EQ(set->latencies.ttft.x, (std::vector<double>{1, 2}));
  EXPECT_EQ(set->latencies.ttft.y, (std::vector<double>{0.5, 1}));
  EXPECT_EQ(set->latencies.tpot.x, (std::vector<double>{0.5}));
  EXPECT_EQ(set->latencies.tpot.y, (std::vector<double>{1}));
  EXPECT_EQ(set->latencies.e2e.x, (std::vector<double>{1, 4}));
  EXPECT_EQ(set->latencies.itl.count, 0);
}

TEST(LoadResultSetTest, BadCellNamesFileAndLine) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/bad";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/summary.json") << R"({"summary": {}})";
  std::ofstream(dir + "/requests.csv") << "finished,ttft_ns,e2e_ns\n1,5,6\n1,x,6\n";
  auto set = LoadResultSet(dir);
  ASSERT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(set.status().message().find("requests.csv:3: ttft_ns: expected a number, got 'x'"), std::string::npos)
      << set.status();
}

// Summary only (what compare reads): the per-request and time-series files are not opened, so a bad
// cell in them is not seen and nothing of them is held.
TEST(LoadResultSetTest, SummaryOnlyLeavesRequestsAndSeriesUnread) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/summary_only";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/summary.json") << R"({"summary": {"num_requests": 2}})";
  std::ofstream(dir + "/requests.csv") << "finished,ttft_ns,e2e_ns\n1,5,6\n1,x,6\n";
  std::ofstream(dir + "/timeseries.csv") << "time_s,replica\n0,0\n";
  auto set = LoadResultSet(dir, ReplayDetail::kSummaryOnly);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->kind, ResultKind::kReplay);
  EXPECT_EQ(JsonNumberAt(set->json, "summary.num_requests"), 2);
  EXPECT_FALSE(set->has_requests);
  EXPECT_EQ(set->latencies.ttft.count, 0);
  EXPECT_TRUE(set->series.time_s.empty());
  EXPECT_FALSE(LoadResultSet(dir).ok());  // the whole folder: the bad cell is refused
}

// 1,000 finished requests: 400 CDF points, the values at ranks round(i * 999 / 399) of the sorted values
// (std::sort, the reference), y = (rank + 1) / 1000; the first point is the minimum, the last the maximum.
TEST(LoadResultSetTest, LatencyCdfPointsAreRanksOfTheSortedValues) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/cdf";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/summary.json") << R"({"summary": {}})";
  std::ofstream csv(dir + "/requests.csv");
  csv << "finished,ttft_ns,e2e_ns\n";
  std::vector<double> ttft_ms;
  uint64_t x = 12345;
  for (int i = 0; i < 1000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t ns = static_cast<int64_t>((x >> 33) % 5000000);
    csv << "1," << ns << "," << ns + 1 << "\n";
    ttft_ms.push_back(ns / 1e6);
  }
  csv.close();
  std::sort(ttft_ms.begin(), ttft_ms.end());
  auto set = LoadResultSet(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  const LatencyCdf& cdf = set->latencies.ttft;
  EXPECT_EQ(cdf.count, 1000);
  ASSERT_EQ(cdf.x.size(), 400u);
  EXPECT_EQ(cdf.x.front(), ttft_ms.front());
  EXPECT_EQ(cdf.x.back(), ttft_ms.back());
  EXPECT_EQ(cdf.y.back(), 1.0);
  for (int i = 0; i < 400; ++i) {
    const size_t rank = static_cast<size_t>(std::llround(i * 999.0 / 399.0));
    EXPECT_EQ(cdf.x[i], ttft_ms[rank]) << i;
    EXPECT_EQ(cdf.y[i], (rank + 1) / 1000.0) << i;
  }
}

// Two replicas sampled in 100 ms intervals: each interval sums the replicas' last samples in it, an idle
// replica (no sample in an interval) counting with its last values. Hand-computed.
TEST(LoadResultSetTest, TimeSeriesSumsReplicasPerInterval) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/series";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/summary.json")
      << R"({"run": {"num_replicas": 2, "timeseries_interval_ns": "100000000"}, "summary": {"gpu_capacity_blocks": 10}})";
  std::ofstream(dir + "/timeseries.csv") << "time_ns,replica,gpu_blocks_used,queued_requests,batch_size\n"
                                         << "0,0,2,1,1\n"            // interval 0: replica 0
                                         << "50000000,1,4,0,2\n"     // interval 0: replica 1
                                         << "60000000,0,6,3,1\n"     // interval 0: replica 0 again (last)
                                         << "150000000,1,8,2,4\n"    // interval 1: replica 1; 0 idle
                                         << "350000000,0,1,0,1\n";   // interval 3; 1 idle
  auto set = LoadResultSet(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  const ReplicaSums& s = set->series;
  EXPECT_EQ(s.time_s, (std::vector<double>{0, 0.1, 0.3}));
  // used: 6+4, 6+8, 1+8 of 2 x 10 blocks; queued: 3+0, 3+2, 0+2; batch: 1+2, 1+4, 1+4.
  EXPECT_EQ(s.occupancy, (std::vector<double>{0.5, 0.7, 0.45}));
  EXPECT_EQ(s.queued, (std::vector<double>{3, 5, 2}));
  EXPECT_EQ(s.batch, (std::vector<double>{3, 5, 5}));

  std::ofstream(dir + "/timeseries.csv") << "time_ns,replica,gpu_blocks_used\n5,0,1\n4,0,1\n";
  auto unordered = LoadResultSet(dir);
  ASSERT_EQ(unordered.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unordered.status().message().find("timeseries.csv:3: time_ns 4 before the previous row's"),
            std::string::npos)
      << unordered.status();
}

TEST(LoadResultSetTest, KindsByContent) {
  auto mrc = LoadResultSet(WriteTemp("m.csv", "policy,capacity_blocks,hit_ratio,token_hit_ratio\nlru,10,0.5,0.5\n"));
  ASSERT_TRUE(mrc.ok()) << mrc.status();
  EXPECT_EQ(mrc->kind, ResultKind::kMrc);
  ASSERT_EQ(mrc->capacity.size(), 1u);
  EXPECT_EQ(mrc->capacity[0].capacity_blocks, 10);
  auto sweep = LoadResultSet(WriteTemp(
      "s.csv", "policy,capacity_blocks,point,mode,policy,capacity_blocks,hit_ratio\nlru,8,0,cache,lru,8,0.25\n"));
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  EXPECT_EQ(sweep->kind, ResultKind::kSweep);
  ASSERT_EQ(sweep->capacity.size(), 1u);
  EXPECT_EQ(sweep->capacity[0].hit_ratio, 0.25);
  auto quality = LoadResultSet(WriteTemp("q.json", R"({"points": [], "areas": []})"));
  ASSERT_TRUE(quality.ok());
  EXPECT_EQ(quality->kind, ResultKind::kQuality);
  EXPECT_EQ(LoadResultSet(WriteTemp("x.json", "{\"a\": 1}")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadResultSet(WriteTemp("y.json", "{\"a\": ")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadResultSet("/nonexistent/path").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvsim
