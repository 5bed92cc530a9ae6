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
// intends; the timed iterations are unchanged. items_per_second is dot products per CPU-second in every
// benchmark. After the runs, one line per decode-step count and baseline compares BM_EvaluatorAllPolicies
// with the baseline of the same run (same sample, same dot-product count). main() tunes the heap as
// `kvsim` does (util/heap_tuning.h): no page faults in the timed iterations. Measured on a shared 2-core x86-64 VM (AMD EPYC, AVX2 path), three runs in a row:
//   ratio steps=64: evaluator (AVX2 path) 19.00M dots/s / Eigen matvec baseline 76.90M dots/s = 24.7%
//   ratio steps=512: evaluator (AVX2 path) 29.40M dots/s / Eigen matvec baseline 62.81M dots/s = 46.8%
//   ratio steps=512: evaluator (AVX2 path) 28.75M dots/s / Eigen matvec baseline 65.23M dots/s = 44.1%
//   ratio steps=512: evaluator (AVX2 path) 28.18M dots/s / Eigen matvec baseline 79.06M dots/s = 35.6%
//   ratio-avx2 steps=512: evaluator (AVX2 path) 28.18M dots/s / AVX2 matvec baseline 77.52M dots/s = 36.3%
// The evaluator (compute-bound) moves little from run to run; the baselines stream the keys from the
// last-level cache or memory and read anywhere from ~43M to ~112M dots/s with the host's load.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "policies/token/token_policy.h"
#include "sim/quality_evaluator.h"
#include "traces/attention/synthetic_trace.h"
#include "util/avx2_gemm.h"
#include "util/cpu_features.h"
#include "util/heap_tuning.h"

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

// The attention logits of every decode query, one matrix-vector product per query: K[0..p] q.
void BM_EigenMatVecBaseline(benchmark::State& state) {
  const SyntheticTrace& t = Trace(state.range(0));
  const AttentionSample& s = t.samples[0];
  const int d = t.header.head_dim, g = t.header.group_size();
  Eigen::VectorXf logits(s.seq_len());
  int64_t dots = 0;
  auto pass = [&] {
    for (const HeadTensors& head : s.heads) {
      Eigen::Map<const RowMatrixXf> keys(head.keys.data(), s.seq_len(), d);
      for (int j = 0; j < g; ++j) {
        for (int64_t p = s.prompt_len; p < s.seq_len(); ++p) {
          Eigen::Map<const Eigen::VectorXf> q(&head.queries[(j * s.num_queries() + (p - s.query_start)) * d], d);
          logits.head(p + 1).noalias() = keys.topRows(p + 1) * q;
          dots += p + 1;
        }
      }
      benchmark::DoNotOptimize(logits.data());
    }
  };
  pass();  // the untimed warm-up pass
  dots = 0;
  for (auto _ : state) pass();
  state.SetItemsProcessed(dots);
}
BENCHMARK(BM_EigenMatVecBaseline)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// The same logits with an AVX2+FMA matrix-vector kernel (util/avx2_gemm.h), the SIMD width of the
// evaluator's kernels: the baseline to compare with when the evaluator runs its AVX2 path.
void BM_Avx2MatVecBaseline(benchmark::State& state) {
  if (!CpuHasAvx2Fma()) {
    state.SkipWithError("CPU lacks AVX2/FMA");
    return;
  }
  const SyntheticTrace& t = Trace(state.range(0));
  const AttentionSample& s = t.samples[0];
  const int d = t.header.head_dim, g = t.header.group_size();
  std::vector<float> logits(s.seq_len());
  int64_t dots = 0;
  auto pass = [&] {
    for (const HeadTensors& head : s.heads) {
      for (int j = 0; j < g; ++j) {
        for (int64_t p = s.prompt_len; p < s.seq_len(); ++p) {
          const float* q = &head.queries[(j * s.num_queries() + (p - s.query_start)) * d];
          Avx2MatVec(head.keys.data(), d, q, p + 1, d, logits.data());
          dots += p + 1;
        }
      }
      benchmark::DoNotOptimize(logits.data());
    }
  };
  pass();  // the untimed warm-up pass
  dots = 0;
  for (auto _ : state) pass();
  state.SetItemsProcessed(dots);
}
BENCHMARK(BM_Avx2MatVecBaseline)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

void RunEvaluator(benchmark::State& state, const std::vector<std::string>& policies, int64_t steps = 64) {
  const SyntheticTrace& t = Trace(steps);  // generated outside the timing
  QualityOptions options;
  options.policies = policies;
  options.budget_tokens = {1024};
  // One evaluator for the run, as for a trace of many samples: buffers are reused from sample to sample.
  auto evaluator = QualityEvaluator::Create(t.header, options);
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
  for (auto _ : state) {
    if (!(*evaluator)->AddSample(t.samples[0]).ok()) {
      state.SkipWithError("evaluation failed");
      return;
    }
  }
  state.SetItemsProcessed((*evaluator)->Finish().num_dot_products - warm_up_dots);
}

// The evaluator with only the selection oracle (always evaluated).
void BM_EvaluatorOracleOnly(benchmark::State& state) { RunEvaluator(state, {"oracle_select"}); }
BENCHMARK(BM_EvaluatorOracleOnly)->Unit(benchmark::kMillisecond);

// Every registered policy at a 1024-token budget (KIVI at 4 bits alone), all in one pass.
void BM_EvaluatorAllPolicies(benchmark::State& state) {
  std::vector<std::string> policies;
  for (const std::string& name : TokenPolicyNames()) {
    if (name == "kivi2" || name == "kivi8") continue;  // one quantiser stands for the three
    if (name == "adakv") {                              // a wrapper: around SnapKV
      policies.push_back("adakv+snapkv");
      continue;
    }
    policies.push_back(name);
  }
  RunEvaluator(state, policies, state.range(0));
}
// Arg: decode steps. Per-layer work (prefill scoring of SnapKV, Expected Attention, KIVI's quantisation...)
// is amortised over more steps at 512.
BENCHMARK(BM_EvaluatorAllPolicies)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// One policy at a time (index into TokenPolicyNames(); the label names it), plus the oracle.
void BM_EvaluatorOnePolicy(benchmark::State& state) {
  std::string name = TokenPolicyNames()[state.range(0)];
  if (name == "adakv") name = "adakv+snapkv";
  state.SetLabel(name);
  RunEvaluator(state, {name});
}
BENCHMARK(BM_EvaluatorOnePolicy)->DenseRange(0, 17)->Unit(benchmark::kMillisecond);

// The console reporter, also remembering each run's items_per_second (by run name) for the ratio lines.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_None) {}  // plain "items_per_second=..." columns
  void ReportRuns(const std::vector<Run>& reports) override {
    for (const Run& run : reports) {
      auto it = run.counters.find("items_per_second");
      if (!run.error_occurred && it != run.counters.end()) rates_[run.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(reports);
  }
  // "ratio steps=N: ..." for each N with both the evaluator and the Eigen baseline measured, then
  // "ratio-avx2 steps=N: ..." against the AVX2 baseline where it ran.
  void PrintRatios() const {
    for (const char* baseline_name : {"BM_EigenMatVecBaseline/", "BM_Avx2MatVecBaseline/"}) {
      const bool avx2 = baseline_name[3] == 'A';
      for (const char* steps : {"64", "512"}) {
        auto evaluator = rates_.find(std::string("BM_EvaluatorAllPolicies/") + steps);
        auto baseline = rates_.find(std::string(baseline_name) + steps);
        if (evaluator == rates_.end() || baseline == rates_.end() || baseline->second <= 0) continue;
        std::printf("ratio%s steps=%s: evaluator (%s path) %.2fM dots/s / %s baseline %.2fM dots/s = %.1f%%\n",
                    avx2 ? "-avx2" : "", steps, UseAvx2Fma() ? "AVX2" : "portable", evaluator->second / 1e6,
                    avx2 ? "AVX2 matvec" : "Eigen matvec", baseline->second / 1e6,
                    100 * evaluator->second / baseline->second);
      }
    }
  }

 private:
  std::map<std::string, double> rates_;
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
