#include "sim/select/synthetic_outcomes.h"

#include <cmath>

#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "sim/select/candidate_cost.h"
#include "sim/select/candidates.h"
#include "sim/select/select_test_util.h"

namespace kvsim {
namespace {

double Sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

proto::SelectCandidate Named(const proto::SelectCandidateSet& set, const std::string& name) {
  return set.candidate(CandidateIndex(set, name));
}

TEST(SyntheticOutcomesTest, PlantedProbabilitiesByHand) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  // fp16: no damage.
  EXPECT_DOUBLE_EQ(PlantedCorrectProbability(Named(set, "fp16"), 1000, 0, 0.5, 0.2), Sigmoid(2.5 - 0.6));
  // KVQuant 4-bit on maths: 2 x 0.15.
  EXPECT_DOUBLE_EQ(PlantedCorrectProbability(Named(set, "kvquant-4b"), 1000, 0, 0.5, 0.2), Sigmoid(1.9 - 0.3));
  // KVQuant 2-bit with outliers on commonsense: 1.8 x 0.6.
  EXPECT_NEAR(PlantedCorrectProbability(Named(set, "kvquant-2b-1%"), 1000, 2, 0.5, 0.2), Sigmoid(1.9 - 1.08), 1e-12);
  // H2O at 25% on reading comprehension, entropy 0.4: 1.5 x 5 x 0.4 x 0.75.
  EXPECT_NEAR(PlantedCorrectProbability(Named(set, "h2o-25%"), 1000, 3, 0.4, 0.2), Sigmoid(1.9 - 2.25), 1e-12);
  // RocketKV 512 on a 2048-token science prompt, entropy 1: 3 x 1 x (1 - 0.25); on a shorter prompt nothing.
  EXPECT_NEAR(PlantedCorrectProbability(Named(set, "rocketkv-512"), 2048, 1, 1, 0.2), Sigmoid(1.9 - 2.25), 1e-12);
  EXPECT_DOUBLE_EQ(PlantedCorrectProbability(Named(set, "rocketkv-512"), 400, 1, 1, 0.2), Sigmoid(1.9));
}

TEST(SyntheticOutcomesTest, TableIsCompleteSeededNestedAndCostedByTheModel) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  const proto::ExperimentConfig config = DefaultSelectConfig();
  absl::StatusOr<OutcomeTable> a = MakeSyntheticOutcomeTable(set, config, {.num_prompts = 20, .seed = 4});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->num_prompts(), 20);
  ASSERT_EQ(a->cells.size(), 20u * 11);
  absl::StatusOr<OutcomeTable> b = MakeSyntheticOutcomeTable(set, config, {.num_prompts = 20, .seed = 4});
  absl::StatusOr<OutcomeTable> other = MakeSyntheticOutcomeTable(set, config, {.num_prompts = 20, .seed = 5});
  bool differs = false;
  for (size_t i = 0; i < a->cells.size(); ++i) {
    EXPECT_EQ(a->cells[i].correct, b->cells[i].correct);
    EXPECT_EQ(a->cells[i].features, b->cells[i].features);
    differs = differs || a->cells[i].features != other->cells[i].features;
  }
  EXPECT_TRUE(differs);
  auto fp16 = *CandidateCostModel::Create(config, Named(set, "fp16"));
  for (int p = 0; p < a->num_prompts(); ++p) {
    const Outcome& o = a->at(p, 0);
    EXPECT_GE(o.features[0], 256);
    EXPECT_LE(o.features[0], 32768);
    EXPECT_GE(o.features[1], 16);
    EXPECT_LE(o.features[1], 1024);
    const CandidateCost cost = *fp16->Cost(o.features[0], o.features[1]);
    EXPECT_EQ(o.latency_ms, cost.latency_ms);
    EXPECT_EQ(o.peak_memory_mb, cost.peak_memory_mb);
    // One draw per prompt: wrong under fp16 (the least damaged) means wrong under every configuration.
    if (!o.correct) {
      for (int c = 1; c < 11; ++c) EXPECT_FALSE(a->at(p, c).correct) << p << " " << c;
    }
  }
  EXPECT_FALSE(MakeSyntheticOutcomeTable(set, config, {.num_prompts = 0}).ok());
}

}  // namespace
}  // namespace kvsim
