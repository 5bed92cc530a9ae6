#include "sim/eval/closed_loop_eval.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/eval/eval_report.h"
#include "sim/eval/llama_session.h"
#include "sim/eval/testing/reference_forward.h"
#include "sim/eval/testing/tiny_llama.h"

namespace kvsim {
namespace {

LlamaConfig Config() { return testing::TinyLlamaConfig(/*num_layers=*/2, /*vocab_size=*/40); }

std::vector<int32_t> Prompt(int n, int seed) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 5 + seed * 11 + (i * i) % 7) % 39;  // never the EOS id 39
  return ids;
}

class ClosedLoopEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = RandomLlamaModel(Config(), 9, 3.0f);
    for (int i = 0; i < 4; ++i) {
      EvalTask t;
      t.id = absl::StrCat("t", i);
      t.task = i < 2 ? "niah_single" : "niah_multikey";
      t.prompt_ids = Prompt(30 + 4 * i, i);
      t.context_tokens = 32;
      t.answer_ids = testing::GreedyIds(*model_, t.prompt_ids, 4);
      t.max_new_tokens = 6;
      t.answer_position = 10;
      t.source = absl::StrCat("mem:", i + 1);
      tasks_.push_back(t);
    }
    // EOS: an id in no answer (GreedyIds ignores EOS, so the answers are the model's first 4 tokens).
    int32_t eos = 0;
    for (bool used = true; used; eos += used ? 1 : 0) {
      used = false;
      for (const EvalTask& t : tasks_) used |= std::count(t.answer_ids.begin(), t.answer_ids.end(), eos) > 0;
    }
    model_->config.eos_token_ids = {eos};
    // Unreachable (another token than the model's, not the EOS id): 3 of 4 correct under full.
    int32_t& changed = tasks_[3].answer_ids[2];
    changed = (changed + 1) % 39 == eos ? (changed + 2) % 39 : (changed + 1) % 39;
    EvalTask ppl;
    ppl.id = "p";
    ppl.task = "perplexity";
    ppl.prompt_ids = Prompt(20, 7);
    ppl.answer_ids = {3, 14, 15, 9, 26};
    ppl.source = "mem:5";
    tasks_.push_back(ppl);
  }

  std::unique_ptr<LlamaModel> model_;
  std::vector<EvalTask> tasks_;
};

TEST_F(ClosedLoopEvalTest, FullCacheScoresAndPerplexity) {
  EvalOptions options;
  options.policies = {"full", "streaming_llm"};
  options.budget_tokens = {8, 64};
  auto results = RunClosedLoopEval(*model_, tasks_, options);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->points.size(), 4u);
  ASSERT_EQ(results->runs.size(), 5u * 4u);
  // Groups per point: niah_multikey@32, niah_single@32, perplexity@0, all.
  ASSERT_EQ(results->groups.size(), 4u * 4u);
  // The reference NLL of the perplexity task with a full cache: mean over the 5 answer tokens of
  // -log softmax of the double-precision reference's logits.
  std::vector<int32_t> seq = tasks_[4].prompt_ids;
  seq.insert(seq.end(), tasks_[4].answer_ids.begin(), tasks_[4].answer_ids.end() - 1);
  const auto ref = testing::ReferenceForward(*model_, seq);
  double want = 0;
  for (size_t i = 0; i < 5; ++i) {
    const auto& row = ref[tasks_[4].prompt_ids.size() - 1 + i];
    double m = -1e300, sum = 0;
    for (double x : row) m = std::max(m, x);
    for (double x : row) sum += std::exp(x - m);
    want += -(row[tasks_[4].answer_ids[i]] - m - std::log(sum));
  }
  want /= 5;
  for (const EvalGroup& g : results->groups) {
    const EvalPoint& p = results->points[g.point];
    if (g.task == "all") {
      EXPECT_EQ(g.num_tasks, 4);
      if (p.policy == "full") {
        EXPECT_DOUBLE_EQ(g.accuracy, 0.75);
      }
      // Needles 10 tokens into prompts of 30..42 tokens: 20..32 tokens from the end, none within 8.
      EXPECT_EQ(g.needle_covered, p.budget_value >= 64 ? 4 : 0);
    }
    if (g.task == "perplexity") {
      EXPECT_EQ(g.nll_tokens, 5);
      if (p.policy == "full") {
        EXPECT_NEAR(g.mean_nll, want, 1e-4);
        EXPECT_NEAR(g.perplexity, std::exp(want), 1e-3);
      }
    }
    // Recency window of 8 at 4 decode steps past prompts of >= 20 tokens reads exactly 8 tokens.
    if (p.policy == "streaming_llm" && p.budget_value == 8 && g.task != "perplexity") {
      EXPECT_DOUBLE_EQ(g.mean_tokens_read, 8.0);
    }
    // A budget of 64 covers every sequence here: streaming_llm keeps everything and equals full.
    if (p.policy == "streaming_llm" && p.budget_value == 64 && g.task == "all") {
      EXPECT_DOUBLE_EQ(g.accuracy, 0.75);
    }
  }
  // Full ran once per task and is reported at both budgets.
  EXPECT_EQ(results->runs[0].generated, results->runs[1].generated);
  EXPECT_EQ(results->runs[0].budget_tokens, 8);
  EXPECT_EQ(results->runs[1].budget_tokens, 64);
  EXPECT_EQ(results->runs[0].generated, tasks_[0].answer_ids);
}

TEST_F(ClosedLoopEvalTest, IdenticalForAnyThreadCount) {
  EvalOptions options;
  options.policies = {"full", "h2o", "snapkv", "kivi2", "quest"};
  options.budget_tokens = {6, 16};
  options.budget_ratios = {0.5};
  std::string csv[2], json[2], runs[2];
  int calls = 0;
  for (int i = 0; i < 2; ++i) {
    options.num_threads = i == 0 ? 1 : 3;
    options.progress = [&](int64_t done, int64_t total) {
      ++calls;
      EXPECT_LE(done, total);
    };
    auto results = RunClosedLoopEval(*model_, tasks_, options);
    ASSERT_TRUE(results.ok()) << results.status();
    csv[i] = EvalResultsCsv(*results);
    json[i] = EvalJson(*results);
    runs[i] = EvalTasksCsv(*results, tasks_);
  }
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(csv[0], csv[1]);
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(runs[0], runs[1]);
}

TEST_F(ClosedLoopEvalTest, RefusesBadOptions) {
  EvalOptions options;
  options.budget_tokens = {8};
  EXPECT_FALSE(RunClosedLoopEval(*model_, tasks_, options).ok());  // no policies
  options.policies = {"h2o", "h2o"};
  EXPECT_NE(RunClosedLoopEval(*model_, tasks_, options).status().message().find("'h2o' is given twice"),
            std::string::npos);
  options.policies = {"oracle_evict"};
  EXPECT_EQ(RunClosedLoopEval(*model_, tasks_, options).status().code(), absl::StatusCode::kFailedPrecondition);
  options.policies = {"full"};
  options.budget_tokens = {0};
  EXPECT_FALSE(RunClosedLoopEval(*model_, tasks_, options).ok());
  options.budget_tokens = {8};
  options.num_threads = -1;
  EXPECT_FALSE(RunClosedLoopEval(*model_, tasks_, options).ok());
  options.num_threads = 1;
  tasks_[1].prompt_ids[3] = 40;
  EXPECT_NE(RunClosedLoopEval(*model_, tasks_, options)
                .status()
                .message()
                .find("mem:2: task 't1': prompt_ids[3] = 40 is outside the model's vocabulary [0, 40)"),
            std::string::npos);
}

}  // namespace
}  // namespace kvsim
