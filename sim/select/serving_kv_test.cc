#include "sim/select/serving_kv.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "config/experiment_config.h"
#include "gtest/gtest.h"
#include "sim/select/candidates.h"
#include "sim/select/select_test_util.h"
#include "util/file.h"

namespace kvsim {
namespace {

std::string Write(const std::string& text) {
  static int count = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/kv" + std::to_string(++count) + ".csv";
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

Request Prompt(uint64_t id, int64_t input_tokens) {
  Request r;
  r.request_id = id;
  r.input_tokens = input_tokens;
  r.output_tokens = 10;
  return r;
}

TEST(CandidateKvAssignerTest, FormatsBlockFactorsAndBudgetsOfTheDefaultSet) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  auto kv = CandidateKvAssigner::ForAll(DefaultSelectConfig(), set, "fp16");
  ASSERT_TRUE(kv.ok()) << kv.status();
  const CandidateKvAssigner& a = **kv;
  // Llama-3.1-8B, bf16 KV: 131072 bytes per token (2 bytes per element). fp16 is the replica's format.
  const RequestKv& fp16 = a.base(CandidateIndex(set, "fp16"));
  EXPECT_EQ(fp16.format, nullptr);
  EXPECT_EQ(fp16.block_factor, 1);
  EXPECT_EQ(fp16.hash_salt, 0u);
  // KVQuant 4-bit, groups of 128 with a 4-byte scale and zero: 0.5 + 4 / 128 = 0.53125 bytes per element,
  // 131072 / 2 x 0.53125 = 34816 per token: 131072 / 34816 = 3.76 -> 3 trace blocks per block.
  const RequestKv& q4 = a.base(CandidateIndex(set, "kvquant-4b"));
  ASSERT_NE(q4.format, nullptr);
  EXPECT_DOUBLE_EQ(q4.format->BytesPerElement(), 0.53125);
  EXPECT_EQ(q4.block_factor, 3);
  // 3 bits with 1% outliers: 4 + ceil(0.01 x 128 x 6) = 12 bytes per group: 0.375 + 0.09375 = 0.46875,
  // ratio 2 / 0.46875 = 4.27 -> 4. 2 bits: 0.25 + 0.09375 = 0.34375, ratio 5.8 -> 5.
  EXPECT_EQ(a.base(CandidateIndex(set, "kvquant-3b-1%")).block_factor, 4);
  EXPECT_EQ(a.base(CandidateIndex(set, "kvquant-2b-1%")).block_factor, 5);
  EXPECT_NE(q4.hash_salt, 0u);
  EXPECT_NE(q4.hash_salt, a.base(CandidateIndex(set, "kvquant-2b-1%")).hash_salt);
  // Token policies keep the replica's format.
  const RequestKv& h2o = a.base(CandidateIndex(set, "h2o-25%"));
  EXPECT_EQ(h2o.format, nullptr);
  EXPECT_EQ(h2o.block_factor, 1);
}

TEST(CandidateKvAssignerTest, BudgetsFollowThePromptLength) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  auto h2o = CandidateKvAssigner::ForAll(DefaultSelectConfig(), set, "h2o-25%");
  ASSERT_TRUE(h2o.ok()) << h2o.status();
  // A quarter of 1000 tokens: 250 kept and held.
  absl::StatusOr<RequestKv> kv = (*h2o)->Assign(Prompt(1, 1000));
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->prompt_keep_tokens, 250);
  EXPECT_EQ(kv->hold_cap_tokens, 250);
  EXPECT_EQ(kv->read_cap_tokens, -1);
  // RocketKV at 512: keeps 4 x 512 of the prompt (its memory factor), reads 512.
  auto rocket = CandidateKvAssigner::ForAll(DefaultSelectConfig(), set, "rocketkv-512");
  ASSERT_TRUE(rocket.ok());
  kv = (*rocket)->Assign(Prompt(1, 10000));
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->prompt_keep_tokens, 2048);
  EXPECT_EQ(kv->hold_cap_tokens, -1);
  EXPECT_EQ(kv->read_cap_tokens, 512);
  auto fp16 = CandidateKvAssigner::ForAll(DefaultSelectConfig(), set, "fp16");
  ASSERT_TRUE(fp16.ok());
  EXPECT_FALSE((*fp16)->Assign(Prompt(1, 10000))->has_budget());
}

TEST(CandidateKvAssignerTest, ReadsSelections) {
  const proto::SelectCandidateSet set = DefaultCandidateSet();
  const std::string path = Write("prompt_id,config,fallback\n7,kvquant-4b,0\n 9 , h2o-50% ,1\n");
  auto a = CandidateKvAssigner::FromSelections(DefaultSelectConfig(), set, path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->Assign(Prompt(7, 100))->config, CandidateIndex(set, "kvquant-4b"));
  EXPECT_EQ((*a)->Assign(Prompt(9, 100))->config, CandidateIndex(set, "h2o-50%"));
  const absl::StatusOr<RequestKv> missing = (*a)->Assign(Prompt(8, 100));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("request 8: no row for it in " + path), std::string::npos)
      << missing.status();
}

void ExpectRefused(const std::string& text, const std::string& fragment) {
  const std::string path = Write(text);
  auto a = CandidateKvAssigner::FromSelections(DefaultSelectConfig(), DefaultCandidateSet(), path);
  ASSERT_FALSE(a.ok()) << text;
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find(path + fragment), std::string::npos) << a.status();
}

TEST(CandidateKvAssignerTest, RefusesBadSelections) {
  ExpectRefused("request_id,choice\n1,fp16\n", ":1: missing column 'config'");
  ExpectRefused("config\nfp16\n", ":1: missing column 'request_id'");
  ExpectRefused("request_id,config\n1,fp16\nx1,fp16\n", ":3:1 (request_id): 'x1' is not an unsigned integer");
  ExpectRefused("request_id,config\n1,fp16\n2,fp8\n", ":3:2 (config): unknown configuration 'fp8'");
  ExpectRefused("request_id,config\n1,fp16\n1,h2o-50%\n", ":3:1 (request_id): request 1 repeated (first at line 2)");
}

TEST(CandidateKvAssignerTest, RefusesAFormatWiderThanTheReplicas) {
  proto::ExperimentConfig fp8;
  fp8.mutable_model()->set_kv_dtype(proto::DTYPE_FP8);
  fp8.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_ROOFLINE);  // as kvsim replay --kv_configs loads it
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(fp8, "test");
  ASSERT_TRUE(config.ok()) << config.status();
  auto a = CandidateKvAssigner::ForAll(*config, DefaultCandidateSet(), "fp16");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("more than the 65536 of the replica's format fp8"), std::string::npos)
      << a.status();
  // A narrower one is fine: 4-bit KVQuant in 1-byte blocks, 65536 / 34816 -> 1.
  auto q4 = CandidateKvAssigner::ForAll(*config, DefaultCandidateSet(), "kvquant-4b");
  ASSERT_TRUE(q4.ok()) << q4.status();
  EXPECT_EQ((*q4)->base(1).block_factor, 1);
}

TEST(CandidateKvAssignerTest, RefusesOtherCostModels) {
  proto::ExperimentConfig table = DefaultSelectConfig();
  table.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_TABLE);
  auto a = CandidateKvAssigner::ForAll(table, DefaultCandidateSet(), "fp16");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("roofline"), std::string::npos) << a.status();
}

}  // namespace
}  // namespace kvsim
