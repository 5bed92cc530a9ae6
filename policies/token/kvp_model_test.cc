#include "policies/token/kvp_model.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

constexpr int kDim = 6, kHidden = 5;

proto::KvpModel RandomModel(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  proto::KvpModel m;
  m.set_format_version(kKvpFormatVersion);
  m.set_model("test-model");
  m.set_num_layers(4);
  m.set_num_query_heads(4);
  m.set_num_kv_heads(2);
  m.set_head_dim(kDim);
  m.add_layers(1);
  m.add_layers(3);
  m.add_kv_heads(0);
  m.add_kv_heads(1);
  m.mutable_hyperparameters()->set_hidden_units(kHidden);
  m.mutable_hyperparameters()->set_objective("reinforce");
  m.set_seed(seed);
  for (int layer : {1, 3}) {
    for (int head : {0, 1}) {
      KvpMlp mlp;
      mlp.layer = layer;
      mlp.kv_head = head;
      const int dim = KvpInputDim(kDim);
      mlp.input_mean = Eigen::RowVectorXf::NullaryExpr(dim, [&] { return u(rng); });
      mlp.input_std = Eigen::RowVectorXf::NullaryExpr(dim, [&] { return 1.5f + u(rng); });
      mlp.w1 = KvpMatrix::NullaryExpr(kHidden, dim, [&] { return u(rng); });
      mlp.b1 = Eigen::RowVectorXf::NullaryExpr(kHidden, [&] { return u(rng); });
      mlp.w2 = KvpMatrix::NullaryExpr(kHidden, kHidden, [&] { return u(rng); });
      mlp.b2 = Eigen::RowVectorXf::NullaryExpr(kHidden, [&] { return u(rng); });
      mlp.w3 = Eigen::VectorXf::NullaryExpr(kHidden, [&] { return u(rng); });
      mlp.b3 = u(rng);
      proto::KvpAgent* agent = m.add_agents();
      KvpMlpToProto(mlp, agent);
      agent->add_curve()->set_train_reward(0.5);
    }
  }
  return m;
}

AttentionTraceHeader MatchingHeader() {
  AttentionTraceHeader h;
  h.model = "test-model";
  h.num_layers = 4;
  h.num_query_heads = 4;
  h.num_kv_heads = 2;
  h.head_dim = kDim;
  h.kept_layers = {3};
  h.kept_kv_heads = {0, 1};
  return h;
}

TEST(KvpModelTest, RoundTripsBytesAndScores) {
  const proto::KvpModel original = RandomModel(1);
  const std::string bytes = SerializeKvpModel(original);
  EXPECT_EQ(bytes.substr(0, 8), std::string("KVSKVPM\x01", 8));
  auto parsed = ParseKvpModel(bytes, "m.kvpm");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(SerializeKvpModel(parsed->meta), bytes);
  ASSERT_EQ(parsed->agents.size(), 4u);
  // The decoded agent computes relu(relu(z W1^T + b1) W2^T + b2) w3 + b3 on z = (x - mean) / std.
  const proto::KvpAgent& a = original.agents(2);  // layer 3, head 0
  const KvpMlp* mlp = parsed->Agent(3, 0);
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->num_parameters(), kHidden * KvpInputDim(kDim) + kHidden + kHidden * kHidden + kHidden + kHidden + 1);
  std::vector<float> keys(3 * kDim), values(3 * kDim);
  for (int i = 0; i < 3 * kDim; ++i) {
    keys[i] = 0.1f * i - 0.5f;
    values[i] = 0.3f - 0.05f * i;
  }
  KvpMatrix x;
  KvpFeatures(keys.data(), values.data(), 3, kDim, &x);
  Eigen::VectorXf scores;
  mlp->Forward(x, &scores);
  const int dim = KvpInputDim(kDim);
  for (int t = 0; t < 3; ++t) {
    // The features of token t of 3: key, value, t / 3, log(1 + t), log(3 - t).
    std::vector<double> feat(dim);
    for (int c = 0; c < kDim; ++c) {
      feat[c] = keys[t * kDim + c];
      feat[kDim + c] = values[t * kDim + c];
    }
    feat[2 * kDim] = t / 3.0;
    feat[2 * kDim + 1] = std::log(1.0 + t);
    feat[2 * kDim + 2] = std::log(3.0 - t);
    std::vector<double> z(dim), h1(kHidden), h2(kHidden);
    for (int c = 0; c < dim; ++c) z[c] = (feat[c] - a.input_mean(c)) / a.input_std(c);
    for (int o = 0; o < kHidden; ++o) {
      double s = a.b1(o);
      for (int c = 0; c < dim; ++c) s += a.w1(o * dim + c) * z[c];
      h1[o] = std::max(0.0, s);
    }
    for (int o = 0; o < kHidden; ++o) {
      double s = a.b2(o);
      for (int c = 0; c < kHidden; ++c) s += a.w2(o * kHidden + c) * h1[c];
      h2[o] = std::max(0.0, s);
    }
    double s = a.b3();
    for (int c = 0; c < kHidden; ++c) s += a.w3(c) * h2[c];
    EXPECT_NEAR(scores[t], s, 1e-4) << "token " << t;
  }
}

TEST(KvpModelTest, RefusesBadFiles) {
  const std::string bytes = SerializeKvpModel(RandomModel(2));
  auto bad_magic = ParseKvpModel("KVSATTN\x01" + bytes.substr(8), "x.kvpm");
  EXPECT_NE(bad_magic.status().message().find("x.kvpm: not a KVP model file"), std::string::npos) << bad_magic.status();
  auto truncated = ParseKvpModel(bytes.substr(0, bytes.size() / 2), "x.kvpm");
  EXPECT_FALSE(truncated.ok());
  proto::KvpModel v2 = RandomModel(2);
  v2.set_format_version(2);
  auto version = ParseKvpModel(SerializeKvpModel(v2), "x.kvpm");
  EXPECT_NE(version.status().message().find("format_version 2"), std::string::npos) << version.status();
  proto::KvpModel short_w1 = RandomModel(2);
  short_w1.mutable_agents(1)->mutable_w1()->RemoveLast();
  auto size = ParseKvpModel(SerializeKvpModel(short_w1), "x.kvpm");
  EXPECT_NE(size.status().message().find("agent (layer 1, KV head 1): field w1 has"), std::string::npos)
      << size.status();
  proto::KvpModel zero_std = RandomModel(2);
  zero_std.mutable_agents(0)->set_input_std(3, 0.0f);
  EXPECT_FALSE(ParseKvpModel(SerializeKvpModel(zero_std), "x.kvpm").ok());
  proto::KvpModel missing = RandomModel(2);
  missing.mutable_agents()->RemoveLast();
  EXPECT_FALSE(ParseKvpModel(SerializeKvpModel(missing), "x.kvpm").ok());
}

TEST(KvpModelTest, LayoutCheckNamesBothSides) {
  auto model = ParseKvpModel(SerializeKvpModel(RandomModel(3)), "m.kvpm");
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE(CheckKvpLayout(*model, "m.kvpm", MatchingHeader(), "t.kvat").ok());
  AttentionTraceHeader other = MatchingHeader();
  other.head_dim = 8;
  other.model = "other-model";
  auto status = CheckKvpLayout(*model, "m.kvpm", other, "t.kvat");
  EXPECT_NE(status.message().find("KVP model m.kvpm was trained for model 'test-model', 4 layers, 4 query heads, "
                                  "2 KV heads, head_dim 6; the trace t.kvat has model 'other-model', 4 layers, 4 "
                                  "query heads, 2 KV heads, head_dim 8"),
            std::string::npos)
      << status;
  AttentionTraceHeader layer2 = MatchingHeader();
  layer2.kept_layers = {2};
  status = CheckKvpLayout(*model, "m.kvpm", layer2, "t.kvat");
  EXPECT_NE(status.message().find("has no agent for layer 2, KV head 0"), std::string::npos) << status;
}

}  // namespace
}  // namespace kvsim
