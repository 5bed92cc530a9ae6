// Speed of cache replay (Google Benchmark; numbers, not a test): a seeded 10M-access Zipf trace
// (1M blocks, exponent 1.0, requests of 16 accesses), capacity 100K blocks (10% of the blocks).
//   BM_KvsimCacheLru   the CacheSimulator loop `kvsim cache` runs, with LRU
//   BM_PlainLru        a plain std::unordered_map + std::list LRU written here, same trace and capacity
//   BM_OnePassMrc      the one-pass LRU miss-ratio curve (every size) over the same trace
//   BM_Policy/<name>   CacheSimulator with each registered policy
//   BM_Ratios          the three above in interleaved repetitions on the same trace object, each timed
//                      in thread CPU time, the fastest repetition of each kept: the ratios
//                      kvsim_lru / plain_lru and mrc / kvsim_lru that the speed targets are about, robust
//                      to other load on the machine (a single run of each is not).
//   BM_Prefix/<policy>/<percent>  the goals' benchmark: a generated LLM-prefix trace (the `chat` workload
//                      preset's shape, 16-token blocks, at least 8M block accesses, compiled with dense
//                      ids), each of lru, fifo, sieve, arc, s3fifo, belady at 1% and 10% of its distinct
//                      blocks, in thread CPU time, with `vs_plain` = its speed over BM_PrefixPlainLru's at
//                      the same size, measured in the same process (the baseline runs first).
//   BM_PrefixPlainLru/<percent>   the baseline: std::unordered_map + std::list LRU on the same trace.
//   BM_PrefixHashIds/<policy>/<percent>  the same replay without dense ids (the policies' hash-map
//                      indexes, as streaming replay runs): what dense ids buy.
// Each reports items_per_second = accesses per second (CPU time). Run:
//   bazel run //sim/cache:cache_benchmark -- --benchmark_filter=BM_Prefix
#include <algorithm>
#include <cmath>
#include <list>
#include <random>
#include <unordered_map>

#include "absl/hash/hash.h"
#include "benchmark/benchmark.h"
#include "google/protobuf/text_format.h"
#include "policies/eviction_policy.h"
#include "proto/workload.pb.h"
#include "sim/cache/cache_simulator.h"
#include "sim/cache/mrc.h"
#include "traces/generators/workload_generator.h"
#include "util/check.h"
#include "util/heap_tuning.h"
#include "util/thread_cpu_time.h"

namespace kvsim {
namespace {

constexpr int64_t kAccesses = 10'000'000;
constexpr int64_t kBlocks = 1'000'000;
constexpr int64_t kCapacity = 100'000;
constexpr int kBlocksPerRequest = 16;

const CompiledTrace& ZipfTrace() {
  static const CompiledTrace* trace = [] {
    std::vector<double> cdf(kBlocks);
    double sum = 0;
    for (int64_t i = 0; i < kBlocks; ++i) cdf[i] = (sum += 1.0 / static_cast<double>(i + 1));
    std::mt19937_64 rng(20231116);
    std::uniform_real_distribution<double> uniform(0, sum);
    auto* t = new CompiledTrace;
    t->blocks.reserve(kAccesses);
    for (int64_t i = 0; i < kAccesses; ++i) {
      const int64_t rank = std::lower_bound(cdf.begin(), cdf.end(), uniform(rng)) - cdf.begin();
      // Spread ranks over the id space so that hash tables see realistic ids.
      t->blocks.push_back(static_cast<BlockId>(rank) * 0x9E3779B97F4A7C15ULL);
    }
    t->tokens.assign(kAccesses, 16);
    for (int64_t r = 0; r * kBlocksPerRequest < kAccesses; ++r) {
      t->request_begin.push_back(r * kBlocksPerRequest);
      CompiledTrace::RequestMeta meta;
      meta.request_id = r;
      meta.block_tokens = 16;
      t->requests.push_back(meta);
    }
    t->request_begin.push_back(kAccesses);
    ComputeNextUse(t);
    return t;
  }();
  return *trace;
}

void RunPolicy(benchmark::State& state, const std::string& name) {
  const CompiledTrace& trace = ZipfTrace();
  double hit_ratio = 0;
  for (auto _ : state) {
    CacheSimulator sim(*CreateEvictionPolicy(name), kCapacity);
    for (int64_t r = 0; r < trace.num_requests(); ++r) sim.ProcessRequest(trace.View(r));
    hit_ratio = sim.stats().HitRatio();
  }
  state.SetItemsProcessed(state.iterations() * kAccesses);
  state.counters["hit_ratio"] = hit_ratio;
}

void BM_KvsimCacheLru(benchmark::State& state) { RunPolicy(state, "lru"); }
BENCHMARK(BM_KvsimCacheLru)->Unit(benchmark::kMillisecond)->Iterations(1);

// A plain LRU: std::list for the order, std::unordered_map (with the same hash function class as
// kvsim's absl tables) for the index. Returns the hits.
int64_t PlainLruHits(const CompiledTrace& trace) {
  std::list<BlockId> order;  // front = most recent
  std::unordered_map<BlockId, std::list<BlockId>::iterator, absl::Hash<BlockId>> index;
  int64_t hits = 0;
  for (BlockId b : trace.blocks) {
    auto it = index.find(b);
    if (it != index.end()) {
      ++hits;
      order.splice(order.begin(), order, it->second);
      continue;
    }
    if (static_cast<int64_t>(index.size()) >= kCapacity) {
      index.erase(order.back());
      order.pop_back();
    }
    order.push_front(b);
    index.emplace(b, order.begin());
  }
  return hits;
}

double KvsimLruHitRatio(const CompiledTrace& trace) {
  CacheSimulator sim(*CreateEvictionPolicy("lru"), kCapacity);
  for (int64_t r = 0; r < trace.num_requests(); ++r) sim.ProcessRequest(trace.View(r));
  return sim.stats().HitRatio();
}

void BM_PlainLru(benchmark::State& state) {
  const CompiledTrace& trace = ZipfTrace();
  int64_t hits = 0;
  for (auto _ : state) hits = PlainLruHits(trace);
  state.SetItemsProcessed(state.iterations() * kAccesses);
  state.counters["hit_ratio"] = static_cast<double>(hits) / kAccesses;
}
BENCHMARK(BM_PlainLru)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_OnePassMrc(benchmark::State& state) {
  const CompiledTrace& trace = ZipfTrace();
  double hit_ratio = 0;
  for (auto _ : state) {
    auto mrc = ComputeLruMrcOnTrace(trace, {});
    hit_ratio = mrc->HitRatio(kCapacity);
  }
  state.SetItemsProcessed(state.iterations() * kAccesses);
  state.counters["hit_ratio"] = hit_ratio;  // equals BM_KvsimCacheLru's
}
BENCHMARK(BM_OnePassMrc)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Ratios(benchmark::State& state) {
  const CompiledTrace& trace = ZipfTrace();
  const int repetitions = static_cast<int>(state.range(0));
  double kvsim_s = 1e300, plain_s = 1e300, mrc_s = 1e300;
  int64_t checksum = 0;
  for (auto _ : state) {
    for (int rep = 0; rep < repetitions; ++rep) {
      kvsim_s = std::min(kvsim_s, CpuSecondsOf([&] { checksum += KvsimLruHitRatio(trace) > 0; }));
      plain_s = std::min(plain_s, CpuSecondsOf([&] { checksum += PlainLruHits(trace); }));
      mrc_s = std::min(mrc_s, CpuSecondsOf([&] { checksum += ComputeLruMrcOnTrace(trace, {})->sampled_accesses(); }));
    }
  }
  benchmark::DoNotOptimize(checksum);
  const double n = static_cast<double>(kAccesses);
  state.counters["kvsim_lru_per_s"] = n / kvsim_s;
  state.counters["plain_lru_per_s"] = n / plain_s;
  state.counters["mrc_per_s"] = n / mrc_s;
  state.counters["lru_vs_plain"] = plain_s / kvsim_s;  // target >= 1
  state.counters["mrc_vs_lru"] = kvsim_s / mrc_s;      // target >= 0.5
}
BENCHMARK(BM_Ratios)->Arg(3)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Policy(benchmark::State& state, std::string name) { RunPolicy(state, name); }

// The LLM-prefix trace: multi-turn chat in the shape of presets/workloads/chat.textproto (8 shared system
// prompts, every turn re-sending its conversation), with more sessions at once so that the working set
// is larger than one conversation: 75,000 requests, about 8.5M block accesses.
constexpr char kPrefixSpec[] = R"pb(
  name: "chat-bench"
  seed: 1
  block_tokens: 16
  num_requests: 75000
  decode_s_per_token: 0.02
  arrivals {
    gamma { cv: 2 }
    rate_per_s: 4
  }
  classes {
    name: "chat"
    system_prompts {
      num_prompts: 8
      prompt_tokens_distribution { uniform { min: 200 max: 1500 } }
      zipf_exponent: 1
    }
    chat {
      turns { zipf { min: 1 max: 30 exponent: 1 } }
      input_tokens {
        lognormal { median: 80 sigma: 1.0 }
        min_value: 1
        max_value: 4000
      }
      output_tokens {
        lognormal { median: 250 sigma: 0.8 }
        min_value: 1
        max_value: 4000
      }
      think_time_s { exponential { mean: 30 } }
      max_context_tokens: 32768
    }
  }
)pb";

CompiledTrace* PrefixTrace() {
  static CompiledTrace* trace = [] {
    proto::WorkloadSpec spec;
    KVSIM_CHECK(google::protobuf::TextFormat::ParseFromString(kPrefixSpec, &spec));
    auto generator = WorkloadGenerator::Create(spec, spec.seed(), nullptr);
    KVSIM_CHECK(generator.ok()) << generator.status();
    auto compiled = CompileTrace(generator->get(), CacheReplayOptions{});
    KVSIM_CHECK(compiled.ok()) << compiled.status();
    auto* t = new CompiledTrace(std::move(*compiled));
    KVSIM_CHECK(t->num_accesses() >= 8'000'000) << "the prefix trace has only " << t->num_accesses() << " accesses";
    ComputeNextUse(t);
    return t;
  }();
  return trace;
}

int64_t PrefixCapacity(int percent) {
  return std::max<int64_t>(1, static_cast<int64_t>(PrefixTrace()->distinct_blocks.size()) * percent / 100);
}

// The baseline's CPU seconds at each size, measured once per process (by BM_PrefixPlainLru, or here if
// a filter skipped it).
double PlainPrefixSeconds(int percent);

int64_t PlainLruHitsAt(const CompiledTrace& trace, int64_t capacity) {
  std::list<BlockId> order;  // front = most recent
  std::unordered_map<BlockId, std::list<BlockId>::iterator, absl::Hash<BlockId>> index;
  index.reserve(static_cast<size_t>(capacity) + 1);
  int64_t hits = 0;
  for (BlockId b : trace.blocks) {
    auto it = index.find(b);
    if (it != index.end()) {
      ++hits;
      order.splice(order.begin(), order, it->second);
      continue;
    }
    if (static_cast<int64_t>(index.size()) >= capacity) {
      index.erase(order.back());
      order.pop_back();
    }
    order.push_front(b);
    index.emplace(b, order.begin());
  }
  return hits;
}

double PlainPrefixSeconds(int percent) {
  static double seconds[101] = {};
  if (seconds[percent] == 0) {
    int64_t hits = 0;
    seconds[percent] = CpuSecondsOf([&] { hits = PlainLruHitsAt(*PrefixTrace(), PrefixCapacity(percent)); });
    benchmark::DoNotOptimize(hits);
  }
  return seconds[percent];
}

void BM_PrefixPlainLru(benchmark::State& state) {
  const int percent = static_cast<int>(state.range(0));
  const CompiledTrace& trace = *PrefixTrace();
  int64_t hits = 0;
  double seconds = 0;
  for (auto _ : state) seconds = CpuSecondsOf([&] { hits = PlainLruHitsAt(trace, PrefixCapacity(percent)); });
  state.SetItemsProcessed(state.iterations() * trace.num_accesses());
  state.counters["accesses_per_cpu_s"] = trace.num_accesses() / seconds;
  state.counters["hit_ratio"] = static_cast<double>(hits) / trace.num_accesses();
  state.counters["capacity_blocks"] = static_cast<double>(PrefixCapacity(percent));
}

// `dense`: with the compiled trace's dense ids (what `kvsim cache` runs over a compiled trace), else the
// hashes and the policies' hash maps.
void RunPrefix(benchmark::State& state, const std::string& name, bool dense) {
  const int percent = static_cast<int>(state.range(0));
  CompiledTrace* trace = PrefixTrace();
  const int64_t capacity = PrefixCapacity(percent);
  CompiledTrace hashed;
  if (!dense) {  // the same trace without its dense ids
    hashed = *trace;
    hashed.dense_blocks.clear();
  }
  const CompiledTrace& run = dense ? *trace : hashed;
  CacheStats stats;
  double seconds = 0;
  for (auto _ : state) {
    seconds = CpuSecondsOf([&] {
      CacheSimulator sim(*CreateEvictionPolicy(name), capacity);
      if (dense) sim.UseDenseIds(&run.distinct_blocks);
      for (int64_t r = 0; r < run.num_requests(); ++r) sim.ProcessRequest(run.View(r));
      stats = sim.stats();
    });
  }
  const double n = static_cast<double>(run.num_accesses());
  state.SetItemsProcessed(state.iterations() * run.num_accesses());
  state.counters["accesses_per_cpu_s"] = n / seconds;
  state.counters["vs_plain"] = PlainPrefixSeconds(percent) / seconds;
  state.counters["hit_ratio"] = stats.HitRatio();
  state.counters["capacity_blocks"] = static_cast<double>(capacity);
}

void RegisterPrefixBenchmarks() {
  for (int percent : {1, 10}) {
    benchmark::RegisterBenchmark("BM_PrefixPlainLru", BM_PrefixPlainLru)
        ->Arg(percent)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  for (const char* name : {"lru", "fifo", "sieve", "arc", "s3fifo", "belady"}) {
    for (bool dense : {true, false}) {
      const std::string label = std::string(dense ? "BM_Prefix/" : "BM_PrefixHashIds/") + name;
      benchmark::RegisterBenchmark(label.c_str(),
                                   [name, dense](benchmark::State& state) { RunPrefix(state, name, dense); })
          ->Arg(1)
          ->Arg(10)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
    }
  }
}

// After static initialisation, when every policy has registered.
void RegisterPolicyBenchmarks() {
  for (const std::string& name : EvictionPolicyNames()) {
    benchmark::RegisterBenchmark(("BM_Policy/" + name).c_str(), BM_Policy, name)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  kvsim::TuneHeapForBatchRun();  // as `kvsim cache` does: the simulators' tables are not re-faulted per run
  kvsim::RegisterPrefixBenchmarks();
  kvsim::RegisterPolicyBenchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
