#include "sim/select/candidate_cost.h"

#include <memory>

#include "config/experiment_config.h"
#include "config/kv_format.h"
#include "cost_models/peak_memory.h"
#include "cost_models/roofline.h"
#include "gtest/gtest.h"
#include "sim/select/candidates.h"
#include "sim/select/select_test_util.h"

namespace kvsim {
namespace {

proto::SelectCandidate Named(const std::string& name) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  return set.candidate(CandidateIndex(set, name));
}

// The reference: the same shapes asked of a roofline built directly from the config the candidate implies,
// and of EstimatePeakMemory, with the step loop written out here.
int64_t ReferenceLatencyNs(const proto::ExperimentConfig& config, int64_t input, int64_t output,
                           const std::function<int64_t(int64_t)>& read_tokens, int64_t overhead_queries) {
  std::unique_ptr<RooflineCostModel> roofline = *RooflineCostModel::Create(config);
  BatchShape prefill;
  prefill.sequences.push_back({.context_tokens = 0, .new_tokens = input});
  int64_t ns = *roofline->IterationTimeNs(prefill);
  if (overhead_queries > 0) {
    ns += std::llround(
        roofline->AttentionSeconds({.context_tokens = input - overhead_queries, .new_tokens = overhead_queries}) *
        config.model().num_layers() * 1e9);
  }
  for (int64_t j = 1; j < output; ++j) {
    BatchShape decode;
    decode.sequences.push_back({.context_tokens = read_tokens(j), .new_tokens = 1});
    ns += *roofline->IterationTimeNs(decode);
  }
  return ns;
}

TEST(CandidateCostTest, Fp16EqualsTheCostModelForTheSameShapes) {
  const proto::ExperimentConfig base = DefaultSelectConfig();
  auto model = *CandidateCostModel::Create(base, Named("fp16"));
  const int64_t input = 3000, output = 40;
  absl::StatusOr<CandidateCost> cost = model->Cost(input, output);
  ASSERT_TRUE(cost.ok()) << cost.status();
  proto::ExperimentConfig config = base;
  config.mutable_model()->set_kv_dtype(proto::DTYPE_FP16);
  config.mutable_scheduler()->set_max_num_seqs(1);
  EXPECT_EQ(cost->latency_ns, ReferenceLatencyNs(
                                  config, input, output, [&](int64_t j) { return input + j - 1; }, 0));
  EXPECT_EQ(cost->overhead_ns, 0);
  config.mutable_scheduler()->set_max_num_batched_tokens(input);
  const PeakMemory peak = *EstimatePeakMemory(config, input + output - 1);
  EXPECT_EQ(cost->memory.total_bytes, peak.total_bytes);
  EXPECT_EQ(cost->peak_kv_tokens, input + output - 1);
  EXPECT_DOUBLE_EQ(cost->latency_ms, cost->latency_ns / 1e6);
  EXPECT_DOUBLE_EQ(cost->peak_memory_mb, peak.total_bytes / 1048576.0);
  // By hand for the KV term: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131072 bytes per token.
  EXPECT_EQ(cost->memory.kv_bytes, (input + output - 1) * 131072);
}

TEST(CandidateCostTest, KvQuantOutliersAreChargedAsScaleBytes) {
  const proto::ExperimentConfig base = DefaultSelectConfig();
  auto model = *CandidateCostModel::Create(base, Named("kvquant-2b-1%"));
  const CandidateCost cost = *model->Cost(2000, 10);
  proto::ExperimentConfig config = base;
  config.mutable_cost_model()->set_kv_quant_bits(2);
  config.mutable_cost_model()->set_kv_quant_group_size(128);
  // 4 bytes of scale and zero + ceil(0.01 x 128 x 6 = 7.68) = 8 bytes of outliers per 128 elements.
  config.mutable_cost_model()->set_kv_scale_bytes_per_group(12);
  config.mutable_scheduler()->set_max_num_seqs(1);
  EXPECT_EQ(cost.latency_ns, ReferenceLatencyNs(
                                 config, 2000, 10, [](int64_t j) { return 2000 + j - 1; }, 0));
  config.mutable_scheduler()->set_max_num_batched_tokens(2000);
  EXPECT_EQ(cost.memory.total_bytes, EstimatePeakMemory(config, 2009)->total_bytes);
  // 2 x 32 x 8 x 128 elements x (0.25 + 12 / 128) bytes per token.
  EXPECT_EQ(cost.memory.kv_bytes, static_cast<int64_t>(std::ceil(2009 * 65536 * (0.25 + 12.0 / 128))));
  auto fp16 = *CandidateCostModel::Create(base, Named("fp16"));
  EXPECT_LT(cost.memory.total_bytes, fp16->Cost(2000, 10)->memory.total_bytes);
}

TEST(CandidateCostTest, H2oReadsAndHoldsTheBudgetAndPaysAPromptAttentionPass) {
  const proto::ExperimentConfig base = DefaultSelectConfig();
  auto model = *CandidateCostModel::Create(base, Named("h2o-25%"));
  const int64_t input = 4000, output = 30, budget = 1000;
  EXPECT_EQ(model->ReadTokens(input, 1), budget);
  EXPECT_EQ(model->ReadTokens(input, 29), budget);
  EXPECT_EQ(model->OverheadQueries(input), input);
  // Short prompts are never cut below their length.
  EXPECT_EQ(model->ReadTokens(100, 1), 25);
  const CandidateCost cost = *model->Cost(input, output);
  proto::ExperimentConfig config = base;
  config.mutable_scheduler()->set_max_num_seqs(1);
  EXPECT_EQ(cost.latency_ns, ReferenceLatencyNs(
                                 config, input, output, [&](int64_t) { return budget; }, input));
  EXPECT_GT(cost.overhead_ns, 0);
  // Layer-wise compression during prefill: the budget in every layer plus one layer's uncut prompt.
  EXPECT_EQ(cost.peak_kv_tokens, budget + (input - budget + 31) / 32);
  config.mutable_scheduler()->set_max_num_batched_tokens(input);
  EXPECT_EQ(cost.memory.total_bytes, EstimatePeakMemory(config, cost.peak_kv_tokens)->total_bytes);
}

TEST(CandidateCostTest, RocketKvHoldsFourTimesTheBudgetAndReadsTheBudget) {
  auto model = *CandidateCostModel::Create(DefaultSelectConfig(), Named("rocketkv-512"));
  EXPECT_EQ(model->HeldTokens(10000, 1), 2048);
  EXPECT_EQ(model->HeldTokens(10000, 11), 2058);
  EXPECT_EQ(model->ReadTokens(10000, 11), 512);
  EXPECT_EQ(model->ReadTokens(300, 1), 300);
  EXPECT_EQ(model->OverheadQueries(10000), kSelectScoreWindow);
  // The prefill peak (2048 in every layer plus one layer's uncut prompt: 2048 + ceil(7952 / 32) = 2297) is
  // above the final 2048 + 98 held before the last of the 99 decode steps plus its own token (2147); a long
  // output passes it: 2048 + 998 + 1 after 999 steps.
  EXPECT_EQ(model->PeakKvTokens(10000, 100), 2297);
  EXPECT_EQ(model->PeakKvTokens(10000, 1000), 2048 + 998 + 1);
}

TEST(CandidateCostTest, CompressionLowersLatencyOnLongPromptsAndBadShapesAreRefused) {
  auto fp16 = *CandidateCostModel::Create(DefaultSelectConfig(), Named("fp16"));
  auto rocket = *CandidateCostModel::Create(DefaultSelectConfig(), Named("rocketkv-256"));
  EXPECT_LT(rocket->Cost(30000, 500)->latency_ns, fp16->Cost(30000, 500)->latency_ns);
  EXPECT_LT(rocket->Cost(30000, 500)->memory.total_bytes, fp16->Cost(30000, 500)->memory.total_bytes);
  EXPECT_FALSE(fp16->Cost(0, 5).ok());
  EXPECT_FALSE(fp16->Cost(5, 0).ok());
  EXPECT_FALSE(fp16->Cost(5, kMaxCostOutputTokens + 1).ok());
  EXPECT_FALSE(fp16->Cost(kMaxCostInputTokens + 1, 5).ok());
  proto::ExperimentConfig table = DefaultSelectConfig();
  table.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_TABLE);
  EXPECT_FALSE(CandidateCostModel::Create(table, Named("fp16")).ok());
}

}  // namespace
}  // namespace kvsim
