#include "sim/train/kvp_trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "sim/train/kvp_objective.h"
#include "traces/attention/synthetic_trace.h"

namespace kvsim {
namespace {

constexpr int kDim = 16;
constexpr int64_t kPrompt = 128, kSteps = 8;

// A trace whose future importance is a monotone function of one key direction u: every decode query is
// alpha sqrt(d) u, so its logits are alpha (k_i . u), and I_i = sum_j exp(alpha k_i . u) / Z_j.
struct Planted {
  AttentionTraceHeader header;
  std::vector<AttentionSample> samples;
  std::vector<float> u;
};

Planted MakePlanted(int num_samples, uint64_t seed) {
  Planted p;
  p.header.model = "planted";
  p.header.num_layers = 1;
  p.header.num_query_heads = 1;
  p.header.num_kv_heads = 1;
  p.header.head_dim = kDim;
  p.header.dtype = AttentionDType::kFloat32;
  p.header.kept_layers = {0};
  p.header.kept_kv_heads = {0};
  p.header.synthetic = true;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  p.u.resize(kDim);
  double norm = 0;
  for (float& x : p.u) {
    x = normal(rng);
    norm += x * x;
  }
  for (float& x : p.u) x /= std::sqrt(norm);
  std::mt19937_64 data_rng(seed + 1);
  for (int s = 0; s < num_samples; ++s) {
    AttentionSample sample;
    sample.prompt_len = kPrompt;
    sample.num_decode_steps = kSteps;
    sample.query_start = kPrompt;
    HeadTensors head;
    head.keys.resize((kPrompt + kSteps) * kDim);
    head.values.resize((kPrompt + kSteps) * kDim);
    for (float& x : head.keys) x = normal(data_rng);
    for (float& x : head.values) x = normal(data_rng);
    head.queries.resize(kSteps * kDim);
    for (int64_t j = 0; j < kSteps; ++j) {
      for (int c = 0; c < kDim; ++c) head.queries[j * kDim + c] = 1.5f * std::sqrt(float{kDim}) * p.u[c];
    }
    sample.heads.push_back(std::move(head));
    p.samples.push_back(std::move(sample));
  }
  return p;
}

KvpTrainOptions PlantedOptions() {
  KvpTrainOptions o = KvpSmallModelOptions();
  o.hidden_units = 16;
  o.steps = 1000;
  o.adam.learning_rate = 1e-2;
  o.future_queries = kSteps;
  o.holdout_fraction = 0.25;
  o.seed = 5;
  return o;
}

// Mean over examples of (importance kept by the top-b of `ranking`) / (kept by the oracle's top-b).
double RecallVsOracle(const std::vector<KvpExample>& examples, int64_t b,
                      const std::function<std::vector<int32_t>(const KvpExample&)>& rank) {
  double sum = 0;
  for (const KvpExample& e : examples) {
    const std::vector<int32_t> ranking = rank(e), oracle = OracleRanking(e.importance);
    double kept = 0, best = 0;
    for (int64_t r = 0; r < b; ++r) {
      kept += e.importance[ranking[r]];
      best += e.importance[oracle[r]];
    }
    sum += kept / best;
  }
  return sum / examples.size();
}

TEST(KvpTrainerTest, RecoversAPlantedKeyDirection) {
  const Planted planted = MakePlanted(24, 3);
  const KvpTrainOptions options = PlantedOptions();
  auto data = BuildKvpTrainData(planted.header, planted.samples, "planted", options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train_samples, 18);
  EXPECT_EQ(data->heldout_samples, 6);
  auto model = TrainKvp(*data, options);
  ASSERT_TRUE(model.ok()) << model.status();
  auto agent = KvpMlpFromProto(model->agents(0), kDim, options.hidden_units);
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto by_model = [&](const KvpExample& e) {
    KvpMatrix x;
    KvpFeatures(e.keys.data(), e.values.data(), e.n, kDim, &x);
    Eigen::VectorXf scores;
    agent->Forward(x, &scores);
    return RankByScores(scores.data(), e.n);
  };
  std::mt19937_64 rng(1);
  auto at_random = [&](const KvpExample& e) {
    std::vector<float> noise(e.n);
    for (float& x : noise) x = static_cast<float>(UniformOpen(rng));
    return RankByScores(noise.data(), e.n);
  };
  const std::vector<KvpExample>& heldout = data->heldout[0];
  for (int64_t b : {8, 16, 32, 64}) {
    const double recall = RecallVsOracle(heldout, b, by_model);
    EXPECT_GE(recall, 0.98) << "budget " << b;
    // The bar means something: a random ranking is far below it.
    EXPECT_LT(RecallVsOracle(heldout, b, at_random), 0.9) << "budget " << b;
  }
  // The held-out reward in the file is the agent's, and close to the oracle's 1.
  EXPECT_NEAR(model->agents(0).heldout_reward(), KvpMeanReward(*agent, kDim, heldout), 1e-12);
  EXPECT_GT(model->agents(0).heldout_reward(), 0.98);
  // The training curve rises from the untrained agent's level.
  const auto& curve = model->agents(0).curve();
  ASSERT_GE(curve.size(), 2);
  EXPECT_GT(curve[curve.size() - 1].train_reward(), curve[0].train_reward());
  EXPECT_EQ(curve[curve.size() - 1].step(), options.steps);
}

TEST(KvpTrainerTest, ByteIdenticalModelForASeedWhateverTheThreadCount) {
  SyntheticTraceOptions so;
  so.num_samples = 3;
  so.num_layers = 1;
  so.num_kv_heads = 3;
  so.head_dim = 40;
  so.prompt_len = 96;
  so.decode_steps = 4;
  so.query_window = 4;
  const SyntheticTrace trace = GenerateSyntheticTrace(so);
  KvpTrainOptions o = KvpSmallModelOptions();
  o.hidden_units = 8;
  o.steps = 20;
  o.max_tokens_per_step = 64;  // the seeded token subsets too
  o.holdout_fraction = 0.34;
  auto data = BuildKvpTrainData(trace.header, trace.samples, "synthetic", o);
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<std::string> bytes;
  for (int threads : {1, 3, 2}) {
    o.num_threads = threads;
    auto model = TrainKvp(*data, o);
    ASSERT_TRUE(model.ok()) << model.status();
    bytes.push_back(SerializeKvpModel(*model));
  }
  EXPECT_EQ(bytes[0], bytes[1]);
  EXPECT_EQ(bytes[0], bytes[2]);
  o.seed = 2;
  auto other = TrainKvp(*data, o);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(SerializeKvpModel(*other), bytes[0]);
  // The file records the layout and the settings it was trained with.
  auto parsed = ParseKvpModel(bytes[0], "m");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->meta.kv_heads_size(), 3);
  EXPECT_EQ(parsed->meta.hyperparameters().steps(), 20);
  EXPECT_EQ(parsed->meta.train_samples(), 2);
  EXPECT_EQ(parsed->meta.heldout_samples(), 1);
  EXPECT_TRUE(parsed->meta.synthetic());
}

TEST(KvpTrainerTest, RefusesBadOptionsAndSamplesWithoutFutureQueries) {
  const Planted planted = MakePlanted(2, 1);
  KvpTrainOptions o = PlantedOptions();
  o.samples_per_step = 1;
  EXPECT_FALSE(BuildKvpTrainData(planted.header, planted.samples, "p", o).ok());
  o = PlantedOptions();
  o.holdout_fraction = 1.0;
  EXPECT_FALSE(BuildKvpTrainData(planted.header, planted.samples, "p", o).ok());
  std::vector<AttentionSample> samples = planted.samples;
  samples[1].num_decode_steps = 0;
  samples[1].heads[0].keys.resize(kPrompt * kDim);
  samples[1].heads[0].values.resize(kPrompt * kDim);
  samples[1].heads[0].queries.clear();
  auto status = BuildKvpTrainData(planted.header, samples, "p.kvat", PlantedOptions()).status();
  EXPECT_NE(status.message().find("p.kvat: sample 1 has no decode steps"), std::string::npos) << status;
}

}  // namespace
}  // namespace kvsim
