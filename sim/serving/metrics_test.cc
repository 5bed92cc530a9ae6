#include "sim/serving/metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "sim/serving/results_writer.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

// Ten requests arriving at 0 with TTFT 1..10 ms, two output tokens 1 ms apart, 100-token prompts.
proto::Results TenRequests(const proto::SloConfig& slo) {
  MetricsCollector metrics(kNsPerS);
  for (int i = 1; i <= 10; ++i) {
    RequestState s;
    s.request.request_id = i;
    s.request.input_tokens = 100;
    s.request.output_tokens = 2;
    s.generated_tokens = 2;
    s.replica = 0;
    s.arrival_ns = 0;
    s.first_scheduled_ns = 0;
    s.first_token_ns = i * kNsPerMs;
    s.last_token_ns = s.finish_ns = (i + 1) * kNsPerMs;
    s.prefix_potential_tokens = 10 * i;
    metrics.OnArrival(0, s);
    metrics.OnRequestFinished(s.finish_ns, s);
  }
  metrics.OnRunEnd(11 * kNsPerMs, {});
  return metrics.BuildResults(slo);
}

TEST(MetricsCollectorTest, NearestRankPercentilesAndGoodput) {
  proto::SloConfig slo;
  slo.set_ttft_ms(5);
  const proto::Results results = TenRequests(slo);
  const proto::Summary& s = results.summary();
  EXPECT_EQ(s.finished_requests(), 10);
  EXPECT_DOUBLE_EQ(s.ttft_ms().mean(), 5.5);
  EXPECT_DOUBLE_EQ(s.ttft_ms().p50(), 5);   // 5th of 10
  EXPECT_DOUBLE_EQ(s.ttft_ms().p90(), 9);   // 9th
  EXPECT_DOUBLE_EQ(s.ttft_ms().p99(), 10);  // ceil(9.9) = 10th
  EXPECT_DOUBLE_EQ(s.tpot_ms().p50(), 1);
  EXPECT_DOUBLE_EQ(s.duration_s(), 0.011);
  EXPECT_DOUBLE_EQ(s.throughput_requests_per_s(), 10 / 0.011);
  EXPECT_DOUBLE_EQ(s.goodput_fraction(), 0.5);  // TTFT 1..5 ms meet 5 ms
  EXPECT_DOUBLE_EQ(s.goodput_requests_per_s(), 5 / 0.011);
  EXPECT_DOUBLE_EQ(s.prefix_hit_ratio(), 550.0 / 1000);  // (10 + ... + 100) / (10 x 100)
  EXPECT_EQ(s.output_tokens(), 20);
}

// Without an SLO every finished request counts as good: the table says no SLO is set instead of
// printing a goodput of 100% of finished.
TEST(ResultsWriterTest, GoodputLineSaysWhenNoSloIsSet) {
  const proto::Results none = TenRequests({});
  EXPECT_FALSE(none.summary().slo_set());
  const std::string table = SummaryTable(none);
  EXPECT_NE(table.find("goodput                      no SLO set"), std::string::npos) << table;
  EXPECT_EQ(table.find("% of finished"), std::string::npos) << table;
  proto::SloConfig slo;
  slo.set_tpot_ms(100);
  const proto::Results some = TenRequests(slo);
  EXPECT_TRUE(some.summary().slo_set());
  EXPECT_NE(SummaryTable(some).find("req/s (100.0% of finished)"), std::string::npos) << SummaryTable(some);
}

TEST(ResultsWriterTest, CsvAndTableShowEveryRequest) {
  const proto::Results results = TenRequests({});
  const std::string csv = RequestsCsv(results);
  EXPECT_EQ(csv.rfind("request_id,replica,finished,arrival_ns,queueing_ns,ttft_ns,", 0), 0u);
  int lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, 11);
  EXPECT_NE(csv.find("\n3,0,1,0,0,3000000,1000000,4000000,100,2,"), std::string::npos) << csv;
  const std::string table = SummaryTable(results);
  EXPECT_NE(table.find("10 of 10 (0 rejected)"), std::string::npos) << table;
  auto json = SummaryJson(results);
  ASSERT_TRUE(json.ok());
  // Counts are JSON numbers (protobuf's JSON printer wrote int64 fields as strings).
  EXPECT_NE(json->find("\"finished_requests\": 10,"), std::string::npos) << *json;
  EXPECT_NE(json->find("\"output_tokens\": 20,"), std::string::npos) << *json;
  EXPECT_EQ(json->find("\"10\""), std::string::npos) << *json;
}

// A one-token output has no time per output token: empty in requests.csv, null in JSON (it was 0).
TEST(ResultsWriterTest, OneTokenOutputHasNoTpot) {
  MetricsCollector metrics(kNsPerS);
  for (int tokens : {1, 3}) {
    RequestState s;
    s.request.request_id = tokens;
    s.request.input_tokens = 10;
    s.request.output_tokens = tokens;
    s.generated_tokens = tokens;
    s.replica = 0;
    s.arrival_ns = 0;
    s.first_scheduled_ns = 0;
    s.first_token_ns = kNsPerMs;
    s.last_token_ns = s.finish_ns = (1 + 2 * (tokens - 1)) * kNsPerMs;  // 2 ms per later token
    metrics.OnArrival(0, s);
    metrics.OnRequestFinished(s.finish_ns, s);
  }
  metrics.OnRunEnd(10 * kNsPerMs, {});
  const proto::Results results = metrics.BuildResults({});
  ASSERT_EQ(results.requests_size(), 2);
  EXPECT_FALSE(results.requests(0).has_tpot_ns());
  EXPECT_EQ(results.requests(1).tpot_ns(), 2 * kNsPerMs);
  const std::string csv = RequestsCsv(results);
  EXPECT_NE(csv.find("\n1,0,1,0,0,1000000,,1000000,10,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n3,0,1,0,0,1000000,2000000,5000000,10,3,"), std::string::npos) << csv;
  EXPECT_TRUE(ProtoToJson(results.requests(0))["tpot_ns"].is_null());
  EXPECT_EQ(ProtoToJson(results.requests(1))["tpot_ns"], 2 * kNsPerMs);
}

}  // namespace
}  // namespace kvsim
