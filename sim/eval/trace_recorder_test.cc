#include "sim/eval/trace_recorder.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/eval/llama_session.h"
#include "sim/eval/testing/tiny_llama.h"
#include "sim/quality/quality_evaluator.h"
#include "traces/attention/attention_trace_io.h"

namespace kvsim {
namespace {

LlamaConfig Config() { return testing::TinyLlamaConfig(/*num_layers=*/3, /*vocab_size=*/50); }

TEST(TraceRecorderTest, RecordsKeysTokensAndRoundTrips) {
  auto model = RandomLlamaModel(Config(), 5, 2.0f);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back((i * 17 + 3) % 50);
  TraceRecordOptions options;
  options.layers = {0, 2};
  options.decode_steps = 6;
  options.query_window = 8;
  options.dtype = AttentionDType::kFloat32;
  auto sample = RecordAttentionSample(*model, prompt, options);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->prompt_len, 20);
  EXPECT_EQ(sample->query_start, 12);
  ASSERT_EQ(sample->heads.size(), 4u);  // layers 0, 2 x KV heads 0, 1
  EXPECT_EQ(sample->heads[2].layer, 2);
  EXPECT_EQ(sample->heads[3].kv_head, 1);
  // Tokens: the prompt, then the greedy continuation fed at the decode steps (an independent session).
  std::vector<int32_t> want = prompt;
  for (int32_t id : testing::GreedyIds(*model, prompt, 6)) want.push_back(id);
  EXPECT_EQ(sample->token_ids, want);
  // One boundary, the prompt's start, as tools/record_attention.py stores for a prompt that names none.
  EXPECT_EQ(sample->boundaries, std::vector<int64_t>{0});
  // Layer 0 keys by hand, in double: RoPE(Wk . RMSNorm(embed[token]) * w) at each position.
  const LlamaConfig& c = model->config;
  for (int64_t pos = 0; pos < 26; ++pos) {
    const float* e = model->embed.data() + want[pos] * c.hidden_size;
    double ms = 0;
    for (int i = 0; i < c.hidden_size; ++i) ms += double(e[i]) * e[i];
    const double r = 1 / std::sqrt(ms / c.hidden_size + c.rms_norm_eps);
    for (int h = 0; h < 2; ++h) {
      std::vector<double> k(8, 0.0);
      for (int o = 0; o < 8; ++o) {
        for (int i = 0; i < c.hidden_size; ++i) {
          k[o] +=
              double(model->layers[0].wk[(h * 8 + o) * c.hidden_size + i]) * e[i] * r * model->layers[0].input_norm[i];
        }
      }
      for (int i = 0; i < 4; ++i) {
        const double angle = pos / std::pow(10000.0, 2.0 * i / 8);
        const double a = k[i], b = k[i + 4];
        EXPECT_NEAR(sample->heads[h].keys[pos * 8 + i], a * std::cos(angle) - b * std::sin(angle), 1e-4);
        EXPECT_NEAR(sample->heads[h].keys[pos * 8 + i + 4], b * std::cos(angle) + a * std::sin(angle), 1e-4);
      }
    }
  }
  // Layer 0 queries by hand likewise, for query head 3 (KV head 1, member 1) at the first stored prompt
  // position (12) and the last decode step (25): rows (1 * (26 - 12) + p - 12) of the head's queries.
  for (int64_t pos : {12, 25}) {
    const float* e = model->embed.data() + want[pos] * c.hidden_size;
    double ms = 0;
    for (int i = 0; i < c.hidden_size; ++i) ms += double(e[i]) * e[i];
    const double r = 1 / std::sqrt(ms / c.hidden_size + c.rms_norm_eps);
    std::vector<double> q(8, 0.0);
    for (int o = 0; o < 8; ++o) {
      for (int i = 0; i < c.hidden_size; ++i) {
        q[o] +=
            double(model->layers[0].wq[(3 * 8 + o) * c.hidden_size + i]) * e[i] * r * model->layers[0].input_norm[i];
      }
    }
    const float* row = sample->heads[1].queries.data() + (1 * (26 - 12) + pos - 12) * 8;
    for (int i = 0; i < 4; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / 8);
      EXPECT_NEAR(row[i], q[i] * std::cos(angle) - q[i + 4] * std::sin(angle), 1e-4) << pos;
      EXPECT_NEAR(row[i + 4], q[i + 4] * std::cos(angle) + q[i] * std::sin(angle), 1e-4) << pos;
    }
  }
  // Column sums: each prompt query's attention sums to 1, so each member's sums total prompt_len.
  double total = 0;
  for (int i = 0; i < 20; ++i) total += sample->heads[1].column_sums[i];
  EXPECT_NEAR(total, 20, 1e-4);
  // Write, read back: the same tensors; and the open-loop evaluator reads it (full keeps everything).
  auto header = TraceHeaderFor(*model, options);
  ASSERT_TRUE(header.ok());
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/t.kvat");
  auto writer = AttentionTraceWriter::Create(path, *header);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Append(*sample).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto back = (*reader)->ReadSample(0);
  ASSERT_TRUE(back.ok());
  for (size_t h = 0; h < 4; ++h) {
    EXPECT_EQ(back->heads[h].keys, sample->heads[h].keys);
    EXPECT_EQ(back->heads[h].queries, sample->heads[h].queries);
    EXPECT_EQ(back->heads[h].values, sample->heads[h].values);
  }
  QualityOptions quality;
  quality.policies = {"full"};
  quality.budget_tokens = {4};
  auto evaluator = QualityEvaluator::Create((*reader)->header(), quality);
  ASSERT_TRUE(evaluator.ok());
  ASSERT_TRUE((*evaluator)->AddSample(*back).ok());
  const QualityResults results = (*evaluator)->Finish();
  EXPECT_NEAR(results.points[0].recall.mean, 1.0, 1e-6);
  EXPECT_EQ(results.num_decode_steps, 6);
}

TEST(TraceRecorderTest, RefusesBadOptions) {
  auto model = RandomLlamaModel(Config(), 5);
  TraceRecordOptions options;
  options.layers = {2, 1};
  EXPECT_NE(TraceHeaderFor(*model, options).status().message().find("layers must be ascending"), std::string::npos);
  options.layers = {};
  options.kv_heads = {2};
  EXPECT_NE(
      TraceHeaderFor(*model, options).status().message().find("kv_heads must be ascending, distinct and in [0, 2)"),
      std::string::npos);
  options.kv_heads = {};
  options.decode_steps = -1;
  EXPECT_FALSE(RecordAttentionSample(*model, {1, 2}, options).ok());
}

}  // namespace
}  // namespace kvsim
