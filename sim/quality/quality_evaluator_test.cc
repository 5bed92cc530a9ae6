#include "sim/quality/quality_evaluator.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "policies/token/kivi_policy.h"
#include "traces/attention/synthetic_trace.h"
#include "util/cpu_features.h"
#include "util/parallel.h"

namespace kvsim {
namespace {

const QualityPoint* Find(const QualityResults& r, const std::string& policy, double budget) {
  for (const QualityPoint& p : r.points) {
    if (p.policy == policy && p.budget_value == budget) return &p;
  }
  return nullptr;
}

// One layer, one KV head, group 1, prompt 0..2 and one decode step at 3 whose logits are
// (0, ln 2, ln 3, ln 4): a = (1, 2, 3, 4) / 10. Keys sqrt(d) e_i, values e_i: o = a.
SyntheticTrace HandTrace() {
  SyntheticTrace t;
  AttentionTraceHeader& h = t.header;
  h.model = "hand";
  h.num_layers = 1;
  h.num_query_heads = 1;
  h.num_kv_heads = 1;
  h.head_dim = 4;
  h.kept_layers = {0};
  h.kept_kv_heads = {0};
  AttentionSample s;
  s.prompt_len = 3;
  s.num_decode_steps = 1;
  s.query_start = 3;
  HeadTensors head;
  head.keys.assign(16, 0.0f);
  head.values.assign(16, 0.0f);
  for (int i = 0; i < 4; ++i) {
    head.keys[i * 4 + i] = 2.0f;  // sqrt(4)
    head.values[i * 4 + i] = 1.0f;
  }
  head.queries = {0.0f, static_cast<float>(std::log(2.0)), static_cast<float>(std::log(3.0)),
                  static_cast<float>(std::log(4.0))};
  s.heads.push_back(head);
  t.samples.push_back(s);
  return t;
}

QualityResults Evaluate(const SyntheticTrace& t, const QualityOptions& options) {
  auto evaluator = QualityEvaluator::Create(t.header, options);
  EXPECT_TRUE(evaluator.ok()) << evaluator.status();
  for (const AttentionSample& s : t.samples) EXPECT_TRUE((*evaluator)->AddSample(s).ok());
  return (*evaluator)->Finish();
}

TEST(QualityEvaluatorTest, HandComputedMetrics) {
  QualityOptions options;
  options.policies = {"streaming_llm"};
  options.budget_tokens = {2};
  options.top_k = 2;
  QualityResults r = Evaluate(HandTrace(), options);
  // streaming_llm with B = 2: one sink (0) and the current token (3): recall = 0.1 + 0.4 = 0.5.
  // o' = (0.1, 0, 0, 0.4) / 0.5 = (0.2, 0, 0, 0.8); o - o' = (-0.1, 0.2, 0.3, -0.4):
  // ||o - o'||^2 = 0.30 = ||o||^2, so the error is 1. Top-2 = {3, 2}: overlap 1/2.
  const QualityPoint* p = Find(r, "streaming_llm", 2);
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(p->recall.mean, 0.5, 1e-6);
  EXPECT_NEAR(p->error.mean, 1.0, 1e-6);
  EXPECT_NEAR(p->overlap.mean, 0.5, 1e-9);
  EXPECT_EQ(p->mean_kept_tokens, 2.0);
  // oracle_select (always added): {2, 3}: recall 0.7; o' = (0, 0, 3/7, 4/7); o - o' = (0.1, 0.2, 0.3 - 3/7,
  // 0.4 - 4/7); error = sqrt((0.01 + 0.04 + (0.3 - 3/7)^2 + (0.4 - 4/7)^2) / 0.30).
  const QualityPoint* o = Find(r, "oracle_select", 2);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, "select");
  EXPECT_NEAR(o->recall.mean, 0.7, 1e-6);
  const double e = std::sqrt((0.01 + 0.04 + std::pow(0.3 - 3.0 / 7, 2) + std::pow(0.4 - 4.0 / 7, 2)) / 0.30);
  EXPECT_NEAR(o->error.mean, e, 1e-6);
  EXPECT_NEAR(o->overlap.mean, 1.0, 1e-9);
  EXPECT_EQ(r.num_dot_products, 4);  // one query over 4 keys
}

SyntheticTrace Synthetic(int64_t prompt_len = 256, int64_t steps = 12) {
  SyntheticTraceOptions o;
  o.num_layers = 2;
  o.num_kv_heads = 4;
  o.group_size = 2;
  o.head_dim = 48;
  o.prompt_len = prompt_len;
  o.decode_steps = steps;
  o.query_window = 32;
  o.column_sums = true;
  return GenerateSyntheticTrace(o);
}

const std::vector<std::string> kAllPolicies = {
    "full",         "random",      "knorm",     "streaming_llm", "h2o",
    "tova",         "snapkv",      "pyramidkv", "quest",         "oracle_select",
    "oracle_evict", "kivi4+h2o",   "kivi8",     "scissorhands",  "expected_attention",
    "rocketkv",     "adakv+snapkv"};

TEST(QualityEvaluatorTest, FullBudgetKeepsEverythingExactly) {
  QualityOptions options;
  options.policies = kAllPolicies;
  options.policies.erase(options.policies.begin() + 11, options.policies.begin() + 13);  // quantisers
  options.budget_tokens = {100000};
  QualityResults r = Evaluate(Synthetic(), options);
  for (const QualityPoint& p : r.points) {
    EXPECT_EQ(p.recall.worst, 1.0) << p.policy;  // exactly: nothing is missing
    EXPECT_EQ(p.error.worst, 0.0) << p.policy;
    EXPECT_EQ(p.overlap.worst, 1.0) << p.policy;
  }
  // "full" ignores the budget: exact at any budget.
  options.policies = {"full"};
  options.budget_tokens = {1};
  r = Evaluate(Synthetic(), options);
  EXPECT_EQ(Find(r, "full", 1)->recall.worst, 1.0);
  EXPECT_EQ(Find(r, "full", 1)->error.worst, 0.0);
}

TEST(QualityEvaluatorTest, NoPolicyBeatsTheSelectionOracle) {
  QualityOptions options;
  options.policies = kAllPolicies;
  options.policies.erase(options.policies.begin() + 7);  // pyramidkv moves budget between layers
  options.policies.pop_back();                           // adakv moves budget between heads
  options.budget_tokens = {8, 32, 128};
  options.budget_ratios = {0.25};
  QualityResults r = Evaluate(Synthetic(), options);
  for (const QualityPoint& p : r.points) {
    if (p.policy == "full" || p.kind == "quantize" || p.policy == "quest") continue;  // read more than B
    const QualityPoint* oracle = Find(r, "oracle_select", p.budget_value);
    ASSERT_NE(oracle, nullptr);
    EXPECT_LE(p.recall.mean, oracle->recall.mean + 1e-9) << p.policy << " at " << p.budget_value;
    EXPECT_LE(p.mean_kept_tokens, oracle->mean_kept_tokens + 1e-9) << p.policy;
  }
  // Recall grows with the budget for the oracle.
  EXPECT_LT(Find(r, "oracle_select", 8)->recall.mean, Find(r, "oracle_select", 128)->recall.mean);
  // Areas: the oracle's own ratio is 1.
  for (const QualityArea& a : r.areas) {
    if (a.policy == "oracle_select") {
      EXPECT_DOUBLE_EQ(a.recall_vs_oracle, 1.0);
    }
  }
}

TEST(QualityEvaluatorTest, RatioBudgetsResolveAgainstThePrompt) {
  QualityOptions options;
  options.policies = {"snapkv"};
  options.budget_ratios = {0.25};
  QualityResults r = Evaluate(Synthetic(), options);
  const QualityPoint* p = Find(r, "snapkv", 0.25);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->is_ratio);
  EXPECT_EQ(p->mean_budget_tokens, 64.0);  // 0.25 x 256
  EXPECT_EQ(p->mean_kept_tokens, 64.0);
  ASSERT_EQ(p->layer_recall.size(), 2u);
  ASSERT_EQ(p->head_recall.size(), 8u);
}

TEST(QualityEvaluatorTest, QuantisedOutputMatchesDirectComputation) {
  SyntheticTrace t = Synthetic(96, 1);  // one decode step at position 96
  t.header.kept_layers = {0};
  t.header.kept_kv_heads = {0};
  t.samples[0].heads.resize(1);
  QualityOptions options;
  options.policies = {"kivi2"};
  options.budget_tokens = {1000};
  QualityResults r = Evaluate(t, options);
  // Direct: keys 0..95 (three flushed groups of 32) quantised per channel, key 96 exact; values 0..64
  // quantised per token (older than the last 32), 65..96 exact; softmax of q.k~ / sqrt(d) applied to v~.
  const HeadTensors& h = t.samples[0].heads[0];
  const int d = 48;
  const int64_t n = 97;
  std::vector<float> kq = QuantizeKeysPerChannel(h.keys.data(), n, d, 32, 2);
  std::vector<float> vq = QuantizeValuesPerToken(h.values.data(), n, d, 32, 2);
  double err_sum = 0;
  for (int j = 0; j < 2; ++j) {
    const float* q = &h.queries[(j * 33 + 32) * d];  // 33 stored queries per member; the last is p = 96
    std::vector<double> exact(n), approx(n);
    double me = -1e300, ma = -1e300;
    for (int64_t i = 0; i < n; ++i) {
      double de = 0, da = 0;
      for (int c = 0; c < d; ++c) {
        de += static_cast<double>(q[c]) * h.keys[i * d + c];
        da += static_cast<double>(q[c]) * (i < 96 ? kq[i * d + c] : h.keys[i * d + c]);
      }
      exact[i] = de / std::sqrt(48.0);
      approx[i] = da / std::sqrt(48.0);
      me = std::max(me, exact[i]);
      ma = std::max(ma, approx[i]);
    }
    double se = 0, sa = 0;
    for (int64_t i = 0; i < n; ++i) {
      se += (exact[i] = std::exp(exact[i] - me));
      sa += (approx[i] = std::exp(approx[i] - ma));
    }
    double diff = 0, norm = 0;
    for (int c = 0; c < d; ++c) {
      double o = 0, o2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        o += exact[i] / se * h.values[i * d + c];
        o2 += approx[i] / sa * (i < 65 ? vq[i * d + c] : h.values[i * d + c]);
      }
      diff += (o - o2) * (o - o2);
      norm += o * o;
    }
    err_sum += std::sqrt(diff / norm);
  }
  const QualityPoint* p = Find(r, "kivi2", 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->kind, "quantize");
  EXPECT_EQ(p->recall.mean, 1.0);  // every token is kept
  EXPECT_GT(p->error.mean, 1e-3);  // 2 bits is visibly lossy
  EXPECT_NEAR(p->error.mean, err_sum / 2, 1e-4 * (1 + err_sum));
}

TEST(QualityEvaluatorTest, KvQuantRunsOpenLoopAndRefusesRopeItCannotUndo) {
  // On the trace's post-RoPE keys (un-rotated by the policy): every token kept, the output error falls
  // with the bits.
  QualityOptions options;
  options.policies = {"kvquant2", "kvquant4", "kvquant8-1pct"};
  options.budget_tokens = {1000};
  QualityResults r = Evaluate(Synthetic(), options);
  const QualityPoint *two = Find(r, "kvquant2", 1000), *four = Find(r, "kvquant4", 1000),
                     *eight = Find(r, "kvquant8-1pct", 1000);
  ASSERT_TRUE(two != nullptr && four != nullptr && eight != nullptr);
  EXPECT_EQ(two->kind, "quantize");
  EXPECT_EQ(two->recall.mean, 1.0);
  EXPECT_GT(two->error.mean, four->error.mean);
  EXPECT_GT(four->error.mean, eight->error.mean);
  EXPECT_LT(eight->error.mean, 0.02);
  // A trace of a llama3-scaled model: the RoPE config cannot give its rotation, so the policy is refused.
  SyntheticTrace t = Synthetic();
  t.header.rope.scaling = RopeScaling::kLlama3;
  t.header.rope.scaling_factor = 8;
  auto evaluator = QualityEvaluator::Create(t.header, options);
  ASSERT_FALSE(evaluator.ok());
  EXPECT_EQ(evaluator.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(evaluator.status().message().find("kvquant2 quantises keys before the rotary embedding"),
            std::string::npos)
      << evaluator.status();
  EXPECT_NE(evaluator.status().message().find("'llama3'"), std::string::npos) << evaluator.status();
}

TEST(QualityEvaluatorTest, Deterministic) {
  QualityOptions options;
  options.policies = {"random", "h2o", "quest"};
  options.budget_tokens = {16, 64};
  options.seed = 5;
  QualityResults a = Evaluate(Synthetic(), options);
  QualityResults b = Evaluate(Synthetic(), options);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].recall.mean, b.points[i].recall.mean);
    EXPECT_EQ(a.points[i].error.p10, b.points[i].error.p10);
    EXPECT_EQ(a.points[i].head_error, b.points[i].head_error);
  }
}

TEST(QualityEvaluatorTest, ResultsDoNotDependOnTheMemoryBound) {
  // Default: each layer's exact attention held whole (oracle_evict reads it). 32 KiB: blocks of one
  // step (70 steps here), the exact rows recomputed per block and oracle_evict computing its own.
  // The SIMD kernels compute each GEMM entry the same way wherever it sits in the product, so the bits
  // are equal; the portable path's library GEMM does not promise that, so there they agree to rounding.
  QualityOptions options;
  options.policies = kAllPolicies;
  options.budget_tokens = {24, 100};
  options.budget_ratios = {0.3};
  const SyntheticTrace t = Synthetic(200, 70);
  const QualityResults whole = Evaluate(t, options);
  options.max_attention_bytes = 32 << 10;
  const QualityResults blocked = Evaluate(t, options);
  const double tolerance = UseAvx2Fma() ? 0.0 : 1e-4;
  ASSERT_EQ(whole.points.size(), blocked.points.size());
  for (size_t i = 0; i < whole.points.size(); ++i) {
    const QualityPoint &a = whole.points[i], &b = blocked.points[i];
    const std::string where = absl::StrCat(a.policy, " at ", a.budget_value);
    EXPECT_NEAR(a.recall.mean, b.recall.mean, tolerance) << where;
    EXPECT_NEAR(a.recall.worst, b.recall.worst, tolerance) << where;
    EXPECT_NEAR(a.error.mean, b.error.mean, tolerance) << where;
    EXPECT_NEAR(a.error.p10, b.error.p10, tolerance) << where;
    EXPECT_NEAR(a.overlap.mean, b.overlap.mean, tolerance) << where;
    EXPECT_NEAR(a.mean_kept_tokens, b.mean_kept_tokens, tolerance) << where;
    ASSERT_EQ(a.head_error.size(), b.head_error.size());
    for (size_t h = 0; h < a.head_error.size(); ++h) {
      EXPECT_NEAR(a.head_error[h], b.head_error[h], tolerance) << where;
    }
  }
  EXPECT_EQ(whole.num_dot_products, blocked.num_dot_products);
}

// Every number of two results equal, exactly.
void ExpectSameResults(const QualityResults& a, const QualityResults& b, const std::string& what) {
  EXPECT_EQ(a.num_dot_products, b.num_dot_products) << what;
  ASSERT_EQ(a.points.size(), b.points.size()) << what;
  for (size_t i = 0; i < a.points.size(); ++i) {
    const QualityPoint &x = a.points[i], &y = b.points[i];
    const std::string where = absl::StrCat(what, ": ", x.policy, " at ", x.budget_value);
    EXPECT_EQ(x.policy, y.policy) << where;
    EXPECT_EQ(x.budget_value, y.budget_value) << where;
    for (auto [u, v] : {std::pair{x.recall, y.recall}, std::pair{x.error, y.error}, std::pair{x.overlap, y.overlap}}) {
      EXPECT_EQ(u.mean, v.mean) << where;
      EXPECT_EQ(u.p10, v.p10) << where;
      EXPECT_EQ(u.worst, v.worst) << where;
      EXPECT_EQ(u.count, v.count) << where;
    }
    EXPECT_EQ(x.mean_kept_tokens, y.mean_kept_tokens) << where;
    EXPECT_EQ(x.layer_recall, y.layer_recall) << where;
    EXPECT_EQ(x.layer_error, y.layer_error) << where;
    EXPECT_EQ(x.head_recall, y.head_recall) << where;
    EXPECT_EQ(x.head_error, y.head_error) << where;
  }
}

TEST(QualityEvaluatorTest, ResultsDoNotDependOnTheThreadCount) {
  // Each point (policy x budget) is measured by one thread at a time in a fixed order, and the shared
  // per-head prompt caches hold the same values whichever thread fills them: the bits are equal. Two
  // samples, two layers, both with the layer's attention held whole and in blocks of 3 steps (2 KiB).
  QualityOptions options;
  options.policies = kAllPolicies;
  options.budget_tokens = {24, 100};
  options.budget_ratios = {0.3};
  options.seed = 3;
  SyntheticTrace t = Synthetic(200, 9);
  t.samples.push_back(Synthetic(150, 7).samples[0]);
  for (int64_t bytes : {int64_t{1} << 30, int64_t{2} << 10}) {
    options.max_attention_bytes = bytes;
    options.num_threads = 1;
    const QualityResults one = Evaluate(t, options);
    for (int threads : {2, 5}) {
      options.num_threads = threads;
      ExpectSameResults(one, Evaluate(t, options), absl::StrCat(threads, " threads, ", bytes, " bytes"));
    }
  }
}

TEST(QualityEvaluatorTest, RejectsBadOptionsAndSamples) {
  SyntheticTrace t = Synthetic(64, 2);
  QualityOptions options;
  options.policies = {"nope"};
  options.budget_tokens = {8};
  auto e = QualityEvaluator::Create(t.header, options);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("unknown token policy 'nope'"), std::string::npos);
  options.policies = {"h2o"};
  options.budget_tokens = {0};
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("0 tokens: must be in [1, "),
            std::string::npos);
  options.budget_tokens = {kMaxQualityBudgetTokens + 1};  // positions are int32
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("2147483648 tokens: must be in"),
            std::string::npos);
  options.budget_tokens = {kMaxQualityBudgetTokens};  // keeps everything
  EXPECT_TRUE(QualityEvaluator::Create(t.header, options).ok());
  options.policies = {"h2o", "snapkv", "h2o"};
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("policy 'h2o' is given twice"),
            std::string::npos);
  options.policies = {"h2o"};
  options.budget_tokens = {};
  options.budget_ratios = {1.5};
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("(0, 1]"), std::string::npos);
  options.budget_ratios = {0.5};
  options.num_threads = -1;
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("num_threads must be in [0, 1024]"),
            std::string::npos);
  options.num_threads = kMaxThreads + 1;  // thousands of threads and their buffers: refused, not attempted
  EXPECT_NE(QualityEvaluator::Create(t.header, options).status().message().find("got 1025"), std::string::npos);
  options.num_threads = 0;  // every core
  auto ok = QualityEvaluator::Create(t.header, options);
  ASSERT_TRUE(ok.ok());
  AttentionSample bad = t.samples[0];
  bad.heads.pop_back();
  absl::Status s = (*ok)->AddSample(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sample 0: sample has 7 head records, expected 8"), std::string::npos) << s;
}

TEST(QualityEvaluatorTest, NeedleIsFoundByQueryAwarePolicies) {
  // On the needle head of a synthetic trace, the decode queries look for a token the prompt queries
  // ignore: Quest (query-aware, per step) keeps most of the mass at a small budget; StreamingLLM cannot.
  SyntheticTraceOptions o;
  o.num_layers = 3;  // Quest keeps layers 0 and 1 dense; layer 2 is the one compared
  o.num_kv_heads = 1;
  o.group_size = 1;
  o.head_dim = 48;
  o.prompt_len = 512;
  o.decode_steps = 8;
  o.head_types = {SyntheticHeadType::kNeedle};
  SyntheticTrace t = GenerateSyntheticTrace(o);
  QualityOptions options;
  options.policies = {"quest", "streaming_llm"};
  options.budget_tokens = {64};
  QualityResults r = Evaluate(t, options);
  EXPECT_GT(Find(r, "quest", 64)->layer_recall[2], Find(r, "streaming_llm", 64)->layer_recall[2] + 0.2);
}

}  // namespace
}  // namespace kvsim
