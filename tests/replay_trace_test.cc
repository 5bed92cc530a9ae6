// Replays of the bundled real traces: conservation (every request finishes once, generated tokens equal
// the trace's output tokens, no block leaks, occupancy within capacity), reuse against an independent
// unbounded-cache count, and byte-identical results across runs.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "sim/serving/engine.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"
#include "util/file.h"

namespace kvsim {
namespace {

const char kMooncake[] = "traces/data/mooncake_synthetic.jsonl";
const char kAzure[] = "traces/data/azure_code_2023.csv";

// Roughly an 8B model on one GPU: 5 ms per iteration, 20 us per computed token, 2 ns per context token.
constexpr FakeCosts kCosts{
    .fixed_ns = 5'000'000, .ns_per_new_token = 20'000, .ns_per_context_token = 2, .ns_per_byte = 0};

std::vector<Request> ReadAll(const std::string& path) {
  auto reader = OpenTrace(path, {});
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<Request> requests;
  Request request;
  while ((*reader)->Next(&request)) requests.push_back(request);
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  return requests;
}

// Checks every iteration against the GPU capacity and counts each request's completions.
class ConservationObserver : public EngineObserver {
 public:
  void OnIteration(const IterationRecord& record) override {
    ++iterations;
    if (record.gpu_blocks_used > record.gpu_capacity_blocks) ++over_capacity;
  }
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override {
    ++finished[state.request.request_id];
    generated += state.generated_tokens;
    if (state.rejected) ++rejected;
  }
  int64_t iterations = 0, over_capacity = 0, generated = 0, rejected = 0;
  absl::flat_hash_map<uint64_t, int> finished;
};

struct Case {
  std::string name;
  std::string trace;
  proto::ExperimentConfig overrides;
  int64_t gpu_blocks;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"mooncake_prefix", kMooncake, {}, 800});
  {
    proto::ExperimentConfig c;  // segment reuse, host tier, swap preemption, adaptive chunks
    c.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_SEGMENT);
    proto::TierConfig* host = c.mutable_cache()->add_lower_tiers();
    host->set_kind(proto::TIER_KIND_HOST);
    host->set_capacity_bytes(int64_t{40} << 30);
    c.mutable_scheduler()->set_preemption(proto::PREEMPTION_MODE_SWAP);
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_ADAPTIVE);
    cases.push_back({"mooncake_segment_host_swap", kMooncake, c, 700});
  }
  {
    proto::ExperimentConfig c;  // two lower tiers, reload always, cache-aware routing over 3 replicas
    proto::TierConfig* host = c.mutable_cache()->add_lower_tiers();
    host->set_kind(proto::TIER_KIND_HOST);
    host->set_capacity_bytes(int64_t{8} << 30);
    proto::TierConfig* remote = c.mutable_cache()->add_lower_tiers();
    remote->set_kind(proto::TIER_KIND_REMOTE);
    remote->set_capacity_bytes(int64_t{64} << 30);
    c.mutable_cache()->set_restore_rule(proto::RESTORE_RULE_RELOAD);
    c.mutable_cluster()->set_num_replicas(3);
    c.mutable_cluster()->set_router(proto::ROUTER_KIND_CACHE_AWARE);
    cases.push_back({"mooncake_tiers_cache_aware", kMooncake, c, 500});
  }
  {
    proto::ExperimentConfig c;  // prefill-first, reuse none, least-tokens routing
    c.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_NONE);
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_NONE);
    c.mutable_cluster()->set_num_replicas(2);
    c.mutable_cluster()->set_router(proto::ROUTER_KIND_LEAST_TOKENS);
    cases.push_back({"mooncake_none_prefill_first", kMooncake, c, 800});
  }
  {
    proto::ExperimentConfig c;  // no hashes: fresh blocks of 16 tokens; a small GPU forces preemptions
    c.mutable_scheduler()->set_chunk_tokens(512);
    cases.push_back({"azure_small_gpu", kAzure, c, 2000});
  }
  return cases;
}

class ConservationTest : public testing::TestWithParam<Case> {};

TEST_P(ConservationTest, EveryRequestFinishesOnceWithItsTokens) {
  const Case& c = GetParam();
  const std::vector<Request> trace = ReadAll(c.trace);
  ASSERT_FALSE(trace.empty());
  int64_t trace_output = 0;
  for (const Request& r : trace) trace_output += r.output_tokens;

  const proto::ExperimentConfig config = TestConfig(c.gpu_blocks, c.overrides);
  FakeCostModel cost(kCosts);
  auto reader = OpenTrace(c.trace, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto engine = Engine::Create(config, &cost, (*reader)->info().block_tokens);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ConservationObserver observer;
  (*engine)->AddObserver(&observer);
  // Run() ends with every replica's leak check (BlockManager::CheckIdle).
  const absl::Status status = (*engine)->Run(reader->get());
  ASSERT_TRUE(status.ok()) << status;

  EXPECT_EQ(observer.finished.size(), trace.size());
  for (const Request& r : trace) EXPECT_EQ(observer.finished[r.request_id], 1) << "request " << r.request_id;
  EXPECT_EQ(observer.rejected, 0);
  EXPECT_EQ(observer.generated, trace_output);
  EXPECT_EQ(observer.over_capacity, 0);
  EXPECT_GT(observer.iterations, 0);
}

INSTANTIATE_TEST_SUITE_P(BundledTraces, ConservationTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

// Prefix hits of an unbounded cache in trace order: for each request, its leading blocks already seen.
int64_t UnboundedPrefixHits(const std::vector<Request>& trace) {
  absl::flat_hash_set<uint64_t> seen;
  int64_t hits = 0;
  for (const Request& r : trace) {
    size_t k = 0;
    while (k < r.block_hashes.size() && seen.contains(r.block_hashes[k])) ++k;
    hits += static_cast<int64_t>(k);
    seen.insert(r.block_hashes.begin(), r.block_hashes.end());
  }
  return hits;
}

proto::Results ReplayMooncake(proto::ExperimentConfig overrides, int64_t gpu_blocks) {
  FakeCostModel cost(kCosts);
  auto reader = OpenTrace(kMooncake, {});
  EXPECT_TRUE(reader.ok()) << reader.status();
  ReplayOptions options;
  options.timeline = false;
  auto output = RunReplay(TestConfig(gpu_blocks, overrides), cost, reader->get(), options);
  EXPECT_TRUE(output.ok()) << output.status();
  return output.ok() ? output->results : proto::Results();
}

int64_t SumReusedBlocks(const proto::Results& results) {
  int64_t sum = 0;
  for (const proto::RequestResult& r : results.requests()) sum += r.reused_blocks();
  return sum;
}

TEST(UnboundedReuseTest, ReusedBlocksEqualUnboundedPrefixHits) {
  const int64_t expected = UnboundedPrefixHits(ReadAll(kMooncake));
  ASSERT_GT(expected, 0);
  // One sequence at a time: every request sees all earlier requests' blocks computed, as cache replay does.
  proto::ExperimentConfig serial;
  serial.mutable_scheduler()->set_max_num_seqs(1);
  const proto::Results results = ReplayMooncake(serial, int64_t{1} << 40);
  EXPECT_EQ(SumReusedBlocks(results), expected);
  EXPECT_EQ(results.summary().evicted_blocks(), 0);
  int64_t potential = 0;
  for (const proto::RequestResult& r : results.requests()) potential += r.prefix_reused_blocks();
  EXPECT_EQ(potential, expected);

  // Concurrent requests cannot reuse blocks still being computed: at most as many.
  const proto::Results concurrent = ReplayMooncake({}, int64_t{1} << 40);
  EXPECT_LE(SumReusedBlocks(concurrent), expected);
  EXPECT_GT(SumReusedBlocks(concurrent), expected / 2);
}

TEST(UnboundedReuseTest, ReuseNoneReusesNothing) {
  proto::ExperimentConfig none;
  none.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_NONE);
  const proto::Results results = ReplayMooncake(none, int64_t{1} << 40);
  EXPECT_EQ(SumReusedBlocks(results), 0);
  EXPECT_EQ(results.summary().reuse_hit_ratio(), 0);
  EXPECT_EQ(results.summary().recomputed_tokens(), results.summary().input_tokens());
  EXPECT_GT(results.summary().prefix_hit_ratio(), 0);  // the potential is still reported
}

TEST(DeterminismTest, SameInputsGiveByteIdenticalFiles) {
  proto::ExperimentConfig c;
  c.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_SEGMENT);
  c.mutable_cluster()->set_num_replicas(2);
  c.mutable_cluster()->set_router(proto::ROUTER_KIND_CACHE_AWARE);
  const std::string dir = testing::TempDir();
  std::vector<std::string> runs;
  for (int run = 0; run < 2; ++run) {
    FakeCostModel cost(kCosts);
    auto reader = OpenTrace(kMooncake, {});
    ASSERT_TRUE(reader.ok());
    const std::string out = dir + "/run" + std::to_string(run);
    ASSERT_TRUE(MakeDirectories(out).ok());
    ReplayOptions options;
    options.timeline_path = out + "/timeline.json";  // streamed
    options.timeline_max_events = 20000;
    auto output = RunReplay(TestConfig(600, c), cost, reader->get(), options);
    ASSERT_TRUE(output.ok()) << output.status();
    ASSERT_TRUE(WriteResultsFiles(out, output->results, output->timeline_json).ok());
    runs.push_back(out);
  }
  for (const char* file : {"results.pb", "summary.json", "requests.csv", "timeseries.csv", "timeline.json"}) {
    auto a = ReadFile(runs[0] + "/" + file);
    auto b = ReadFile(runs[1] + "/" + file);
    ASSERT_TRUE(a.ok() && b.ok()) << file;
    EXPECT_FALSE(a->empty()) << file;
    EXPECT_TRUE(*a == *b) << file << " differs between runs";
  }
}

// The results files written as the run goes (ResultsFileStream as the replay's sink, latency values
// spilled to disk every 7 values) are byte for byte the files WriteResultsFiles writes from the whole
// Results kept in memory, on every configuration of the conservation cases.
class StreamingTest : public testing::TestWithParam<Case> {};

TEST_P(StreamingTest, StreamedFilesEqualTheInMemoryOnes) {
  const Case& c = GetParam();
  const std::string dir = testing::TempDir() + "/streaming_" + c.name;
  std::vector<std::string> outs;
  for (const bool stream : {false, true}) {
    FakeCostModel cost(kCosts);
    auto reader = OpenTrace(c.trace, {});
    ASSERT_TRUE(reader.ok()) << reader.status();
    const std::string out = dir + (stream ? "/stream" : "/memory");
    ReplayOptions options;
    options.timeline = false;
    std::unique_ptr<ResultsFileStream> files;
    if (stream) {
      auto opened = ResultsFileStream::Open(out);
      ASSERT_TRUE(opened.ok()) << opened.status();
      files = std::move(*opened);
      options.results_sink = files.get();
      options.summary_memory_values = 7;
    }
    auto output = RunReplay(TestConfig(c.gpu_blocks, c.overrides), cost, reader->get(), options);
    ASSERT_TRUE(output.ok()) << output.status();
    if (stream) {
      EXPECT_EQ(output->results.requests_size(), 0);  // streamed, not kept
      EXPECT_EQ(output->results.series_size(), 0);
      ASSERT_TRUE(files->Finish(output->results, "").ok());
    } else {
      EXPECT_GT(output->results.requests_size(), 0);
      ASSERT_TRUE(WriteResultsFiles(out, output->results, "").ok());
    }
    outs.push_back(out);
  }
  for (const char* file : {"results.pb", "summary.json", "requests.csv", "timeseries.csv"}) {
    auto a = ReadFile(outs[0] + "/" + file);
    auto b = ReadFile(outs[1] + "/" + file);
    ASSERT_TRUE(a.ok() && b.ok()) << file;
    EXPECT_FALSE(a->empty()) << file;
    EXPECT_TRUE(*a == *b) << file << " streamed differs from in memory (" << a->size() << " vs " << b->size()
                          << " bytes)";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, StreamingTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(TraceErrorsTest, BadHashCountNamesTheRequest) {
  FakeCostModel cost(kCosts);
  std::vector<Request> requests = {MakeRequest(0, 0, 40, 1, {1, 2}, 16)};  // 40 tokens need 3 blocks
  VectorTraceReader reader(requests, TraceInfo{"bad.jsonl", "vector", 16});
  auto output = RunReplay(TestConfig(100), cost, &reader, ReplayOptions{});
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(output.status().message().find("bad.jsonl: request 0: 2 block hashes for 40 tokens"), std::string::npos)
      << output.status();
}

TEST(TraceErrorsTest, ArrivalsGoingBackwardsAreAnError) {
  FakeCostModel cost(kCosts);
  VectorTraceReader reader({MakeRequest(0, 500, 40, 1), MakeRequest(1, 100, 40, 1)}, TraceInfo{"t", "vector", 0});
  auto output = RunReplay(TestConfig(100), cost, &reader, ReplayOptions{});
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(output.status().message().find("request 1: arrival 100 ns before"), std::string::npos) << output.status();
}

TEST(TraceErrorsTest, RequestThatCanNeverFitIsRejectedAndReported) {
  FakeCostModel cost(kCosts);
  // 4 blocks of 16 tokens; request 1 needs 5 (64-token prompt + 1 output token).
  VectorTraceReader reader({MakeRequest(0, 0, 16, 2), MakeRequest(1, 10, 64, 1)}, TraceInfo{"t", "vector", 0});
  auto output = RunReplay(TestConfig(4), cost, &reader, ReplayOptions{});
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_EQ(output->results.summary().finished_requests(), 1);
  EXPECT_EQ(output->results.summary().rejected_requests(), 1);
  EXPECT_FALSE(ResultOf(output->results, 1).finished());
}

}  // namespace
}  // namespace kvsim
