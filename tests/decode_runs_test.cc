// Decode runs (sim/serving/scheduler.h) against stepping every iteration in full: the same workloads
// replayed with ReplayOptions::advance_decode_runs on and off must write the same files, byte for byte
// (results.pb, summary.json, requests.csv, timeseries.csv, timeline.json and the vLLM benchmark JSON).
// The workloads are generated chat and agent sessions and random requests at rates that keep several
// requests decoding together on small GPUs, so runs meet block boundaries (with and without room),
// evictions, preemptions, completions and arrivals (open and closed loop); each case also checks that
// runs were taken. A third replay of each, with runs, streams its files as the run goes
// (ResultsFileStream) with latency values spilled every 7 values and session records every 3, and
// collects the vLLM JSON as requests finish (VllmMetricsCollector, its values spilled every 5, with and
// without warm-up): the same files again.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "gtest/gtest.h"
#include "proto/workload.pb.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "sim/serving/vllm_metrics.h"
#include "traces/generators/workload_generator.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// The shapes of presets/workloads/chat.textproto and agent.textproto, scaled down to fit the small GPUs
// below, at rates that keep several requests decoding together.
constexpr char kChatSpec[] = R"pb(
  name: "chat" block_tokens: 16 num_requests: 300 decode_s_per_token: 0.01
  arrivals { gamma { cv: 2 } rate_per_s: 12 }
  classes {
    name: "chat"
    system_prompts {
      num_prompts: 4
      prompt_tokens_distribution { uniform { min: 40 max: 300 } }
      zipf_exponent: 1
    }
    chat {
      turns { zipf { min: 1 max: 12 exponent: 1 } }
      input_tokens { lognormal { median: 40 sigma: 1.0 } min_value: 1 max_value: 400 }
      output_tokens { lognormal { median: 60 sigma: 0.8 } min_value: 1 max_value: 400 }
      think_time_s { exponential { mean: 2 } }
      max_context_tokens: 1800
    }
  }
)pb";
constexpr char kAgentSpec[] = R"pb(
  name: "agent" block_tokens: 16 num_requests: 300 decode_s_per_token: 0.01
  arrivals { poisson {} rate_per_s: 3 }
  classes {
    name: "agent"
    system_prompts { prompt_tokens: 300 }
    agent {
      calls { uniform { min: 3 max: 8 } }
      task_tokens { lognormal { median: 100 sigma: 0.6 } }
      output_tokens { lognormal { median: 50 sigma: 0.7 } min_value: 1 max_value: 300 }
      tools {
        name: "bash" weight: 1
        duration_s { lognormal { median: 0.5 sigma: 1.0 } max_value: 5 }
        result_tokens { lognormal { median: 100 sigma: 1.0 } max_value: 600 }
      }
      max_context_tokens: 1800
    }
  }
)pb";

proto::WorkloadSpec Spec(const char* text) {
  proto::WorkloadSpec spec;
  absl::Status parsed = ParseTextProto(text, "spec", &spec);
  EXPECT_TRUE(parsed.ok()) << parsed;
  return spec;
}

// Random requests: Poisson arrivals, prompts that extend one of a few shared prefixes (prefix-chained
// ids, so later prompts reuse earlier blocks), output lengths from 1 to 300 tokens.
std::vector<Request> RandomRequests(uint64_t seed, int32_t count, int32_t block_tokens) {
  std::mt19937_64 rng(seed);
  std::vector<Request> requests;
  int64_t arrival_ns = 0;
  uint64_t next_hash = 1;
  std::vector<std::vector<uint64_t>> prefixes(4);
  for (auto& prefix : prefixes) {
    for (int b = 0; b < 10; ++b) prefix.push_back(next_hash++);
  }
  for (int32_t i = 0; i < count; ++i) {
    arrival_ns += static_cast<int64_t>(std::exponential_distribution<double>(40.0)(rng) * 1e9);
    Request r;
    r.request_id = static_cast<uint64_t>(i);
    r.arrival_ns = arrival_ns;
    const std::vector<uint64_t>& prefix = prefixes[rng() % prefixes.size()];
    const int64_t shared_blocks = static_cast<int64_t>(rng() % (prefix.size() + 1));
    const int64_t extra_tokens = 1 + static_cast<int64_t>(rng() % 400);
    r.input_tokens = shared_blocks * block_tokens + extra_tokens;
    r.output_tokens = 1 + static_cast<int64_t>(rng() % 300);
    r.block_tokens = block_tokens;
    r.block_hashes.assign(prefix.begin(), prefix.begin() + shared_blocks);
    while (static_cast<int64_t>(r.block_hashes.size()) * block_tokens < r.input_tokens) {
      r.block_hashes.push_back(next_hash++);
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

struct Case {
  std::string name;
  proto::ExperimentConfig overrides;
  int64_t gpu_blocks;
};

std::vector<Case> Configs() {
  std::vector<Case> cases;
  {
    proto::ExperimentConfig c;  // prefix caching, cache-aware routing over 3 replicas
    c.mutable_cluster()->set_num_replicas(3);
    c.mutable_cluster()->set_router(proto::ROUTER_KIND_CACHE_AWARE);
    cases.push_back({"prefix_cache_aware", c, 400});
  }
  {
    proto::ExperimentConfig c;  // no prefix caching, recompute preemption on a tight GPU
    c.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_NONE);
    c.mutable_scheduler()->set_preemption(proto::PREEMPTION_MODE_RECOMPUTE);
    cases.push_back({"no_reuse_recompute", c, 120});
  }
  {
    proto::ExperimentConfig c;  // host tier (evictions demote), swap preemption, fixed chunks
    proto::TierConfig* host = c.mutable_cache()->add_lower_tiers();
    host->set_kind(proto::TIER_KIND_HOST);
    host->set_capacity_bytes(int64_t{2} << 30);
    c.mutable_cache()->set_gpu_evict_action(proto::EVICT_ACTION_DEMOTE);
    c.mutable_scheduler()->set_preemption(proto::PREEMPTION_MODE_SWAP);
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_FIXED);
    c.mutable_scheduler()->set_chunk_tokens(256);
    cases.push_back({"host_swap_chunked", c, 150});
  }
  {
    proto::ExperimentConfig c;  // adaptive chunks, overlapped transfers, segment reuse, 2 replicas
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_ADAPTIVE);
    c.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_SEGMENT);
    c.mutable_cost_model()->set_overlap_transfers(true);
    proto::TierConfig* host = c.mutable_cache()->add_lower_tiers();
    host->set_kind(proto::TIER_KIND_HOST);
    host->set_capacity_bytes(int64_t{1} << 30);
    c.mutable_cluster()->set_num_replicas(2);
    c.mutable_cluster()->set_router(proto::ROUTER_KIND_LEAST_TOKENS);
    cases.push_back({"adaptive_segment_overlap", c, 200});
  }
  {
    proto::ExperimentConfig c;  // closed loop: each session's next request arrives when its last one ends
    c.mutable_workload()->set_closed_loop_sessions(true);
    c.mutable_cluster()->set_num_replicas(2);
    c.mutable_cluster()->set_router(proto::ROUTER_KIND_CACHE_AWARE);
    cases.push_back({"closed_loop", c, 300});
  }
  // Queues behind a head that cannot be admitted, which runs go on past: the sequence limit, the token
  // budget that the batch's decodes use up, and (prefill first, no chunks) a GPU too small for the head.
  {
    proto::ExperimentConfig c;
    c.mutable_scheduler()->set_max_num_seqs(4);
    cases.push_back({"sequence_limit_queue", c, 400});
  }
  {
    proto::ExperimentConfig c;
    c.mutable_scheduler()->set_max_num_batched_tokens(12);
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_FIXED);
    c.mutable_scheduler()->set_chunk_tokens(12);
    cases.push_back({"token_budget_queue", c, 400});
  }
  {
    proto::ExperimentConfig c;
    c.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_NONE);
    c.mutable_scheduler()->set_preemption(proto::PREEMPTION_MODE_RECOMPUTE);
    cases.push_back({"prefill_first_tight_gpu", c, 90});
  }
  return cases;
}

struct Output {
  std::vector<std::string> files;  // contents, in the order of kFiles
  int64_t run_advanced_iterations = 0;
  int64_t inline_completed_iterations = 0;
  int64_t iterations = 0;
};

const char* const kFiles[] = {"results.pb", "summary.json", "requests.csv", "timeseries.csv", "timeline.json"};

// The vLLM JSON's options: the defaults, and percentiles with warm-up by count and by time.
std::vector<VllmMetricsOptions> VllmOptions() {
  VllmMetricsOptions warm;
  warm.percentiles = {50, 90, 99.9};
  warm.warmup_requests = 17;
  warm.warmup_s = 0.5;
  return {VllmMetricsOptions{}, warm};
}

// Replays and writes the files into `dir`, and the vLLM JSONs: from the Results in memory, or, if `stream`,
// as the run goes with small spill bounds.
Output Replay(const proto::ExperimentConfig& config, TraceReader* reader, bool advance, const std::string& dir,
              bool stream = false) {
  Output out;
  auto cost_model = CreateCostModel(config);
  EXPECT_TRUE(cost_model.ok()) << cost_model.status();
  if (!cost_model.ok()) return out;
  ReplayOptions options;
  options.record_token_gaps = true;
  options.timeseries_interval_ns = 50 * kNsPerMs;
  options.advance_decode_runs = advance;
  std::unique_ptr<ResultsFileStream> files;
  std::vector<std::unique_ptr<VllmMetricsCollector>> vllm;
  if (stream) {
    for (const VllmMetricsOptions& vllm_options : VllmOptions()) {
      absl::StatusOr<std::unique_ptr<VllmMetricsCollector>> collector =
          VllmMetricsCollector::Create(config.slo(), vllm_options, /*memory_values=*/5);
      EXPECT_TRUE(collector.ok()) << collector.status();
      if (!collector.ok()) return out;
      vllm.push_back(std::move(*collector));
      options.observers.push_back(vllm.back().get());
    }
    absl::StatusOr<std::unique_ptr<ResultsFileStream>> opened = ResultsFileStream::Open(dir);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return out;
    files = std::move(*opened);
    options.results_sink = files.get();
    options.summary_memory_values = 7;
    options.session_memory_records = 3;
  }
  absl::StatusOr<ReplayOutput> replay = RunReplay(config, **cost_model, reader, options);
  EXPECT_TRUE(replay.ok()) << replay.status();
  if (!replay.ok()) return out;
  out.run_advanced_iterations = replay->run_advanced_iterations;
  out.inline_completed_iterations = replay->inline_completed_iterations;
  out.iterations = replay->results.summary().num_iterations();
  absl::Status written = stream ? files->Finish(replay->results, replay->timeline_json)
                                : WriteResultsFiles(dir, replay->results, replay->timeline_json);
  EXPECT_TRUE(written.ok()) << written;
  for (const char* file : kFiles) {
    absl::StatusOr<std::string> contents = ReadFile(absl::StrCat(dir, "/", file));
    EXPECT_TRUE(contents.ok()) << contents.status();
    out.files.push_back(contents.ok() ? *contents : "");
  }
  const std::vector<VllmMetricsOptions> vllm_options = VllmOptions();
  for (size_t i = 0; i < vllm_options.size(); ++i) {
    absl::StatusOr<Json> json =
        stream ? vllm[i]->Finish() : VllmBenchmarkJson(replay->results, config.slo(), vllm_options[i]);
    EXPECT_TRUE(json.ok()) << json.status();
    out.files.push_back(json.ok() ? json->dump() : "");
  }
  return out;
}

// Replays the workload `make_reader` gives twice, with runs and without, and compares every output.
template <typename MakeReader>
void ExpectSameOutputs(const std::string& name, const proto::ExperimentConfig& config, MakeReader make_reader) {
  SCOPED_TRACE(name);
  const std::string dir = absl::StrCat(testing::TempDir(), "/decode_runs_", name);
  std::unique_ptr<TraceReader> stepped_reader = make_reader();
  const Output stepped = Replay(config, stepped_reader.get(), false, dir + "_stepped");
  std::unique_ptr<TraceReader> run_reader = make_reader();
  const Output runs = Replay(config, run_reader.get(), true, dir + "_runs");
  ASSERT_EQ(stepped.files.size(), runs.files.size());
  for (size_t i = 0; i < runs.files.size(); ++i) {
    const std::string file = i < std::size(kFiles) ? kFiles[i] : absl::StrCat("vllm", i - std::size(kFiles), ".json");
    EXPECT_FALSE(runs.files[i].empty()) << file;
    EXPECT_TRUE(runs.files[i] == stepped.files[i]) << file << " differs (" << runs.files[i].size() << " against "
                                                   << stepped.files[i].size() << " bytes)";
  }
  std::unique_ptr<TraceReader> stream_reader = make_reader();
  const Output streamed = Replay(config, stream_reader.get(), true, dir + "_streamed", /*stream=*/true);
  ASSERT_EQ(streamed.files.size(), stepped.files.size());
  for (size_t i = 0; i < streamed.files.size(); ++i) {
    const std::string file = i < std::size(kFiles) ? kFiles[i] : absl::StrCat("vllm", i - std::size(kFiles), ".json");
    EXPECT_TRUE(streamed.files[i] == stepped.files[i]) << file << " streamed differs ("
                                                       << streamed.files[i].size() << " against "
                                                       << stepped.files[i].size() << " bytes)";
  }
  EXPECT_EQ(stepped.run_advanced_iterations, 0);
  EXPECT_EQ(stepped.inline_completed_iterations, 0);
  // The comparison means something only if runs were taken (on the tight GPUs most iterations wait
  // behind preempted requests or block shortages, so only a few percent are in runs there).
  EXPECT_GT(runs.run_advanced_iterations, 50)
      << runs.run_advanced_iterations << " of " << runs.iterations << " iterations";
  // And some of them completed without their iteration-end event (Engine: a run's iteration that ends
  // before every queued event), which the files must not tell apart either.
  EXPECT_GT(runs.inline_completed_iterations, 0) << runs.iterations << " iterations";
}

proto::ExperimentConfig Resolved(const Case& c) {
  proto::ExperimentConfig overrides = c.overrides;
  overrides.mutable_cache()->set_gpu_capacity_blocks(c.gpu_blocks);
  overrides.mutable_cache()->set_block_tokens(16);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(overrides, c.name);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : proto::ExperimentConfig();
}

TEST(DecodeRunsTest, GeneratedChatAndAgentMatchSteppedIterations) {
  for (const Case& c : Configs()) {
    const proto::ExperimentConfig config = Resolved(c);
    for (const char* text : {kChatSpec, kAgentSpec}) {
      const proto::WorkloadSpec spec = Spec(text);
      ExpectSameOutputs(absl::StrCat(c.name, "_", spec.name()), config, [&spec]() -> std::unique_ptr<TraceReader> {
        auto generator = WorkloadGenerator::Create(spec, /*seed=*/7, nullptr);
        EXPECT_TRUE(generator.ok()) << generator.status();
        return std::move(*generator);
      });
    }
  }
}

TEST(DecodeRunsTest, RandomRequestsMatchSteppedIterations) {
  for (const Case& c : Configs()) {
    const proto::ExperimentConfig config = Resolved(c);
    for (uint64_t seed : {1, 2, 3}) {
      const std::vector<Request> requests = RandomRequests(seed, 250, 16);
      ExpectSameOutputs(absl::StrCat(c.name, "_random", seed), config, [&requests]() {
        TraceInfo info;
        info.path = "random";
        info.format = "generated";
        info.block_tokens = 16;
        return std::make_unique<VectorTraceReader>(requests, info);
      });
    }
  }
}

}  // namespace
}  // namespace kvsim
