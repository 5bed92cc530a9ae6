// KVP's speed, measured against baselines in the same run:
//   BM_TrainSteps/H/N   training steps (one sample of N tokens each) per second of one core, H hidden units
//                       (32: the small-model setting, 256: the paper's), 1 thread: samples/s per core.
//   BM_KvpScoring/H/D   scoring one head's 4,096-token prompt with an agent of H hidden units at head_dim D
//   BM_SnapKvScoring/D  (16: the committed small model's, 128: Llama's), and with SnapKV's rule on the same
//                       head (64-query window, GQA group of 4, pooling 5).
// The run ends with "ratio" lines: KVP's scoring time per token over SnapKV's at each head_dim, from
// interleaved repetitions of both on one thread (CPU time), so the ratio does not drift with the load.
//
//   bazel run -c opt //sim/train:kvp_benchmark
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "policies/token/kvp_policy.h"
#include "policies/token/snapkv_policy.h"
#include "policies/token/token_policy_util.h"
#include "sim/train/kvp_trainer.h"
#include "traces/attention/synthetic_trace.h"
#include "util/thread_cpu_time.h"

namespace kvsim {
namespace {

constexpr int64_t kScorePrompt = 4096;

constexpr int kHeadDims[] = {16, 128};

// One head of a 4,096-token prompt and one decode step, Gaussian keys, values and queries (the scoring
// cost does not depend on the values; the synthetic trace generator needs head_dim >= 40), with the last
// 64 prompt queries of a GQA group of 4 stored, as SnapKV reads them.
struct ScoringHead {
  static constexpr int kGroup = 4;
  static constexpr int64_t kWindow = 64;
  int head_dim = 0;
  std::vector<float> keys, values, queries;

  explicit ScoringHead(int d) : head_dim(d) {
    std::mt19937_64 rng(d);
    std::normal_distribution<float> normal;
    const int64_t seq_len = kScorePrompt + 1;
    auto fill = [&](std::vector<float>* v, int64_t n) {
      v->resize(n);
      for (float& x : *v) x = normal(rng);
    };
    fill(&keys, seq_len * d);
    fill(&values, seq_len * d);
    fill(&queries, kGroup * (seq_len - (kScorePrompt - kWindow)) * d);
  }

  HeadContext Context() const {
    HeadContext c;
    c.group_size = kGroup;
    c.head_dim = head_dim;
    c.prompt_len = kScorePrompt;
    c.seq_len = kScorePrompt + 1;
    c.query_start = kScorePrompt - kWindow;
    c.keys = keys.data();
    c.values = values.data();
    c.queries = queries.data();
    return c;
  }
};

// The scoring head at `head_dim` (one of kHeadDims), made once.
HeadContext ScoringContext(int head_dim) {
  static const auto* heads = [] {
    auto* made = new std::map<int, ScoringHead>;
    for (int d : kHeadDims) made->emplace(d, ScoringHead(d));
    return made;
  }();
  return heads->at(head_dim).Context();
}

KvpMlp RandomAgent(int head_dim, int hidden) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  const int dim = KvpInputDim(head_dim);
  KvpMlp mlp;
  mlp.input_mean = Eigen::RowVectorXf::Zero(dim);
  mlp.input_std = Eigen::RowVectorXf::Ones(dim);
  mlp.w1 = KvpMatrix::NullaryExpr(hidden, dim, [&] { return u(rng); });
  mlp.b1 = Eigen::RowVectorXf::Zero(hidden);
  mlp.w2 = KvpMatrix::NullaryExpr(hidden, hidden, [&] { return u(rng); });
  mlp.b2 = Eigen::RowVectorXf::Zero(hidden);
  mlp.w3 = Eigen::VectorXf::NullaryExpr(hidden, [&] { return u(rng); });
  return mlp;
}

double ScoreKvp(const KvpMlp& agent, const HeadContext& c, KvpMatrix* scratch) {
  return KvpScores(agent, c.keys, c.values, c.prompt_len, c.head_dim, scratch)[0];
}

double ScoreSnapKv(const HeadContext& c) { return SnapKvScores(c, SnapKvPolicy::kWindow, SnapKvPolicy::kKernel)[0]; }

void BM_KvpScoring(benchmark::State& state) {
  const HeadContext c = ScoringContext(static_cast<int>(state.range(1)));
  const KvpMlp agent = RandomAgent(c.head_dim, static_cast<int>(state.range(0)));
  KvpMatrix scratch;
  for (auto _ : state) benchmark::DoNotOptimize(ScoreKvp(agent, c, &scratch));
  state.SetItemsProcessed(state.iterations() * c.prompt_len);
}
BENCHMARK(BM_KvpScoring)->ArgsProduct({{32, 256}, {16, 128}})->Unit(benchmark::kMicrosecond);

void BM_SnapKvScoring(benchmark::State& state) {
  const HeadContext c = ScoringContext(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ScoreSnapKv(c));
  state.SetItemsProcessed(state.iterations() * c.prompt_len);
}
BENCHMARK(BM_SnapKvScoring)->Arg(16)->Arg(128)->Unit(benchmark::kMicrosecond);

void BM_TrainSteps(benchmark::State& state) {
  SyntheticTraceOptions o;
  o.num_layers = 1;
  o.num_kv_heads = 1;
  o.head_dim = 128;
  o.group_size = 4;
  o.prompt_len = state.range(1);
  o.decode_steps = 16;
  o.num_samples = 2;
  const SyntheticTrace trace = GenerateSyntheticTrace(o);
  KvpTrainOptions options;
  options.hidden_units = static_cast<int>(state.range(0));
  options.steps = 20;
  options.num_threads = 1;
  auto data = BuildKvpTrainData(trace.header, trace.samples, "bench", options);
  if (!data.ok()) {
    state.SkipWithError(std::string(data.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    auto model = TrainKvp(*data, options);
    benchmark::DoNotOptimize(model.ok());
  }
  state.SetItemsProcessed(state.iterations() * options.steps);  // samples (one per step)
}
BENCHMARK(BM_TrainSteps)->Args({32, 1024})->Args({256, 1024})->Args({256, 4096})->Unit(benchmark::kMillisecond);

// KVP's scoring over SnapKV's, per token, in interleaved repetitions (thread CPU time).
void PrintRatios(int head_dim) {
  const HeadContext c = ScoringContext(head_dim);
  for (int hidden : {32, 256}) {
    const KvpMlp agent = RandomAgent(c.head_dim, hidden);
    KvpMatrix scratch;
    double kvp_s = 0, snap_s = 0, sink = 0;
    for (int rep = 0; rep < 20; ++rep) {
      double t0 = ThreadCpuSeconds();
      sink += ScoreKvp(agent, c, &scratch);
      double t1 = ThreadCpuSeconds();
      sink += ScoreSnapKv(c);
      double t2 = ThreadCpuSeconds();
      if (rep > 0) {  // the first is a warm-up
        kvp_s += t1 - t0;
        snap_s += t2 - t1;
      }
    }
    std::printf(
        "ratio kvp(hidden=%d)/snapkv scoring per token (4096-token prompt, head_dim %d): %.2f "
        "(kvp %.1f ns/token, snapkv %.1f ns/token)%s\n",
        hidden, head_dim, kvp_s / snap_s, 1e9 * kvp_s / 19 / c.prompt_len, 1e9 * snap_s / 19 / c.prompt_len,
        sink == 12345.678 ? " " : "");
  }
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  for (int head_dim : kvsim::kHeadDims) kvsim::PrintRatios(head_dim);
  return 0;
}
