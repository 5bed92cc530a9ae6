// Speed of the simulator core (engine, scheduler, block manager, metrics) on the bundled Mooncake trace,
// held in memory so trace parsing and results files are excluded. Costs come from the fake cost model
// (the cost model's own speed is measured with it). Run:
//   bazel run -c opt //sim/serving:replay_benchmark -- --benchmark_min_time=2
// Counter requests_per_s: replayed requests per second of wall time. BM_ReplayMooncake's third argument
// records the Perfetto timeline in memory (uncapped): its ratio to the same case without one is the
// timeline's cost; timeline_events is the document's size.
#include <cstdint>
#include <limits>
#include <vector>

#include "benchmark/benchmark.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"
#include "util/check.h"

namespace kvsim {
namespace {

std::vector<Request> LoadTrace(const char* path) {
  auto reader = OpenTrace(path, {});
  KVSIM_CHECK(reader.ok()) << reader.status();
  std::vector<Request> requests;
  Request request;
  while ((*reader)->Next(&request)) requests.push_back(request);
  return requests;
}

void BM_ReplayMooncake(benchmark::State& state) {
  static const std::vector<Request>* trace =
      new std::vector<Request>(LoadTrace("traces/data/mooncake_synthetic.jsonl"));
  const FakeCostModel cost({.fixed_ns = 5'000'000, .ns_per_new_token = 20'000, .ns_per_context_token = 2});
  proto::ExperimentConfig overrides;
  overrides.mutable_cache()->set_reuse_mode(static_cast<proto::ReuseMode>(state.range(0)));
  const proto::ExperimentConfig config = TestConfig(state.range(1), overrides);
  ReplayOptions options;
  options.timeline = state.range(2) != 0;
  options.timeline_max_events = std::numeric_limits<int64_t>::max();
  for (auto _ : state) {
    VectorTraceReader reader(*trace, TraceInfo{"mooncake", "vector", 512});
    auto output = RunReplay(config, cost, &reader, options);
    KVSIM_CHECK(output.ok()) << output.status();
    benchmark::DoNotOptimize(output->results.summary().finished_requests());
    state.counters["timeline_bytes"] = static_cast<double>(output->timeline_json.size());
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(trace->size()) * state.iterations(), benchmark::Counter::kIsRate);
}
// (reuse mode, GPU blocks of 512 tokens, timeline): prefix and segment reuse, roomy and tight GPU; the
// tight prefix case also with the timeline.
BENCHMARK(BM_ReplayMooncake)
    ->Args({proto::REUSE_MODE_PREFIX, 1600, 0})
    ->Args({proto::REUSE_MODE_PREFIX, 500, 0})
    ->Args({proto::REUSE_MODE_PREFIX, 500, 1})
    ->Args({proto::REUSE_MODE_SEGMENT, 500, 0})
    ->Unit(benchmark::kMillisecond);

// The default config (Llama-3.1-8B on H200, its derived capacity) with the roofline cost model.
void BM_ReplayMooncakeRoofline(benchmark::State& state) {
  static const std::vector<Request>* trace =
      new std::vector<Request>(LoadTrace("traces/data/mooncake_synthetic.jsonl"));
  proto::ExperimentConfig overrides;
  overrides.mutable_eviction()->set_name("test_lru");
  overrides.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_ROOFLINE);  // the default on H200 is fitted
  auto config = ResolveExperimentConfig(overrides, "bench");
  KVSIM_CHECK(config.ok());
  auto cost = CreateCostModel(*config);
  KVSIM_CHECK(cost.ok()) << cost.status();
  ReplayOptions options;
  options.timeline = false;
  for (auto _ : state) {
    VectorTraceReader reader(*trace, TraceInfo{"mooncake", "vector", 512});
    auto output = RunReplay(*config, **cost, &reader, options);
    KVSIM_CHECK(output.ok()) << output.status();
    state.counters["ttft_p50_ms"] = output->results.summary().ttft_ms().p50();
    state.counters["tpot_p50_ms"] = output->results.summary().tpot_ms().p50();
    state.counters["prefix_hit"] = output->results.summary().prefix_hit_ratio();
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(trace->size()) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayMooncakeRoofline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvsim
