#include "sim/select/selector.h"

#include <algorithm>
#include <random>
#include <string>

#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "sim/select/candidates.h"
#include "sim/select/synthetic_outcomes.h"

namespace kvsim {
namespace {

// 4 prompts x 3 candidates, written out so that CSR can be counted by hand.
//            c0 (big, slow, accurate)   c1 (medium)            c2 (small, fast, lossy)
//   p0       correct, 100 ms, 50 MB      correct, 60, 30        wrong,   20, 10
//   p1       correct, 100, 50            wrong,   60, 30        wrong,   20, 10
//   p2       correct, 100, 50            correct, 60, 30        correct, 20, 10
//   p3       wrong,   100, 50            wrong,   60, 30        wrong,   20, 10
OutcomeTable HandTable() {
  OutcomeTable t;
  t.candidates = {"c0", "c1", "c2"};
  t.feature_names = {"input_tokens", "output_tokens"};
  const bool correct[4][3] = {{true, true, false}, {true, false, false}, {true, true, true}, {false, false, false}};
  const double lat[3] = {100, 60, 20}, mem[3] = {50, 30, 10};
  for (int p = 0; p < 4; ++p) {
    t.prompt_ids.push_back("p" + std::to_string(p));
    for (int c = 0; c < 3; ++c) t.cells.push_back({correct[p][c], lat[c], mem[c], {1, 1}});
  }
  return t;
}

TEST(SelectorTest, CsrEqualsAHandCount) {
  const OutcomeTable t = HandTable();
  // Everything fits: c0 succeeds on p0, p1, p2 -> 3/4.
  EXPECT_DOUBLE_EQ(Csr(t, {0, 0, 0, 0}, {1000, 1000}), 0.75);
  // L = 70: c0 never fits; c1 succeeds on p0, p2 -> 2/4; mixed choice {c1, c0, c2, c2}: p0 yes, p1 no (too slow),
  // p2 yes -> 2/4.
  EXPECT_DOUBLE_EQ(Csr(t, {1, 1, 1, 1}, {70, 1000}), 0.5);
  EXPECT_DOUBLE_EQ(Csr(t, {1, 0, 2, 2}, {70, 1000}), 0.5);
  // M = 10: only c2 fits, correct on p2 alone.
  EXPECT_EQ(StaticCsr(t, {1000, 10}), (std::vector<double>{0, 0, 0.25}));
  EXPECT_DOUBLE_EQ(OracleCsr(t, {1000, 1000}), 0.75);
  EXPECT_DOUBLE_EQ(OracleCsr(t, {70, 1000}), 0.5);
  // Budgets on the boundary are met (<=).
  EXPECT_DOUBLE_EQ(Csr(t, {0, 0, 0, 0}, {100, 50}), 0.75);
}

TEST(SelectorTest, PicksTheMostLikelyCorrectAmongThosePredictedToFitAndFallsBackToTheClosest) {
  const OutcomeTable t = HandTable();
  std::vector<Prediction> pred(12);
  for (int p = 0; p < 4; ++p) {
    pred[p * 3 + 0] = {0.9, 100, 50};
    pred[p * 3 + 1] = {0.6, 60, 30};
    pred[p * 3 + 2] = {0.3, 20, 10};
  }
  pred[2 * 3 + 2].p_correct = 0.95;  // p2 prefers c2 even when c0 fits
  Selection s = SelectPerPrompt(t, pred, {1000, 1000});
  EXPECT_EQ(s.choice, (std::vector<int>{0, 0, 2, 0}));
  s = SelectPerPrompt(t, pred, {70, 1000});
  EXPECT_EQ(s.choice, (std::vector<int>{1, 1, 2, 1}));
  // Nothing is predicted to fit L = 10: overshoots are 10, 6 and 2: c2 is the closest.
  s = SelectPerPrompt(t, pred, {10, 1000});
  EXPECT_EQ(s.choice, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(s.fallback, (std::vector<bool>{true, true, true, true}));
  // Equal P(correct): the lower predicted latency wins.
  pred[0 * 3 + 1].p_correct = 0.9;
  EXPECT_EQ(SelectPerPrompt(t, pred, {1000, 1000}).choice[0], 1);
}

TEST(SelectorTest, InfeasibleBudgetsAreReportedAsSuch) {
  const OutcomeTable t = HandTable();
  const CsrPoint none = EvaluateBudget(t, PerfectPredictions(t), {5, 1000});
  EXPECT_FALSE(none.feasible);
  EXPECT_EQ(none.infeasible_prompts, 4);
  const CsrSurface s = EvaluateGrid(t, PerfectPredictions(t), {5, 70, 1000}, {1000});
  EXPECT_EQ(s.feasible_points, 2);
  EXPECT_FALSE(s.points[0].feasible);
  EXPECT_TRUE(s.points[1].feasible);
  // Perfect predictions at L = 70: p0 -> c1 (success), p1 none, p2 -> some success, p3 none: 0.5 = oracle;
  // the best static (c1) also gets 0.5: no gain. At L = 1000 the same: mean and max gain 0.
  EXPECT_DOUBLE_EQ(s.points[1].selector, 0.5);
  EXPECT_DOUBLE_EQ(s.mean_gain, 0);
}

TEST(SelectorTest, QuantileGridByHand) {
  EXPECT_EQ(QuantileGrid({5, 1, 4, 2, 3}, 5), (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(QuantileGrid({5, 1, 4, 2, 3}, 2), (std::vector<double>{3, 5}));
  EXPECT_EQ(QuantileGrid({7, 7, 7}, 4), (std::vector<double>{7}));
  EXPECT_TRUE(QuantileGrid({}, 4).empty());
}

class SyntheticSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("", proto::COST_MODEL_KIND_ROOFLINE);
    ASSERT_TRUE(config.ok());
    absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates("");
    ASSERT_TRUE(set.ok());
    absl::StatusOr<OutcomeTable> table = MakeSyntheticOutcomeTable(*set, *config, {.num_prompts = 60, .seed = 3});
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
    std::vector<double> lat, mem;
    for (const Outcome& o : table_.cells) {
      lat.push_back(o.latency_ms);
      mem.push_back(o.peak_memory_mb);
    }
    lat_grid_ = QuantileGrid(lat, 7);
    mem_grid_ = QuantileGrid(mem, 7);
    lat_grid_.insert(lat_grid_.begin(), *std::min_element(lat.begin(), lat.end()) / 2);  // infeasible
  }
  OutcomeTable table_;
  std::vector<double> lat_grid_, mem_grid_;
};

TEST_F(SyntheticSelectorTest, OracleBoundsEverySelectorAtEveryBudget) {
  std::mt19937_64 rng(5);
  std::vector<Prediction> random(table_.cells.size());
  for (Prediction& p : random) {
    p = {static_cast<double>(rng() % 1000) / 1000, static_cast<double>(rng() % 100000),
         static_cast<double>(rng() % 40000)};
  }
  absl::StatusOr<PredictorFactory> logistic = MakePredictorFactory(PredictorKind::kLogistic);
  absl::StatusOr<CrossValidation> cv = CrossValidate(table_, 3, 1, *logistic);
  ASSERT_TRUE(cv.ok());
  for (const std::vector<Prediction>* predictions : {&random, &cv->predictions}) {
    const CsrSurface s = EvaluateGrid(table_, *predictions, lat_grid_, mem_grid_);
    EXPECT_LT(s.feasible_points, static_cast<int>(s.points.size()));
    for (const CsrPoint& p : s.points) {
      EXPECT_GE(p.oracle, p.selector);
      EXPECT_GE(p.oracle, p.best_static);
      for (double c : StaticCsr(table_, p.budget)) EXPECT_LE(c, p.best_static);
    }
  }
}

TEST_F(SyntheticSelectorTest, WithPerfectPredictorsTheSelectorEqualsTheOracle) {
  const CsrSurface s = EvaluateGrid(table_, PerfectPredictions(table_), lat_grid_, mem_grid_);
  int gains = 0;
  for (const CsrPoint& p : s.points) {
    EXPECT_DOUBLE_EQ(p.selector, p.oracle) << p.budget.latency_ms << " " << p.budget.memory_mb;
    gains += p.oracle > p.best_static;
  }
  EXPECT_GT(gains, 0);  // the planted table has budgets where choosing per prompt beats any static choice
}

}  // namespace
}  // namespace kvsim
