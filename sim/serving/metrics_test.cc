#include "sim/serving/metrics.h"

#include <dirent.h>

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/results_writer.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

// Ten requests arriving at 0 with TTFT 1..10 ms, two output tokens 1 ms apart, 100-token prompts without
// block hashes (7 blocks of 16 tokens each), request i with i / 2 blocks of prefix potential.
proto::Results TenRequests(const proto::SloConfig& slo) {
  MetricsCollector metrics(kNsPerS, {.slo = slo, .block_tokens = 16});
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
    s.prefix_potential_blocks = i / 2;
    metrics.OnArrival(0, s);
    metrics.OnRequestFinished(s.finish_ns, s);
  }
  metrics.OnRunEnd(11 * kNsPerMs, {});
  absl::StatusOr<proto::Results> results = metrics.TakeResults();
  EXPECT_TRUE(results.ok()) << results.status();
  return *results;
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
  EXPECT_DOUBLE_EQ(s.prefix_hit_ratio_blocks(), 25.0 / 70);  // (0 + 1 + 1 + ... + 5) / (10 x ceil(100 / 16))
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
  MetricsCollector metrics(kNsPerS, {.block_tokens = 16});
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
  absl::StatusOr<proto::Results> taken = metrics.TakeResults();
  ASSERT_TRUE(taken.ok()) << taken.status();
  const proto::Results& results = *taken;
  ASSERT_EQ(results.requests_size(), 2);
  EXPECT_FALSE(results.requests(0).has_tpot_ns());
  EXPECT_EQ(results.requests(1).tpot_ns(), 2 * kNsPerMs);
  const std::string csv = RequestsCsv(results);
  EXPECT_NE(csv.find("\n1,0,1,0,0,1000000,,1000000,10,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n3,0,1,0,0,1000000,2000000,5000000,10,3,"), std::string::npos) << csv;
  EXPECT_TRUE(ProtoToJson(results.requests(0))["tpot_ns"].is_null());
  EXPECT_EQ(ProtoToJson(results.requests(1))["tpot_ns"], 2 * kNsPerMs);
}

// The same requests in another order, with the latency values spilled to disk every 3 values: the same
// summary, bit for bit, as all values sorted in memory.
TEST(MetricsCollectorTest, SpilledDistributionsEqualTheInMemoryOnes) {
  proto::Results reference, spilled;
  for (const int64_t run_values : {SortedSpill::kDefaultRunValues, int64_t{3}}) {
    MetricsCollector metrics(kNsPerS, {.sorted_run_values = run_values, .block_tokens = 16});
    std::vector<RequestState> states(50);
    for (int i = 0; i < 50; ++i) {
      RequestState& s = states[i];
      s.request.request_id = i;
      s.request.input_tokens = 10;
      s.generated_tokens = 1 + i % 4;
      s.arrival_ns = i * 1000;
      s.first_scheduled_ns = s.arrival_ns + (i * 7919) % 1000003;
      s.first_token_ns = s.first_scheduled_ns + (i * 104729) % 999983;
      s.last_token_ns = s.finish_ns = s.first_token_ns + (s.generated_tokens - 1) * ((i * 31) % 1009 + 1);
      metrics.OnArrival(s.arrival_ns, s);
    }
    for (int k = 0; k < 50; ++k) {
      const RequestState& s = states[run_values == 3 ? 49 - k : k];  // finishing in reverse order
      metrics.OnRequestFinished(s.finish_ns, s);
    }
    metrics.OnRunEnd(2 * kNsPerS, {});
    absl::StatusOr<proto::Results> results = metrics.TakeResults();
    ASSERT_TRUE(results.ok()) << results.status();
    (run_values == 3 ? spilled : reference) = *results;
  }
  std::string a, b;
  ASSERT_TRUE(reference.summary().SerializeToString(&a) && spilled.summary().SerializeToString(&b));
  EXPECT_TRUE(a == b) << reference.summary().DebugString() << "\nvs\n" << spilled.summary().DebugString();
}

// Names in `dir` other than . and ..
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

// A Results with every part results.pb has: run, summary, requests (with and without TPOT, token gaps,
// ids of several varint bytes), series, sessions and the TTFT breakdown; enough records that the streamed
// files pass their 1 MiB buffers several times.
proto::Results FullResults() {
  proto::Results results;
  results.mutable_run()->set_trace_path("trace.kvt");
  results.mutable_run()->set_config_text("name: \"x\"\n");
  results.mutable_summary()->set_num_requests(30000);
  results.mutable_summary()->mutable_ttft_ms()->set_p99(12.5);
  for (int i = 0; i < 30000; ++i) {
    proto::RequestResult* r = results.add_requests();
    r->set_request_id(uint64_t{1} << (i % 64));
    r->set_replica(i % 3);
    r->set_finished(i % 11 != 0);
    r->set_arrival_ns(int64_t{i} * 1'000'003);
    r->set_ttft_ns(i * 17);
    if (i % 5 != 0) r->set_tpot_ns(i % 997);
    if (i % 7 == 0) r->add_token_gaps_ns(i), r->add_token_gaps_ns(-1);
    r->set_input_tokens(100 + i);
  }
  for (int i = 0; i < 40000; ++i) {
    proto::TimeSeriesPoint* p = results.add_series();
    p->set_time_ns(int64_t{i} * 100'000'000);
    p->set_replica(i % 2);
    p->set_gpu_blocks_used(i * 3);
  }
  for (int i = 0; i < 3; ++i) results.add_sessions()->set_session_id(i * 1000);
  results.mutable_ttft_breakdown()->set_ttft_ms(3.25);
  return results;
}

TEST(ResultsFileStreamTest, StreamedFilesEqualWriteResultsFiles) {
  const proto::Results results = FullResults();
  const std::string dir = testing::TempDir() + "/results_stream";
  ASSERT_TRUE(WriteResultsFiles(dir + "/whole", results, "{\"traceEvents\":[]}\n").ok());
  auto stream = ResultsFileStream::Open(dir + "/stream");
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (const proto::RequestResult& r : results.requests()) (*stream)->AddRequest(r);
  for (const proto::TimeSeriesPoint& p : results.series()) (*stream)->AddPoint(p);
  proto::Results rest = results;
  rest.clear_requests();
  rest.clear_series();
  ASSERT_TRUE((*stream)->Finish(std::move(rest), "{\"traceEvents\":[]}\n").ok());
  for (const char* file : {"results.pb", "summary.json", "requests.csv", "timeseries.csv", "timeline.json"}) {
    auto a = ReadFile(dir + "/whole/" + file);
    auto b = ReadFile(dir + "/stream/" + file);
    ASSERT_TRUE(a.ok() && b.ok()) << file;
    EXPECT_GT(a->size(), 10u) << file;
    EXPECT_TRUE(*a == *b) << file << ": " << a->size() << " vs " << b->size() << " bytes";
  }
  EXPECT_EQ(ListDir(dir + "/stream").size(), 5u);  // no temporary left
  proto::Results parsed;
  ASSERT_TRUE(parsed.ParseFromString(*ReadFile(dir + "/stream/results.pb")));
  EXPECT_EQ(parsed.requests_size(), 30000);
  EXPECT_EQ(parsed.sessions_size(), 3);
}

TEST(ResultsFileStreamTest, AnUnfinishedOrRefusedStreamLeavesNoFile) {
  const std::string dir = testing::TempDir() + "/results_stream_unfinished";
  const proto::Results results = FullResults();
  {  // an error path: never finished
    auto stream = ResultsFileStream::Open(dir);
    ASSERT_TRUE(stream.ok()) << stream.status();
    (*stream)->AddRequest(results.requests(0));
    EXPECT_EQ(ListDir(dir).size(), 2u);  // requests.csv and timeseries.csv, under temporary names
  }
  EXPECT_TRUE(ListDir(dir).empty());
  auto stream = ResultsFileStream::Open(dir);
  ASSERT_TRUE(stream.ok()) << stream.status();
  const absl::Status refused = (*stream)->Finish(results, "");  // still holds its records
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_TRUE(ListDir(dir).empty());
}

}  // namespace
}  // namespace kvsim
