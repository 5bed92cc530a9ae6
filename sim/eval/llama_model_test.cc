#include "sim/eval/llama_model.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/eval/safetensors.h"
#include "util/file.h"

namespace kvsim {
namespace {

LlamaConfig Config() {
  LlamaConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_layers = 2;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 4;
  c.vocab_size = 10;
  c.max_position_embeddings = 64;
  return c;
}

std::string TempDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(LlamaModelTest, WritesAndLoadsEveryDtype) {
  for (const char* dtype : {"F32", "F16", "BF16"}) {
    for (bool qwen : {false, true}) {
      LlamaConfig c = Config();
      if (qwen) {
        c.architecture = "Qwen2ForCausalLM";
        c.attention_bias = true;
        c.tie_word_embeddings = true;
      }
      auto model = RandomLlamaModel(c, 3);
      const std::string dir = TempDir(absl::StrCat("m", dtype, qwen));
      ASSERT_TRUE(WriteLlamaModelFolder(*model, dir, dtype).ok());
      auto loaded = LoadLlamaModel(dir);
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      EXPECT_EQ((*loaded)->NumParameters(), model->NumParameters());
      EXPECT_EQ((*loaded)->lm_head.empty(), qwen);
      EXPECT_EQ((*loaded)->layers[1].bk.size(), qwen ? 4u : 0u);
      const float tolerance = std::string(dtype) == "F32" ? 0 : std::string(dtype) == "F16" ? 1e-3 : 1e-2;
      for (size_t i = 0; i < model->layers[1].down.size(); ++i) {
        ASSERT_NEAR((*loaded)->layers[1].down[i], model->layers[1].down[i], tolerance) << dtype;
      }
    }
  }
  // Parameters by hand: embed 80 + lm_head 80 + norm 8 + per layer: norms 2 x 8, q 8 x 8, k and v 4 x 8,
  // o 8 x 8, MLP 3 x 12 x 8 = 496.
  EXPECT_EQ(RandomLlamaModel(Config(), 1)->NumParameters(), 80 + 80 + 8 + 2 * 496);
}

TEST(LlamaModelTest, RefusesBadFolders) {
  auto model = RandomLlamaModel(Config(), 3);
  std::map<std::string, FloatTensor> tensors = LlamaModelTensors(*model);
  const std::string dir = TempDir("bad");
  ASSERT_TRUE(WriteLlamaModelFolder(*model, dir, "F32").ok());
  const std::string file = dir + "/model.safetensors";
  auto error = [&](std::map<std::string, FloatTensor> t) {
    EXPECT_TRUE(WriteFileAtomically(file, EncodeSafetensors(t, "F32")).ok());
    return std::string(LoadLlamaModel(dir).status().message());
  };
  auto missing = tensors;
  missing.erase("model.layers.1.mlp.up_proj.weight");
  EXPECT_NE(error(missing).find("tensor 'model.layers.1.mlp.up_proj.weight' not found (expected shape [12, 8])"),
            std::string::npos);
  auto no_head = tensors;
  no_head.erase("lm_head.weight");
  EXPECT_NE(error(no_head).find("'lm_head.weight' not found"), std::string::npos);
  auto wrong = tensors;
  wrong["model.norm.weight"].shape = {2, 4};
  EXPECT_NE(error(wrong).find("model.safetensors: tensor 'model.norm.weight' has shape [2, 4], expected [8]"),
            std::string::npos);
  // Truncated: the last bytes cut off.
  const std::string bytes = EncodeSafetensors(tensors, "F32");
  ASSERT_TRUE(WriteFileAtomically(file, bytes.substr(0, bytes.size() - 3)).ok());
  EXPECT_NE(std::string(LoadLlamaModel(dir).status().message()).find("(truncated file?)"), std::string::npos);
  // Unsupported dtype for a needed tensor.
  std::string i8 = EncodeSafetensors({{"model.embed_tokens.weight", {{10, 8}, std::vector<float>(80)}}}, "F16");
  // Rewrite the dtype in the header (same length: "F16" -> "I16").
  i8.replace(i8.find("\"F16\""), 5, "\"I16\"");
  std::filesystem::remove(file);
  ASSERT_TRUE(WriteFileAtomically(dir + "/x.safetensors", i8).ok());
  EXPECT_NE(std::string(LoadLlamaModel(dir).status().message())
                .find("tensor 'model.embed_tokens.weight' has dtype I16; supported: F32, F16, BF16"),
            std::string::npos);
  // Unsupported architecture.
  ASSERT_TRUE(WriteFileAtomically(dir + "/config.json", R"({"architectures": ["BertModel"]})").ok());
  EXPECT_NE(std::string(LoadLlamaModel(dir).status().message()).find("'BertModel' is not supported"),
            std::string::npos);
  EXPECT_FALSE(LoadLlamaModel(TempDir("nothing")).ok());
}

}  // namespace
}  // namespace kvsim
