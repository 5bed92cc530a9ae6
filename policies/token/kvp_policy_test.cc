#include "policies/token/kvp_policy.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"
#include "util/file.h"

namespace kvsim {
namespace {

constexpr int kDim = 4;

// A one-unit model whose score is relu(k_0): standardisation off (mean 0, std 1), W1 picks key channel 0.
proto::KvpModel KeyChannelModel() {
  proto::KvpModel m;
  m.set_format_version(kKvpFormatVersion);
  m.set_model("tiny");
  m.set_num_layers(1);
  m.set_num_query_heads(1);
  m.set_num_kv_heads(1);
  m.set_head_dim(kDim);
  m.add_layers(0);
  m.add_kv_heads(0);
  m.mutable_hyperparameters()->set_hidden_units(1);
  KvpMlp mlp;
  const int dim = KvpInputDim(kDim);
  mlp.input_mean = Eigen::RowVectorXf::Zero(dim);
  mlp.input_std = Eigen::RowVectorXf::Ones(dim);
  mlp.w1 = KvpMatrix::Zero(1, dim);
  mlp.w1(0, 0) = 1;
  mlp.b1 = Eigen::RowVectorXf::Zero(1);
  mlp.w2 = KvpMatrix::Ones(1, 1);
  mlp.b2 = Eigen::RowVectorXf::Zero(1);
  mlp.w3 = Eigen::VectorXf::Ones(1);
  KvpMlpToProto(mlp, m.add_agents());
  return m;
}

std::string WriteModel(const proto::KvpModel& m, const std::string& name) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  EXPECT_TRUE(SaveKvpModel(path, m).ok());
  return path;
}

// A head of `prompt` tokens + `steps` decode steps whose key channel 0 is a fixed shuffle of 1..prompt.
TestHead MakeHead(int64_t prompt, int64_t steps, std::vector<float>* key0) {
  TestHead h;
  h.head_dim = kDim;
  h.prompt_len = prompt;
  h.seq_len = prompt + steps;
  h.query_start = prompt;
  h.keys.assign(h.seq_len * kDim, 0.0f);
  h.values.assign(h.seq_len * kDim, 0.5f);
  h.queries.assign(steps * kDim, 0.1f);
  key0->resize(h.seq_len);
  for (int64_t i = 0; i < h.seq_len; ++i) {
    (*key0)[i] = static_cast<float>((i * 37) % h.seq_len + 1);
    h.keys[i * kDim] = (*key0)[i];
  }
  return h;
}

TEST(KvpPolicyTest, KeepsExactlyItsBudgetWithTheProtectedTokensAndTheBestScores) {
  const std::string path = WriteModel(KeyChannelModel(), "key0.kvpm");
  auto policy = CreateTokenPolicy("kvp:model=" + path);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "kvp:model=" + path);
  EXPECT_EQ((*policy)->kind(), TokenPolicy::Kind::kEvict);
  std::vector<float> key0;
  const int64_t prompt = 100, steps = 12;
  TestHead head = MakeHead(prompt, steps, &key0);
  for (int64_t budget : {21, 30, 50, 120}) {
    auto kept = RunPolicy(**policy, {&head}, budget);
    ASSERT_EQ(kept.size(), static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t p = prompt + s, decoded = s + 1;
      const std::vector<int32_t>& set = kept[s][0][0];
      ASSERT_EQ(static_cast<int64_t>(set.size()), std::min(budget, p + 1)) << "budget " << budget << " step " << s;
      // The 4 first and 16 last prompt tokens, the decode tokens from the newest (at budgets 21 and 30 the
      // oldest go once the budget is full), then the prompt tokens with the largest k_0.
      std::vector<int32_t> want;
      for (int32_t i = 0; i < 4; ++i) want.push_back(i);
      for (int32_t i = prompt - 16; i < prompt; ++i) want.push_back(i);
      const int64_t decode_kept = std::min<int64_t>(decoded, std::min(budget, p + 1) - 20);
      for (int64_t i = p - decode_kept + 1; i <= p; ++i) want.push_back(static_cast<int32_t>(i));
      std::vector<int32_t> middle(prompt - 20);
      std::iota(middle.begin(), middle.end(), 4);
      std::stable_sort(middle.begin(), middle.end(), [&](int32_t a, int32_t b) { return key0[a] > key0[b]; });
      const int64_t room = std::min<int64_t>(budget, p + 1) - 20 - decode_kept;
      for (int64_t r = 0; r < room; ++r) want.push_back(middle[r]);
      std::sort(want.begin(), want.end());
      EXPECT_EQ(set, want) << "budget " << budget << " step " << s;
    }
  }
}

TEST(KvpPolicyTest, RefusesBadSpecsAndTracesOfAnotherLayout) {
  const std::string path = WriteModel(KeyChannelModel(), "key0b.kvpm");
  auto no_model = CreateTokenPolicy("kvp");
  EXPECT_NE(no_model.status().message().find("kvp:model=FILE"), std::string::npos) << no_model.status();
  EXPECT_EQ(CreateTokenPolicy("kvp:model=/nonexistent/m.kvpm").status().code(), absl::StatusCode::kNotFound);
  auto unknown = CreateTokenPolicy("kvp:model=" + path + ":depth=3");
  EXPECT_NE(unknown.status().message().find("unknown parameter 'depth'"), std::string::npos) << unknown.status();
  EXPECT_FALSE(CreateTokenPolicy("kvp:model").ok());
  EXPECT_FALSE(CreateTokenPolicy("kvp:model=a:model=b").ok());
  auto plain = CreateTokenPolicy("knorm:x=1");
  EXPECT_NE(plain.status().message().find("'knorm' takes no parameters"), std::string::npos) << plain.status();
  const std::string not_a_model = std::string(getenv("TEST_TMPDIR")) + "/junk.kvpm";
  ASSERT_TRUE(WriteFileAtomically(not_a_model, "hello").ok());
  EXPECT_NE(CreateTokenPolicy("kvp:model=" + not_a_model).status().message().find("not a KVP model file"),
            std::string::npos);

  auto policy = CreateTokenPolicy("kvp:model=" + path);
  ASSERT_TRUE(policy.ok());
  AttentionTraceHeader header;
  header.model = "tiny";
  header.num_layers = 1;
  header.num_query_heads = 1;
  header.num_kv_heads = 1;
  header.head_dim = kDim;
  header.kept_layers = {0};
  header.kept_kv_heads = {0};
  EXPECT_TRUE((*policy)->CheckTrace(header).ok());
  header.head_dim = 8;
  auto status = (*policy)->CheckTrace(header);
  EXPECT_NE(status.message().find(path + " was trained for model 'tiny'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("head_dim 8"), std::string::npos) << status;
  // A wrapper passes the check on: kivi4+kvp refuses the same trace.
  for (const char* wrapper : {"kivi4+"}) {
    auto wrapped = CreateTokenPolicy(std::string(wrapper) + "kvp:model=" + path);
    ASSERT_TRUE(wrapped.ok()) << wrapped.status();
    EXPECT_FALSE((*wrapped)->CheckTrace(header).ok()) << wrapper;
  }
}

}  // namespace
}  // namespace kvsim
