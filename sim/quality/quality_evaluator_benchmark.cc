// Throughput of the quality evaluator in query-key dot products per second, next to two matrix-vector
// baselines computing the same attention logits one query at a time, on a synthetic 32K-token sample
// (1 layer, 2 KV heads x 4 query heads, head_dim 128, 64 or 512 decode steps): plain Eigen with the
// project's flags (BM_EigenMatVecBaseline) and an AVX2+FMA kernel (BM_Avx2MatVecBaseline, the SIMD width
// of the evaluator's GEMM kernels; skipped on CPUs without AVX2).
//
//   bazel run -c opt //sim:quality_evaluator_benchmark
//   KVSIM_NO_AVX2=1 bazel run -c opt //sim:quality_evaluator_benchmark   # the evaluator's portable path
//
// Every benchmark, evaluator and baselines alike, first runs one untimed warm-up pass of its timed body
// (the evaluator: one AddSample of the sample on the same evaluator), so one-off costs (allocation and
// first touch of buffers, cold caches) are left out and the numbers are steady state, as Google Benchmark
// intends. items_per_second is dot products per CPU-second (per wall-clock second in the AllCores one).
// main() tunes the heap as `kvsim` does (util/heap_tuning.h), so the timed iterations take few page faults
// (tens per sample, against tens of thousands on the first pass).
//
// The ratio lines printed at the end come from BM_Ratios/N/T: the evaluator with every policy on T
// threads (1, or 0 = every core, as `kvsim quality` runs by default) and both single-thread baselines
// timed in three interleaved repetitions in the same minutes, fastest of each kept, because the
// memory-bound baselines swing with the host's load (on a shared 2-core VM, ~50M to ~126M dots/s from run
// to run) while the compute-bound evaluator moves little. One thread is timed in thread CPU time, every
// core in wall-clock time. Measured there (AMD EPYC with AVX-512, whose kernels give the same bits as the
// AVX2 ones, 2 cores), eight runs on one day:
//   all cores: 64 steps 77-89M dots/s, 74-100% of the Eigen baseline; 512 steps 123-126M, 100-154%
//   one thread: 64 steps 34-44M dots/s, 34-42%; 512 steps 55-62M, 57-71%
// with the Eigen baseline at 77-125M dots/s. The target, 50% of the Eigen baseline, is met by the
// evaluator as it runs (every core) at both lengths in every run, and per core at 512 steps, not at 64.
// Where the time goes (perf, one thread): at 512 steps ~40% in four GEMM passes near the AVX-512 peak
// (~85 GMAC/s) that this policy set needs (the exact rows' logits and outputs, KIVI's dequantised ones;
// the exact attention of the whole layer is held, so oracle_evict reads it instead of a fifth pass), ~13%
// in the kept sets' value sums (memory-bound: value rows scattered over 16 MB per head), the rest the
// policies' per-step bookkeeping. At 64 steps the per-sample work is as large as the decode work: the
// prompt window's and Expected Attention's GEMMs are each as large as all 64 steps' rows, and KIVI's
// quantisation and the prefill scoring of 17 policies are not amortised.
//
// BM_EvaluatorAllPolicies and BM_EvaluatorOnePolicy also report page_faults_per_sample (minor faults in
// the timed iterations, divided by their number): near zero means the buffers are reused from sample to
// sample as intended.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "policies/token/token_policy.h"
#include "sim/quality/quality_evaluator.h"
#include "traces/attention/synthetic_trace.h"
#include "util/avx2_gemm.h"
#include "util/cpu_features.h"
#include "util/heap_tuning.h"
#include "util/parallel.h"
#include "util/thread_cpu_time.h"

namespace kvsim {
namespace {

// The 32K-token sample with `decode_steps` decode steps (64 or 512), generated once per value.
const SyntheticTrace& Trace(int64_t decode_steps = 64) {
  static std::map<int64_t, std::unique_ptr<SyntheticTrace>>* traces =
      new std::map<int64_t, std::unique_ptr<SyntheticTrace>>();
  std::unique_ptr<SyntheticTrace>& trace = (*traces)[decode_steps];
  if (trace == nullptr) {
    SyntheticTraceOptions o;
    o.num_layers = 1;
    o.num_kv_heads = 2;
    o.group_size = 4;
    o.head_dim = 128;
    o.prompt_len = 32768;
    o.decode_steps = decode_steps;
    o.query_window = 64;
    o.head_types = {SyntheticHeadType::kMixed};
    trace = std::make_unique<SyntheticTrace>(GenerateSyntheticTrace(o));
  }
  return *trace;
}

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The attention logits of every decode query, one matrix-vector product per query: K[0..p] q. Returns
// the dot products computed.
int64_t EigenMatVecPass(const SyntheticTrace& t, Eigen::VectorXf* logits) {
  const AttentionSample& s = t.samples[0];
  const int d = t.header.head_dim, g = t.header.group_size();
  logits->resize(s.seq_len());
  int64_t dots = 0;
  for (const HeadTensors& head : s.heads) {
    Eigen::Map<const RowMatrixXf> keys(head.keys.data(), s.seq_len(), d);
    for (int j = 0; j < g; ++j) {
      for (int64_t p = s.prompt_len; p < s.seq_len(); ++p) {
        Eigen::Map<const Eigen::VectorXf> q(&head.queries[(j * s.num_queries() + (p - s.query_start)) * d], d);
        logits->head(p + 1).noalias() = keys.topRows(p + 1) * q;
        dots += p + 1;
      }
    }
    benchmark::DoNotOptimize(logits->data());
  }
  return dots;
}

// The same logits with an AVX2+FMA matrix-vector kernel (util/avx2_gemm.h), the SIMD width of the
// evaluator's kernels. REQUIRES: CpuHasAvx2Fma().
int64_t Avx2MatVecPass(const SyntheticTrace& t, std::vector<float>* logits) {
  const AttentionSample& s = t.samples[0];
  const int d = t.header.head_dim, g = t.header.group_size();
  logits->resize(s.seq_len());
  int64_t dots = 0;
  for (const HeadTensors& head : s.heads) {
    for (int j = 0; j < g; ++j) {
      for (int64_t p = s.prompt_len; p < s.seq_len(); ++p) {
        const float* q = &head.queries[(j * s.num_queries() + (p - s.query_start)) * d];
        Avx2MatVec(head.keys.data(), d, q, p + 1, d, logits->data());
        dots += p + 1;
      }
    }
    benchmark::DoNotOptimize(logits->data());
  }
  return dots;
}

void BM_EigenMatVecBaseline(benchmark::State& state) {
  const SyntheticTrace& t = Trace(state.range(0));
  Eigen::VectorXf logits;
  EigenMatVecPass(t, &logits);  // the untimed warm-up pass
  int64_t dots = 0;
  for (auto _ : state) dots += EigenMatVecPass(t, &logits);
  state.SetItemsProcessed(dots);
}
BENCHMARK(BM_EigenMatVecBaseline)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

void BM_Avx2MatVecBaseline(benchmark::State& state) {
  if (!CpuHasAvx2Fma()) {
    state.SkipWithError("CPU lacks AVX2/FMA");
    return;
  }
  const SyntheticTrace& t = Trace(state.range(0));
  std::vector<float> logits;
  Avx2MatVecPass(t, &logits);  // the untimed warm-up pass
  int64_t dots = 0;
  for (auto _ : state) dots += Avx2MatVecPass(t, &logits);
  state.SetItemsProcessed(dots);
}
BENCHMARK(BM_Avx2MatVecBaseline)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// Every registered policy at a 1024-token budget (KIVI at 4 bits alone), as BM_EvaluatorAllPolicies runs.
std::vector<std::string> AllPolicies() {
  std::vector<std::string> policies;
  for (const std::string& name : TokenPolicyNames()) {
    if (name == "kivi2" || name == "kivi8") continue;  // one quantiser stands for the three
    if (name == "adakv") {                             // a wrapper: around SnapKV
      policies.push_back("adakv+snapkv");
      continue;
    }
    policies.push_back(name);
  }
  return policies;
}

// The process's minor page faults so far (getrusage).
int64_t MinorPageFaults() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// An evaluator of `policies` at a 1024-token budget for the sample's model, on `threads` threads.
absl::StatusOr<std::unique_ptr<QualityEvaluator>> CreateEvaluator(const SyntheticTrace& t,
                                                                  const std::vector<std::string>& policies,
                                                                  int threads = 1) {
  QualityOptions options;
  options.policies = policies;
  options.budget_tokens = {1024};
  options.num_threads = threads;
  return QualityEvaluator::Create(t.header, options);
}

void RunEvaluator(benchmark::State& state, const std::vector<std::string>& policies, int64_t steps = 64,
                  int threads = 1) {
  const SyntheticTrace& t = Trace(steps);  // generated outside the timing
  // One evaluator for the run, as for a trace of many samples: buffers are reused from sample to sample.
  auto evaluator = CreateEvaluator(t, policies, threads);
  if (!evaluator.ok()) {
    state.SkipWithError("bad options");
    return;
  }
  // The untimed warm-up pass: the evaluator's buffers (and the policies') are allocated and touched.
  if (!(*evaluator)->AddSample(t.samples[0]).ok()) {
    state.SkipWithError("evaluation failed");
    return;
  }
  const int64_t warm_up_dots = (*evaluator)->Finish().num_dot_products;
  const int64_t faults_before = MinorPageFaults();
  for (auto _ : state) {
    if (!(*evaluator)->AddSample(t.samples[0]).ok()) {
      state.SkipWithError("evaluation failed");
      return;
    }
  }
  state.counters["page_faults_per_sample"] =
      static_cast<double>(MinorPageFaults() - faults_before) / static_cast<double>(state.iterations());
  state.SetItemsProcessed((*evaluator)->Finish().num_dot_products - warm_up_dots);
}

// The evaluator with only the selection oracle (always evaluated).
void BM_EvaluatorOracleOnly(benchmark::State& state) { RunEvaluator(state, {"oracle_select"}); }
BENCHMARK(BM_EvaluatorOracleOnly)->Unit(benchmark::kMillisecond);

// Every registered policy at a 1024-token budget (KIVI at 4 bits alone), all in one pass, on one thread.
void BM_EvaluatorAllPolicies(benchmark::State& state) { RunEvaluator(state, AllPolicies(), state.range(0)); }
// Arg: decode steps. Per-layer work (prefill scoring of SnapKV, Expected Attention, KIVI's quantisation...)
// is amortised over more steps at 512.
BENCHMARK(BM_EvaluatorAllPolicies)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// The same on every core (QualityOptions::num_threads = 0), in wall-clock time (items_per_second is then
// dot products per wall-clock second).
void BM_EvaluatorAllPoliciesAllCores(benchmark::State& state) {
  RunEvaluator(state, AllPolicies(), state.range(0), /*threads=*/0);
}
BENCHMARK(BM_EvaluatorAllPoliciesAllCores)->Arg(64)->Arg(512)->UseRealTime()->Unit(benchmark::kMillisecond);

// One policy at a time (index into TokenPolicyNames(); the label names it), plus the oracle.
void BM_EvaluatorOnePolicy(benchmark::State& state) {
  std::string name = TokenPolicyNames()[state.range(0)];
  if (name == "adakv") name = "adakv+snapkv";
  state.SetLabel(name);
  RunEvaluator(state, {name});
}
BENCHMARK(BM_EvaluatorOnePolicy)->DenseRange(0, 17)->Unit(benchmark::kMillisecond);

// The ratios the speed target is about, robust to the machine's load: the evaluator with every policy
// and the baselines, each warmed up once, then timed in three interleaved repetitions (evaluator,
// Eigen, AVX2, evaluator, ...), the fastest of each kept. Separate benchmark runs see the machine in
// different minutes; the memory-bound baselines swing most with its load. Args: decode steps, evaluator
// threads. On one thread every run is timed in thread CPU time; on every core (threads 0) in wall-clock
// time, the baselines still on one thread (a machine's throughput against one core's matrix-vector rate).
void BM_Ratios(benchmark::State& state) {
  const SyntheticTrace& t = Trace(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  auto evaluator = CreateEvaluator(t, AllPolicies(), threads);
  if (!evaluator.ok()) {
    state.SkipWithError("bad options");
    return;
  }
  const bool avx2 = CpuHasAvx2Fma();
  Eigen::VectorXf eigen_logits;
  std::vector<float> avx2_logits;
  bool ok = (*evaluator)->AddSample(t.samples[0]).ok();  // the warm-up passes
  const int64_t dots = EigenMatVecPass(t, &eigen_logits);
  if (avx2) Avx2MatVecPass(t, &avx2_logits);
  auto seconds_of = [&](const auto& fn) { return threads == 1 ? CpuSecondsOf(fn) : WallSecondsOf(fn); };
  double evaluator_s = 1e300, eigen_s = 1e300, avx2_s = 1e300;
  for (auto _ : state) {
    for (int rep = 0; rep < 3; ++rep) {
      evaluator_s = std::min(evaluator_s, seconds_of([&] { ok &= (*evaluator)->AddSample(t.samples[0]).ok(); }));
      eigen_s = std::min(eigen_s, seconds_of([&] { EigenMatVecPass(t, &eigen_logits); }));
      if (avx2) avx2_s = std::min(avx2_s, seconds_of([&] { Avx2MatVecPass(t, &avx2_logits); }));
    }
  }
  if (!ok) {
    state.SkipWithError("evaluation failed");
    return;
  }
  const double n = static_cast<double>(dots);
  state.counters["threads"] = ResolveThreadCount(threads);
  state.counters["evaluator_dots_per_s"] = n / evaluator_s;
  state.counters["eigen_dots_per_s"] = n / eigen_s;
  state.counters["vs_eigen"] = eigen_s / evaluator_s;  // target >= 0.5
  if (avx2) {
    state.counters["avx2_dots_per_s"] = n / avx2_s;
    state.counters["vs_avx2"] = avx2_s / evaluator_s;
  }
}
BENCHMARK(BM_Ratios)->Args({64, 1})->Args({512, 1})->Args({64, 0})->Args({512, 0})->Iterations(1)->Unit(
    benchmark::kMillisecond);

// The console reporter, also remembering BM_Ratios' counters for the ratio lines printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_None) {}  // plain "name=value" counter columns
  void ReportRuns(const std::vector<Run>& reports) override {
    for (const Run& run : reports) {
      if (run.error_occurred || run.benchmark_name().rfind("BM_Ratios/", 0) != 0) continue;
      ratios_.push_back({run.benchmark_name(), {}});  // BM_Ratios/STEPS/THREADS...
      for (const auto& [name, counter] : run.counters) ratios_.back().second[name] = counter.value;
    }
    ConsoleReporter::ReportRuns(reports);
  }
  // "ratio steps=N threads=T: ..." (vs the Eigen baseline) and "ratio-avx2 ..." per BM_Ratios run.
  void PrintRatios() const {
    for (const char* baseline : {"eigen", "avx2"}) {
      const bool avx2 = baseline[0] == 'a';
      for (const auto& [name, counters] : ratios_) {
        auto rate = counters.find(std::string(baseline) + "_dots_per_s");
        if (rate == counters.end()) continue;
        const long long steps = std::stoll(name.substr(10));
        const int threads = static_cast<int>(counters.at("threads"));
        const double evaluator = counters.at("evaluator_dots_per_s");
        std::printf(
            "ratio%s steps=%lld threads=%d: evaluator (%s path) %.2fM dots/s / %s baseline %.2fM dots/s "
            "= %.1f%%\n",
            avx2 ? "-avx2" : "", steps, threads,
            UseAvx512()    ? "AVX-512"
            : UseAvx2Fma() ? "AVX2"
                           : "portable",
            evaluator / 1e6, avx2 ? "AVX2 matvec" : "Eigen matvec", rate->second / 1e6, 100 * evaluator / rate->second);
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::map<std::string, double>>> ratios_;  // by run, in run order
};

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  kvsim::TuneHeapForBatchRun();  // as `kvsim quality` does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kvsim::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
