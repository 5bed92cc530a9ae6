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
// Each reports items_per_second = accesses per second (CPU time). Run:
//   bazel run -c opt //policies:cache_benchmark
#include <algorithm>
#include <cmath>
#include <list>
#include <random>
#include <unordered_map>

#include "absl/hash/hash.h"
#include "benchmark/benchmark.h"
#include "policies/eviction_policy.h"
#include "sim/cache/cache_simulator.h"
#include "sim/cache/mrc.h"
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
  kvsim::RegisterPolicyBenchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
