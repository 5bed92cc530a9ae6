#include "sim/eval/llama_config.h"

#include <cmath>

#include "gtest/gtest.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

const char* kLlama3 = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 259,
  "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096, "tie_word_embeddings": false,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 1000}, "torch_dtype": "bfloat16"})";

TEST(LlamaConfigTest, ParsesLlama3) {
  auto c = ParseLlamaConfig(kLlama3, "config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->group_size(), 2);
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::kLlama3);
  EXPECT_FALSE(c->attention_bias);
  // Round trip through LlamaConfigJson.
  auto again = ParseLlamaConfig(LlamaConfigJson(*c), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->rope_scaling.original_max_position_embeddings, 1000);
  EXPECT_EQ(again->num_kv_heads, 2);
}

// The written config.json is JSON with every number exact (a factor with more than six significant digits
// survives), the scaling as an object, and reads back to the same values.
TEST(LlamaConfigTest, WrittenConfigIsJsonWithExactNumbers) {
  auto c = ParseLlamaConfig(kLlama3, "config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  c->rope_scaling.factor = 8.123456789;
  c->rms_norm_eps = 1.23456789e-6;
  c->architecture = "LlamaForCausalLM";
  const Json json = Json::parse(LlamaConfigJson(*c));
  EXPECT_EQ(json["architectures"], Json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(json["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(json["rope_scaling"]["factor"], 8.123456789);
  EXPECT_EQ(json["rope_scaling"]["original_max_position_embeddings"], 1000);
  EXPECT_FALSE(json["rope_scaling"].contains("beta_fast"));  // yarn's keys only for yarn
  auto again = ParseLlamaConfig(json.dump(), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->rope_scaling.factor, 8.123456789);
  EXPECT_EQ(again->rms_norm_eps, 1.23456789e-6);
  c->rope_scaling = {};  // no scaling: null, as transformers writes it
  EXPECT_TRUE(Json::parse(LlamaConfigJson(*c))["rope_scaling"].is_null());
}

// inv_freq by hand for head_dim 4, base 10000: [1, 0.01]. Llama3 with original length 1000 (low-frequency
// wavelength 1000, high-frequency 250): wavelength 2 pi stays; 200 pi = 628.3 is between, smoothed with
// s = (1000 / 628.3 - 1) / 3 = 0.197184: (1 - s) * 0.01 / 8 + s * 0.01 = 0.00297535.
TEST(LlamaConfigTest, RotaryFrequenciesByHand) {
  LlamaConfig c;
  c.head_dim = 4;
  c.rope_theta = 10000;
  c.max_position_embeddings = 100;
  auto f = RopeFrequenciesAt(c, 10);
  ASSERT_EQ(f.inv_freq.size(), 2u);
  EXPECT_FLOAT_EQ(f.inv_freq[0], 1.0f);
  EXPECT_FLOAT_EQ(f.inv_freq[1], 0.01f);
  c.rope_scaling.type = RopeScaling::kLlama3;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position_embeddings = 1000;
  f = RopeFrequenciesAt(c, 10);
  EXPECT_FLOAT_EQ(f.inv_freq[0], 1.0f);
  EXPECT_NEAR(f.inv_freq[1], 0.00297535, 1e-8);
  c.rope_scaling.type = RopeScaling::kLinear;
  c.rope_scaling.factor = 4;
  EXPECT_FLOAT_EQ(RopeFrequenciesAt(c, 10).inv_freq[1], 0.0025f);
  // Dynamic NTK at seq_len 200 > 100, factor 2: base 10000 * (2 * 2 - 1)^(4/2) = 90000; inv_freq[1] = 1/300.
  c.rope_scaling.type = RopeScaling::kDynamic;
  c.rope_scaling.factor = 2;
  EXPECT_FLOAT_EQ(RopeFrequenciesAt(c, 50).inv_freq[1], 0.01f);
  EXPECT_NEAR(RopeFrequenciesAt(c, 200).inv_freq[1], 1.0 / 300, 1e-8);
  // YaRN, factor 4, original 100: attention scaling 0.1 ln 4 + 1 = 1.138629. Correction range for
  // d = 4, base 1e4: dims 4 ln(100 / (2 pi r)) / (2 ln 1e4): r = 32 -> -0.1517 (floor -1 -> 0), r = 1 ->
  // 0.6009 (ceil 1). Ramp (i - 0) / 1 clamped: channel 0 -> 0 (extrapolated: 1), channel 1 -> 1
  // (interpolated: 0.01 / 4).
  c.rope_scaling.type = RopeScaling::kYarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling.original_max_position_embeddings = 100;
  f = RopeFrequenciesAt(c, 10);
  EXPECT_NEAR(f.attention_scaling, 1.138629, 1e-6);
  EXPECT_FLOAT_EQ(f.inv_freq[0], 1.0f);
  EXPECT_FLOAT_EQ(f.inv_freq[1], 0.0025f);
}

TEST(LlamaConfigTest, RefusesBadConfigs) {
  auto error = [](const std::string& text) { return std::string(ParseLlamaConfig(text, "c.json").status().message()); };
  const std::string base = kLlama3;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_NE(error(with("LlamaForCausalLM", "GPT2LMHeadModel")).find("'GPT2LMHeadModel' is not supported"),
            std::string::npos);
  EXPECT_NE(error(with("\"hidden_size\": 64,", "")).find("c.json: \"hidden_size\" is missing"), std::string::npos);
  EXPECT_NE(error(with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")).find("does not divide"),
            std::string::npos);
  EXPECT_NE(error(with("\"llama3\"", "\"longrope\"")).find("'longrope' is not supported"), std::string::npos);
  EXPECT_NE(error(with("\"low_freq_factor\": 1.0,", "")).find("\"low_freq_factor\" is missing"), std::string::npos);
  EXPECT_NE(error(with("\"vocab_size\": 259", "\"vocab_size\": -1")).find("must be an integer"), std::string::npos);
  EXPECT_NE(error(with("\"model_type\"", "\"hidden_act\": \"gelu\", \"model_type\"")).find("'gelu'"),
            std::string::npos);
  EXPECT_NE(error("[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error("{").find("not valid JSON"), std::string::npos);
  // Qwen2 always has q/k/v biases.
  auto qwen = ParseLlamaConfig(with("LlamaForCausalLM", "Qwen2ForCausalLM"), "q.json");
  ASSERT_TRUE(qwen.ok());
  EXPECT_TRUE(qwen->attention_bias);
}

}  // namespace
}  // namespace kvsim
