// Generation rate of WorkloadGenerator, in requests per second (items_per_second), for 1,000,000
// requests of each preset-like workload. Run:
//   bazel run //traces/generators:workload_generator_benchmark
#include <string>

#include "benchmark/benchmark.h"
#include "traces/generators/workload_generator.h"
#include "util/check.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

constexpr int64_t kRequests = 1000000;

const char kSingleTurn[] = R"(
  arrivals { poisson {} rate_per_s: 100 }
  classes { single_turn { input_tokens { fixed { value: 1024 } } output_tokens { fixed { value: 128 } } } })";

const char kChat[] = R"(
  decode_s_per_token: 0.02
  arrivals { gamma { cv: 2 } rate_per_s: 1 }
  classes {
    system_prompts { num_prompts: 8 zipf_exponent: 1
                     prompt_tokens_distribution { uniform { min: 200 max: 1500 } } }
    chat { turns { zipf { min: 1 max: 30 exponent: 1 } }
           input_tokens { lognormal { median: 80 sigma: 1 } max_value: 4000 }
           output_tokens { lognormal { median: 250 sigma: 0.8 } max_value: 4000 }
           think_time_s { exponential { mean: 30 } } max_context_tokens: 32768 } })";

const char kAgent[] = R"(
  decode_s_per_token: 0.02
  arrivals { poisson {} rate_per_s: 0.5 }
  classes {
    system_prompts { prompt_tokens: 3000 }
    agent { calls { uniform { min: 5 max: 40 } } task_tokens { lognormal { median: 800 sigma: 0.6 } }
            output_tokens { lognormal { median: 150 sigma: 0.7 } max_value: 2000 }
            tools { name: "bash" weight: 5 duration_s { lognormal { median: 1.5 sigma: 1.2 } }
                    result_tokens { lognormal { median: 400 sigma: 1.3 } max_value: 8000 } }
            tools { name: "search" weight: 2 duration_s { gamma { mean: 3 cv: 1 } }
                    result_tokens { lognormal { median: 1200 sigma: 0.8 } max_value: 8000 } }
            max_context_tokens: 128000 } })";

void Generate(benchmark::State& state, const char* text) {
  proto::WorkloadSpec spec;
  KVSIM_CHECK(ParseTextProto(text, "benchmark", &spec).ok());
  spec.set_num_requests(kRequests);
  int64_t blocks = 0;
  for (auto _ : state) {
    auto gen = WorkloadGenerator::Create(spec, 1, nullptr);
    KVSIM_CHECK(gen.ok()) << gen.status();
    Request r;
    int64_t n = 0;
    blocks = 0;
    while ((*gen)->Next(&r)) {
      ++n;
      blocks += static_cast<int64_t>(r.block_hashes.size());
    }
    KVSIM_CHECK(n == kRequests) << n;
    benchmark::DoNotOptimize(blocks);
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
  state.counters["blocks_per_request"] = static_cast<double>(blocks) / kRequests;
}

void BM_SingleTurnPoisson(benchmark::State& state) { Generate(state, kSingleTurn); }
void BM_ChatSessions(benchmark::State& state) { Generate(state, kChat); }
void BM_AgentSessions(benchmark::State& state) { Generate(state, kAgent); }

BENCHMARK(BM_SingleTurnPoisson)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ChatSessions)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_AgentSessions)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace kvsim
