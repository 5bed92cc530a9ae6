#include "sim/report/result_set.h"

#include <cmath>
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
  EXPECT_EQ(set->latencies.ttft_ms, (std::vector<double>{2, 1}));
  EXPECT_EQ(set->latencies.tpot_ms, (std::vector<double>{0.5}));
  EXPECT_EQ(set->latencies.e2e_ms, (std::vector<double>{4, 1}));
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
  EXPECT_TRUE(set->latencies.ttft_ms.empty());
  EXPECT_TRUE(set->series.header.empty());
  EXPECT_FALSE(LoadResultSet(dir).ok());  // the whole folder: the bad cell is refused
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
