#include "sim/select/closed_loop_outcomes.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "sim/eval/closed_loop_eval.h"
#include "sim/select/candidate_cost.h"
#include "sim/select/candidates.h"
#include "sim/select/select_test_util.h"

namespace kvsim {
namespace {

constexpr char kModel[] = "sim/eval/models/kvsim-tiny";
constexpr char kTasks[] = "sim/eval/testdata/tasks_512.jsonl";
constexpr char kSmallSet[] = "sim/select/small_model_candidates.textproto";

// A candidate named `name`: "" plain, "kvquant3" KVQuant 3-bit, "kivi2+h2o" KIVI 2-bit under H2O at 64 tokens,
// else that token policy at a quarter of the prompt.
proto::SelectCandidate Candidate(const std::string& name, const std::string& text) {
  proto::SelectCandidate c;
  c.set_name(name);
  if (text == "kvquant3") {
    c.mutable_quant()->set_method(proto::KV_QUANT_METHOD_KVQUANT);
    c.mutable_quant()->set_bits(3);
    c.mutable_quant()->set_outlier_fraction(0.01);
  } else if (text == "kivi2+h2o") {
    c.mutable_quant()->set_method(proto::KV_QUANT_METHOD_KIVI);
    c.mutable_quant()->set_bits(2);
    c.mutable_token()->set_policy("h2o");
    c.mutable_token()->set_budget_tokens(64);
  } else if (!text.empty()) {
    c.mutable_token()->set_policy(text);
    c.mutable_token()->set_budget_ratio(0.25);
  }
  return c;
}

class ClosedLoopOutcomesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<LlamaModel>> model = LoadLlamaModel(kModel);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
    absl::StatusOr<std::vector<EvalTask>> all = ReadEvalTasks(kTasks);
    ASSERT_TRUE(all.ok()) << all.status();
    // Both needle families, two dialogue tasks and one perplexity task; prompts shortened by 0-3 tokens after
    // BOS so that the ratio budgets resolve differently per prompt (ceil: 509 x 0.25 -> 128, 510 -> 128).
    tasks_ = new std::vector<EvalTask>();
    std::map<std::string, int> taken;
    const std::map<std::string, int> wanted = {
        {"niah_single", 5}, {"niah_multikey", 5}, {"dialogue_recall", 2}, {"perplexity", 1}};
    for (EvalTask task : *all) {
      auto it = wanted.find(task.task);
      if (it == wanted.end() || taken[task.task]++ >= it->second) continue;
      const int cut = static_cast<int>(tasks_->size() % 4);
      task.prompt_ids.erase(task.prompt_ids.begin() + 1, task.prompt_ids.begin() + 1 + cut);
      tasks_->push_back(task);
    }
    ASSERT_EQ(tasks_->size(), 13u);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tasks_;
  }

  static LlamaModel* model_;
  static std::vector<EvalTask>* tasks_;
};

LlamaModel* ClosedLoopOutcomesTest::model_ = nullptr;
std::vector<EvalTask>* ClosedLoopOutcomesTest::tasks_ = nullptr;

TEST(ClosedLoopPolicySpecTest, MapsEachKindOfCandidate) {
  EXPECT_EQ(*ClosedLoopPolicySpec(Candidate("fp16", "")), "full");
  EXPECT_EQ(*ClosedLoopPolicySpec(Candidate("kvquant-3b", "kvquant3")), "kvquant3-1pct");
  proto::SelectCandidate dense = Candidate("kvquant-3b", "kvquant3");
  dense.mutable_quant()->set_outlier_fraction(0);
  EXPECT_EQ(*ClosedLoopPolicySpec(dense), "kvquant3");
  EXPECT_EQ(*ClosedLoopPolicySpec(Candidate("k2h", "kivi2+h2o")), "kivi2+h2o");
  EXPECT_EQ(*ClosedLoopPolicySpec(Candidate("s", "snapkv")), "snapkv");
  EXPECT_EQ(*ClosedLoopPolicySpec(Candidate("r", "rocketkv")), "rocketkv");
}

TEST(ClosedLoopPolicySpecTest, RefusesWhatTheClosedLoopCannotRun) {
  absl::StatusOr<std::string> spec = ClosedLoopPolicySpec(Candidate("hindsight", "oracle_evict"));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(spec.status().message().find("candidate 'hindsight'"), std::string::npos) << spec.status();
  proto::SelectCandidate two_percent = Candidate("kvquant-3b-2%", "kvquant3");
  two_percent.mutable_quant()->set_outlier_fraction(0.02);
  spec = ClosedLoopPolicySpec(two_percent);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(spec.status().message().find("candidate 'kvquant-3b-2%'"), std::string::npos) << spec.status();
  EXPECT_NE(spec.status().message().find("outlier_fraction=0.02"), std::string::npos) << spec.status();
}

TEST_F(ClosedLoopOutcomesTest, CorrectIsKvsimEvalsResultForTheSamePolicyAndBudget) {
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates(kSmallSet);
  ASSERT_TRUE(set.ok()) << set.status();
  ClosedLoopOutcomeOptions options;
  options.num_threads = 2;
  absl::StatusOr<OutcomeTable> table =
      MakeClosedLoopOutcomeTable(*model_, *tasks_, *set, DefaultSelectConfig(), options);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_prompts(), 12);  // the perplexity task has no row
  ASSERT_EQ(table->num_candidates(), 11);
  EXPECT_EQ(table->feature_names, ClosedLoopFeatureNames());

  // The expectation, written out by hand: each candidate's policy and its budget in percent of the prompt
  // (0: none), and the closed loop run on each task alone.
  const std::map<std::string, std::pair<std::string, int>> expected = {{"fp16", {"full", 0}},
                                                                       {"kvquant-4b", {"kvquant4", 0}},
                                                                       {"kvquant-3b-1%", {"kvquant3-1pct", 0}},
                                                                       {"kvquant-2b-1%", {"kvquant2-1pct", 0}},
                                                                       {"h2o-50%", {"h2o", 5000}},
                                                                       {"h2o-25%", {"h2o", 2500}},
                                                                       {"h2o-12.5%", {"h2o", 1250}},
                                                                       {"rocketkv-50%", {"rocketkv", 5000}},
                                                                       {"rocketkv-25%", {"rocketkv", 2500}},
                                                                       {"rocketkv-12.5%", {"rocketkv", 1250}},
                                                                       {"rocketkv-6.25%", {"rocketkv", 625}}};
  const proto::ExperimentConfig config = DefaultSelectConfig();
  int correct = 0;
  for (int c = 0; c < table->num_candidates(); ++c) {
    const auto& [policy, basis_points] = expected.at(table->candidates[c]);
    std::unique_ptr<CandidateCostModel> cost = *CandidateCostModel::Create(config, set->candidate(c));
    for (int p = 0; p < table->num_prompts(); ++p) {
      const EvalTask& task = (*tasks_)[p];  // the perplexity task is the last
      ASSERT_EQ(table->prompt_ids[p], task.id);
      const int64_t n = task.prompt_ids.size();
      const int64_t budget = basis_points == 0 ? n : (n * basis_points + 9999) / 10000;  // ceil
      EvalOptions eval;
      eval.policies = {policy};
      eval.budget_tokens = {budget};
      absl::StatusOr<EvalResults> alone = RunClosedLoopEval(*model_, {task}, eval);
      ASSERT_TRUE(alone.ok()) << alone.status();
      const Outcome& o = table->at(p, c);
      EXPECT_EQ(o.correct, alone->runs[0].correct) << table->candidates[c] << " on " << task.id;
      correct += o.correct ? 1 : 0;
      // Features: lengths, family code, prefill statistics in range; the mass a budget keeps is at least
      // its share of the prompt (the B largest of n columns hold >= B / n of their sum).
      EXPECT_EQ(o.features[0], n);
      EXPECT_EQ(o.features[1], task.answer_ids.size());
      EXPECT_EQ(o.features[2], task.task == "niah_single" ? 1 : task.task == "niah_multikey" ? 2 : 6);
      EXPECT_GT(o.features[3], 0);
      EXPECT_LE(o.features[3], 1);
      EXPECT_EQ(o.features[3], table->at(p, 0).features[3]);
      if (basis_points == 0) {
        EXPECT_EQ(o.features[4], 1);
      } else {
        EXPECT_GE(o.features[4], static_cast<double>(budget) / n - 1e-6);
        EXPECT_LT(o.features[4], 1);
      }
      // Costs: the cost model's for the prompt's lengths.
      const CandidateCost expected_cost = *cost->Cost(n, task.answer_ids.size());
      EXPECT_EQ(o.latency_ms, expected_cost.latency_ms);
      EXPECT_EQ(o.peak_memory_mb, expected_cost.peak_memory_mb);
    }
  }
  // Not degenerate: the model solves some prompts and the configurations disagree on some.
  EXPECT_GT(correct, 0);
  EXPECT_LT(correct, table->num_prompts() * table->num_candidates());
  // The same budget keeps the same mass, whichever policy reads it.
  const int h2o = CandidateIndex(*set, "h2o-25%"), rocket = CandidateIndex(*set, "rocketkv-25%");
  for (int p = 0; p < table->num_prompts(); ++p) {
    EXPECT_EQ(table->at(p, h2o).features[4], table->at(p, rocket).features[4]);
    EXPECT_GE(table->at(p, CandidateIndex(*set, "h2o-50%")).features[4], table->at(p, h2o).features[4]);
  }
}

TEST_F(ClosedLoopOutcomesTest, SameTableForAnyThreadCount) {
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates(kSmallSet);
  ASSERT_TRUE(set.ok()) << set.status();
  const std::vector<EvalTask> few(tasks_->begin(), tasks_->begin() + 4);
  ClosedLoopOutcomeOptions one, three;
  three.num_threads = 3;
  absl::StatusOr<OutcomeTable> a = MakeClosedLoopOutcomeTable(*model_, few, *set, DefaultSelectConfig(), one);
  absl::StatusOr<OutcomeTable> b = MakeClosedLoopOutcomeTable(*model_, few, *set, DefaultSelectConfig(), three);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(FormatOutcomeTableCsv(*a), FormatOutcomeTableCsv(*b));
}

TEST_F(ClosedLoopOutcomesTest, RefusesABadCandidateAndATaskFileWithoutExactMatch) {
  proto::SelectCandidateSet set;
  *set.add_candidate() = Candidate("fp16", "");
  *set.add_candidate() = Candidate("hindsight", "oracle_evict");
  absl::StatusOr<OutcomeTable> refused = MakeClosedLoopOutcomeTable(*model_, *tasks_, set, DefaultSelectConfig(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("'hindsight'"), std::string::npos) << refused.status();

  set.mutable_candidate()->RemoveLast();
  const std::vector<EvalTask> perplexity_only = {tasks_->back()};
  ASSERT_TRUE(perplexity_only[0].is_perplexity());
  absl::StatusOr<OutcomeTable> empty =
      MakeClosedLoopOutcomeTable(*model_, perplexity_only, set, DefaultSelectConfig(), {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no exact-match task"), std::string::npos) << empty.status();
}

}  // namespace
}  // namespace kvsim
