#include "sim/eval/llama_session.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "policies/token/token_policy.h"
#include "sim/eval/llama_model.h"
#include "sim/eval/testing/reference_forward.h"

namespace kvsim {
namespace {

LlamaConfig TinyConfig(const std::string& arch = "LlamaForCausalLM") {
  LlamaConfig c;
  c.architecture = arch;
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 50;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000;
  c.max_position_embeddings = 256;
  c.attention_bias = arch == "Qwen2ForCausalLM";
  c.tie_word_embeddings = arch == "Qwen2ForCausalLM";
  return c;
}

std::vector<int32_t> Ids(int n, int vocab, int seed = 3) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 7 + seed * 13 + i * i) % vocab;
  return ids;
}

// Every logit within 1e-4 of the reference, relative to the row's largest magnitude (at least 1e-3).
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-3;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * scale) << what << " logit " << i;
  }
}

std::vector<double> Freqs(const LlamaConfig& c, int64_t seq_len, double* scaling) {
  const RopeFrequencies f = RopeFrequenciesAt(c, seq_len);
  *scaling = f.attention_scaling;
  return std::vector<double>(f.inv_freq.begin(), f.inv_freq.end());
}

// Prefill and cached decode both match the double-precision reference (recomputed from scratch).
void CheckAgainstReference(const LlamaConfig& config, bool check_decode, int prompt_len = 9) {
  auto model = RandomLlamaModel(config, 11, 2.0f);
  const std::vector<int32_t> prompt = Ids(prompt_len, config.vocab_size);
  LlamaSession session(*model, prompt_len + 7);
  auto logits = session.Prefill(prompt, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << logits.status();
  double scaling;
  std::vector<double> freqs = Freqs(config, prompt.size(), &scaling);
  const auto ref = testing::ReferenceForward(*model, prompt, freqs, scaling);
  const int v = config.vocab_size;
  for (size_t t = 0; t < prompt.size(); ++t) {
    ExpectClose(std::vector<float>(logits->begin() + t * v, logits->begin() + (t + 1) * v), ref[t],
                absl::StrCat(config.architecture, " prefill position ", t));
  }
  if (!check_decode) return;
  std::vector<int32_t> seq = prompt;
  std::vector<float> last(logits->end() - v, logits->end());
  for (int step = 0; step < 6; ++step) {
    seq.push_back(ArgMax(last));
    auto next = session.Decode(seq.back());
    ASSERT_TRUE(next.ok()) << next.status();
    last = *next;
    const auto full = testing::ReferenceForward(*model, seq, freqs, scaling);
    ExpectClose(last, full.back(), absl::StrCat(config.architecture, " decode step ", step));
  }
}

TEST(LlamaSessionTest, LlamaMatchesDoubleReference) { CheckAgainstReference(TinyConfig(), true); }

TEST(LlamaSessionTest, Qwen2BiasesAndTiedEmbeddingsMatchReference) {
  CheckAgainstReference(TinyConfig("Qwen2ForCausalLM"), true);
}

TEST(LlamaSessionTest, LlamaAttentionBiasAndMistralSlidingWindowMatchReference) {
  LlamaConfig llama = TinyConfig();
  llama.attention_bias = llama.o_bias = true;
  CheckAgainstReference(llama, true);
  LlamaConfig mistral = TinyConfig("MistralForCausalLM");
  mistral.sliding_window = 5;  // the 9-token prompt and the decode steps cross it
  CheckAgainstReference(mistral, true);
}

// Prompts longer than one block of the prefill's attention (256 query rows), with and without a window.
TEST(LlamaSessionTest, LongPromptMatchesReference) {
  LlamaConfig llama = TinyConfig();
  llama.num_layers = 1;
  CheckAgainstReference(llama, false, 600);
  LlamaConfig mistral = TinyConfig("MistralForCausalLM");
  mistral.num_layers = 1;
  mistral.sliding_window = 300;
  CheckAgainstReference(mistral, false, 600);
}

TEST(LlamaSessionTest, ScaledRotaryVariantsMatchReference) {
  for (RopeScaling type : {RopeScaling::kLinear, RopeScaling::kLlama3, RopeScaling::kYarn}) {
    LlamaConfig c = TinyConfig();
    c.rope_scaling.type = type;
    c.rope_scaling.factor = 4;
    c.rope_scaling.original_max_position_embeddings = 64;
    c.rope_theta = 500;
    CheckAgainstReference(c, true);
  }
  // Dynamic NTK: the base grows once the sequence exceeds max_position_embeddings (prefill only: cached
  // keys keep the rotation of the pass that computed them, as in transformers).
  LlamaConfig c = TinyConfig();
  c.rope_scaling.type = RopeScaling::kDynamic;
  c.rope_scaling.factor = 2;
  c.max_position_embeddings = 4;
  CheckAgainstReference(c, false);
}

// Hand-computed: all attention and MLP weights zero, so each position's logits are the final norm of
// its embedding times the output rows. Embedding [3, 4] has mean square 12.5: normed [0.848528, 1.131371].
TEST(LlamaSessionTest, HandComputedEmbeddingNormHead) {
  LlamaConfig c = TinyConfig();
  c.hidden_size = 2;
  c.num_heads = 1;
  c.num_kv_heads = 1;
  c.head_dim = 2;
  c.intermediate_size = 1;
  c.num_layers = 1;
  c.vocab_size = 3;
  c.rms_norm_eps = 0;
  c.tie_word_embeddings = false;
  auto m = RandomLlamaModel(c, 1);
  for (auto* w : {&m->layers[0].wq, &m->layers[0].wk, &m->layers[0].wv, &m->layers[0].wo, &m->layers[0].gate,
                  &m->layers[0].up, &m->layers[0].down}) {
    std::fill(w->begin(), w->end(), 0.0f);
  }
  m->embed = {3, 4, 1, 0, 0, 1};
  m->final_norm = {1, 2};
  m->lm_head = {1, 0, 0, 1, 1, 1};
  LlamaSession s(*m, 4);
  auto logits = s.Prefill({0});
  ASSERT_TRUE(logits.ok());
  EXPECT_NEAR((*logits)[0], 0.848528, 1e-5);
  EXPECT_NEAR((*logits)[1], 2 * 1.131371, 1e-5);
  EXPECT_NEAR((*logits)[2], 0.848528 + 2 * 1.131371, 1e-5);
}

// Hand-computed attention: q = k = 0 makes attention uniform, and with identity V and O projections the
// layer adds the mean of the normalised embeddings so far. Tokens 1 ([1, 0]) then 2 ([0, 1]), norm 1 each:
// after position 1 the hidden state is [0, 1] + ([1, 0] * sqrt2 + [0, 1] * sqrt2) / 2 = [0.7071, 1.7071];
// logits of the identity head after the final norm (rms 1.3066): [0.5412, 1.3066].
TEST(LlamaSessionTest, HandComputedUniformAttention) {
  LlamaConfig c = TinyConfig();
  c.hidden_size = 2;
  c.num_heads = 1;
  c.num_kv_heads = 1;
  c.head_dim = 2;
  c.intermediate_size = 1;
  c.num_layers = 1;
  c.vocab_size = 3;
  c.rms_norm_eps = 0;
  auto m = RandomLlamaModel(c, 1);
  LlamaLayerWeights& w = m->layers[0];
  std::fill(w.wq.begin(), w.wq.end(), 0.0f);
  std::fill(w.wk.begin(), w.wk.end(), 0.0f);
  w.wv = {1, 0, 0, 1};
  w.wo = {1, 0, 0, 1};
  w.input_norm = {1, 1};
  w.post_norm = {1, 1};
  std::fill(w.down.begin(), w.down.end(), 0.0f);
  m->embed = {5, 5, 1, 0, 0, 1};
  m->final_norm = {1, 1};
  m->lm_head = {1, 0, 0, 1, 0, 0};
  for (bool decode : {false, true}) {
    LlamaSession s(*m, 4);
    std::vector<float> logits;
    if (decode) {
      ASSERT_TRUE(s.Prefill({1}).ok());
      logits = *s.Decode(2);
    } else {
      logits = *s.Prefill({1, 2});
    }
    EXPECT_NEAR(logits[0], 0.541196, 1e-5) << decode;
    EXPECT_NEAR(logits[1], 1.306563, 1e-5) << decode;
  }
}

TEST(LlamaSessionTest, RefusesBadInput) {
  auto model = RandomLlamaModel(TinyConfig(), 1);
  LlamaSession s(*model, 4);
  EXPECT_NE(s.Prefill({}).status().message().find("empty prompt"), std::string::npos);
  EXPECT_NE(s.Prefill({1, 50}).status().message().find("token id 50 at position 1 is outside the vocabulary [0, 50)"),
            std::string::npos);
  EXPECT_NE(s.Prefill({1, 2, 3, 4, 5}).status().message().find("exceeds the session's capacity of 4"),
            std::string::npos);
  EXPECT_FALSE(s.Decode(1).ok());
  ASSERT_TRUE(s.Prefill({1, 2, 3}).ok());
  EXPECT_EQ(s.AttachPolicy("oracle_evict", 8, 0, nullptr).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.AttachPolicy("kivi4+oracle_evict", 8, 0, nullptr).message().find("cannot run closed-loop"),
            std::string::npos);
  EXPECT_FALSE(s.AttachPolicy("no_such_policy", 8, 0, nullptr).ok());
  ASSERT_TRUE(s.Decode(4).ok());
  EXPECT_FALSE(s.Decode(5).ok());  // full
}

// A test policy that keeps everything, checks that it is shown the model's whole layout and refuses it
// (as a KVP model trained for another model does), saying what it was shown.
class RefusesLayoutPolicy : public TokenPolicy {
 public:
  explicit RefusesLayoutPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "test_refuses_layout"; }
  Kind kind() const override { return Kind::kFull; }
  absl::Status CheckTrace(const AttentionTraceHeader& h) const override {
    return absl::InvalidArgumentError(absl::StrCat("shown ", h.model, ": ", h.num_layers, " layers, ", h.num_query_heads,
                                                   " query heads, ", h.num_kv_heads, " KV heads, head_dim ", h.head_dim,
                                                   "; kept layers ", absl::StrJoin(h.kept_layers, ","),
                                                   ", KV heads ", absl::StrJoin(h.kept_kv_heads, ",")));
  }
  void BeginLayer(absl::Span<const HeadContext>, int64_t) override {}
  void Step(const LayerStep&, std::vector<KeptSet>*) override {}
};
KVSIM_REGISTER_TOKEN_POLICY("test_refuses_layout", RefusesLayoutPolicy);

// AttachPolicy checks the policy against the model's layout, every layer and KV head, before the first
// layer begins.
TEST(LlamaSessionTest, AttachPolicyChecksTheModelLayout) {
  auto model = RandomLlamaModel(TinyConfig(), 1);
  model->source = "models/tiny";
  LlamaSession s(*model, 8);
  ASSERT_TRUE(s.Prefill({1, 2, 3}).ok());
  const absl::Status st = s.AttachPolicy("test_refuses_layout", 4, 0, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "policy 'test_refuses_layout' cannot run on model models/tiny: shown models/tiny: 2 layers, 4 query "
            "heads, 2 KV heads, head_dim 8; kept layers 0,1, KV heads 0,1");
  EXPECT_TRUE(s.AttachPolicy("full", 4, 0, nullptr).ok());  // nothing was attached
}

// Greedy generation of n tokens (logits of each step kept).
struct Generation {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;
  double mean_read = 0;
};

Generation Generate(const LlamaModel& model, const std::vector<int32_t>& prompt, int n, const std::string& policy,
                    int64_t budget) {
  Generation g;
  LlamaSession s(model, prompt.size() + n);
  std::vector<float> logits = *s.Prefill(prompt);
  if (!policy.empty()) {
    absl::Status st = s.AttachPolicy(policy, budget, 5, nullptr);
    EXPECT_TRUE(st.ok()) << policy << ": " << st;
    if (!st.ok()) return g;
  }
  for (int i = 0; i < n; ++i) {
    g.ids.push_back(ArgMax(logits));
    g.logits.push_back(logits);
    if (i + 1 < n) {
      auto next = s.Decode(g.ids.back());
      EXPECT_TRUE(next.ok()) << policy << ": " << next.status();
      if (!next.ok()) return g;
      logits = *next;
    }
  }
  g.mean_read = s.mean_tokens_read();
  return g;
}

TEST(LlamaSessionTest, FullPolicyEqualsPlainForwardExactly) {
  auto model = RandomLlamaModel(TinyConfig(), 2, 3.0f);
  const std::vector<int32_t> prompt = Ids(40, 50);
  const Generation plain = Generate(*model, prompt, 20, "", 0);
  const Generation full = Generate(*model, prompt, 20, "full", 4);
  EXPECT_EQ(plain.ids, full.ids);
  EXPECT_EQ(plain.logits, full.logits);  // bit-identical
  // Steps at positions 40..58 read every token: mean (41 + ... + 59) / 19 = 50.
  EXPECT_DOUBLE_EQ(full.mean_read, 50.0);
}

std::vector<std::string> ClosedLoopPolicies() {
  std::vector<std::string> names;
  for (const std::string& name : TokenPolicyNames()) {
    // Not bare wrappers, nor this file's own test policies.
    if (CheckClosedLoopPolicy(name).ok() && CreateTokenPolicy(name).ok() && name.rfind("test_", 0) != 0) {
      names.push_back(name);
    }
  }
  return names;
}

// A budget above the sequence length keeps everything: every eviction and selection policy then equals
// full to the bit (the kept set is sorted before the attention reads it).
TEST(LlamaSessionTest, LargeBudgetEqualsFull) {
  auto model = RandomLlamaModel(TinyConfig(), 4, 3.0f);
  const std::vector<int32_t> prompt = Ids(30, 50);
  const Generation full = Generate(*model, prompt, 12, "full", 1);
  int checked = 0;
  for (const std::string& name : ClosedLoopPolicies()) {
    auto policy = CreateTokenPolicy(name);
    ASSERT_TRUE(policy.ok()) << name;
    if ((*policy)->kind() == TokenPolicy::Kind::kQuantize) continue;
    const Generation g = Generate(*model, prompt, 12, name, 1000);
    EXPECT_EQ(g.ids, full.ids) << name;
    EXPECT_EQ(g.logits, full.logits) << name;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// Every registered policy other than the refused ones runs closed-loop at a small budget; eviction at a
// budget below the sequence reads at most the budget per step, and changes the logits.
TEST(LlamaSessionTest, EveryPolicyRunsAtSmallBudget) {
  LlamaConfig config = TinyConfig();
  config.num_layers = 3;  // Quest keeps its first two layers dense
  auto model = RandomLlamaModel(config, 4, 3.0f);
  const std::vector<int32_t> prompt = Ids(48, 50);
  const Generation full = Generate(*model, prompt, 10, "full", 1);
  std::vector<std::string> names = ClosedLoopPolicies();
  names.push_back("kivi2+h2o");
  names.push_back("adakv+snapkv");
  for (const std::string& name : names) {
    const Generation g = Generate(*model, prompt, 10, name, 16);
    ASSERT_EQ(g.ids.size(), 10u) << name;
    for (const auto& row : g.logits) {
      for (float x : row) ASSERT_TRUE(std::isfinite(x)) << name;
    }
    auto policy = CreateTokenPolicy(name);
    if ((*policy)->kind() == TokenPolicy::Kind::kEvict && name != "pyramidkv" && name.rfind("adakv", 0) != 0) {
      EXPECT_LE(g.mean_read, 16.0 + 1e-9) << name;
    }
    if ((*policy)->kind() != TokenPolicy::Kind::kFull) {
      EXPECT_NE(g.logits, full.logits) << name;
    }
  }
}

// A test policy: each decode step reads only the last two positions (itself and the one before).
class LastTwoPolicy : public TokenPolicy {
 public:
  explicit LastTwoPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "test_last_two"; }
  Kind kind() const override { return Kind::kSelect; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t) override { num_heads_ = heads.size(); }
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override {
    for (size_t h = 0; h < num_heads_; ++h) {
      (*kept)[h].per_query = {{static_cast<int32_t>(step.position), static_cast<int32_t>(step.position - 1)}};
    }
  }

 private:
  size_t num_heads_ = 0;
};
KVSIM_REGISTER_TOKEN_POLICY("test_last_two", LastTwoPolicy);

// The attention of a decode step reads only the kept set, renormalised: the reference restricted to the
// same keys agrees.
TEST(LlamaSessionTest, DecodeReadsOnlyTheKeptSet) {
  auto model = RandomLlamaModel(TinyConfig(), 6, 2.0f);
  const std::vector<int32_t> prompt = Ids(12, 50);
  const Generation g = Generate(*model, prompt, 6, "test_last_two", 2);
  EXPECT_DOUBLE_EQ(g.mean_read, 2.0);
  std::vector<int32_t> seq = prompt;
  const int64_t p0 = prompt.size();
  for (size_t i = 0; i + 1 < g.ids.size(); ++i) seq.push_back(g.ids[i]);
  const auto ref =
      testing::ReferenceForward(*model, seq, {}, 1.0, [&](int64_t t, int64_t s) { return t < p0 || s >= t - 1; });
  for (size_t i = 0; i < g.logits.size(); ++i) {
    ExpectClose(g.logits[i], ref[p0 - 1 + i], absl::StrCat("step ", i));
  }
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// Closed loop, the cache rows after the prompt are filled after BeginLayer: Quest must bound a page
// completed during decode from its keys as they are when read, not as they were at BeginLayer (zeros).
// Prompt keys are tiny; page 2 (rows 32..47, generated after BeginLayer) holds one key aligned with the
// query, so it has the best bound and must be read at step 63 (K = 3 pages: the current one plus two).
TEST(LlamaSessionTest, QuestBoundsPagesFilledDuringDecode) {
  const int d = 4;
  const int64_t n = 64, prompt = 32;
  std::vector<float> keys(n * d, 0.0f), values(n * d, 0.0f), queries(n * d, 0.0f);
  for (int64_t i = 0; i < prompt * d; ++i) keys[i] = (i % 3 == 0 ? 0.01f : -0.01f);
  auto policy = CreateTokenPolicy("quest");
  ASSERT_TRUE(policy.ok());
  HeadContext head;
  head.layer = 2;  // Quest keeps layers 0 and 1 dense
  head.num_model_layers = 3;
  head.head_dim = d;
  head.prompt_len = prompt;
  head.seq_len = n;
  head.keys = keys.data();
  head.values = values.data();
  head.queries = queries.data();
  (*policy)->BeginLayer({head}, /*budget_tokens=*/48);
  for (int64_t i = prompt; i < n; ++i) {
    for (int c = 0; c < d; ++c) keys[i * d + c] = 0.001f;
  }
  keys[40 * d] = 5.0f;     // page 2
  queries[63 * d] = 1.0f;  // the step's query points along channel 0
  std::vector<float> probs(n, 1.0f / n);
  LayerStep step;
  step.position = 63;
  step.heads = {HeadStep{probs.data(), n}};
  std::vector<KeptSet> kept(1);
  (*policy)->Step(step, &kept);
  const std::vector<int32_t>& set = kept[0].per_query[0];
  EXPECT_NE(std::find(set.begin(), set.end(), 40), set.end());
  EXPECT_EQ(set.size(), 48u);  // three pages of 16
}

}  // namespace
}  // namespace kvsim
