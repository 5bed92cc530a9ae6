// The forward pass against the PyTorch reference (tools/llama_torch.py) of the model folders in
// sim/eval/testdata/: every stored logit within 1e-4 of the reference relative to its row's largest
// magnitude, and the 64-token greedy generations identical. Folders with random weights (Llama-3 rotary
// scaling, Qwen2 biases and tied embeddings, Mistral, dynamic NTK and YaRN rotary) in bf16, fp16 and fp32,
// and the small byte-level model trained by tools/train_small_model.py (sim/eval/models/kvsim-tiny).
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/eval/llama_model.h"
#include "sim/eval/llama_session.h"
#include "simdjson.h"
#include "util/file.h"

namespace kvsim {
namespace {

std::vector<int32_t> IdList(simdjson::dom::element e) {
  std::vector<int32_t> ids;
  for (simdjson::dom::element x : e.get_array()) ids.push_back(static_cast<int32_t>(int64_t(x)));
  return ids;
}

std::vector<std::vector<double>> Rows(simdjson::dom::element e) {
  std::vector<std::vector<double>> rows;
  for (simdjson::dom::element row : e.get_array()) {
    rows.emplace_back();
    for (simdjson::dom::element x : row.get_array()) rows.back().push_back(double(x));
  }
  return rows;
}

double MaxRelativeError(const float* got, const std::vector<double>& want) {
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst / std::max(scale, 1e-30);
}

void CheckCase(const LlamaModel& model, simdjson::dom::element c, const std::string& what) {
  const std::vector<int32_t> prompt = IdList(c["prompt_ids"]);
  const std::vector<int32_t> greedy = IdList(c["greedy_ids"]);
  const int64_t start = int64_t(c["logits_start"]);
  const int v = model.config.vocab_size;
  LlamaSession session(model, prompt.size() + greedy.size());
  auto logits = session.Prefill(prompt, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << what << ": " << logits.status();
  const auto ref = Rows(c["logits"]);
  ASSERT_EQ(static_cast<int64_t>(ref.size()), static_cast<int64_t>(prompt.size()) - start) << what;
  for (size_t r = 0; r < ref.size(); ++r) {
    ASSERT_EQ(ref[r].size(), static_cast<size_t>(v));
    EXPECT_LE(MaxRelativeError(logits->data() + (start + r) * v, ref[r]), 1e-4) << what << " position " << start + r;
  }
  // Greedy generation through the KV cache; the first decode_logits steps' logits are compared too.
  const auto decode_ref = Rows(c["decode_logits"]);
  std::vector<float> last(logits->end() - v, logits->end());
  std::vector<int32_t> generated;
  for (size_t t = 0; t < greedy.size(); ++t) {
    if (t < decode_ref.size()) {
      EXPECT_LE(MaxRelativeError(last.data(), decode_ref[t]), 1e-4) << what << " greedy step " << t;
    }
    generated.push_back(ArgMax(last));
    if (t + 1 < greedy.size()) {
      auto next = session.Decode(generated.back());
      ASSERT_TRUE(next.ok()) << next.status();
      last = *next;
    }
  }
  EXPECT_EQ(generated, greedy) << what;
}

class ReferenceLogitsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceLogitsTest, MatchesPyTorch) {
  const std::string dir = absl::StrCat("sim/eval/", GetParam());
  auto model = LoadLlamaModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  auto text = ReadFile(dir + "/reference.json");
  ASSERT_TRUE(text.ok()) << text.status();
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(simdjson::padded_string(*text));
  EXPECT_EQ(int64_t(root["vocab_size"]), (*model)->config.vocab_size);
  CheckCase(**model, root, GetParam());
  int n = 0;
  for (simdjson::dom::element c : root["cases"].get_array())
    CheckCase(**model, c, absl::StrCat(GetParam(), " case ", n++));
}

INSTANTIATE_TEST_SUITE_P(Folders, ReferenceLogitsTest,
                         ::testing::Values("testdata/tiny-llama3", "testdata/tiny-qwen2", "testdata/tiny-linear",
                                           "testdata/tiny-dynamic", "testdata/tiny-yarn", "models/kvsim-tiny"));

}  // namespace
}  // namespace kvsim
