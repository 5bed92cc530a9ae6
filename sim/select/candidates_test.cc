#include "sim/select/candidates.h"

#include <string>

#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

TEST(CandidatesTest, DefaultSetIsTenConfigurationsPlusFp16) {
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates("");
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->candidate_size(), 11);
  int full = 0, kvquant = 0, h2o = 0, rocketkv = 0;
  for (const proto::SelectCandidate& c : set->candidate()) {
    if (!c.has_quant() && !c.has_token()) ++full;
    if (c.has_quant() && c.quant().method() == proto::KV_QUANT_METHOD_KVQUANT) ++kvquant;
    if (c.has_token() && c.token().policy() == "h2o") ++h2o;
    if (c.has_token() && c.token().policy() == "rocketkv") ++rocketkv;
  }
  EXPECT_EQ(full, 1);
  EXPECT_EQ(kvquant, 3);
  EXPECT_EQ(h2o, 3);
  EXPECT_EQ(rocketkv, 4);
  EXPECT_EQ(set->candidate(0).kv_dtype(), proto::DTYPE_FP16);
  EXPECT_EQ(CandidateIndex(*set, "h2o-25%"), 5);
  EXPECT_EQ(CandidateIndex(*set, "nope"), -1);
}

TEST(CandidatesTest, BudgetFromRatioRoundsUpAndFromTokensIsFixed) {
  proto::SelectCandidate ratio;
  ratio.mutable_token()->set_policy("h2o");
  ratio.mutable_token()->set_budget_ratio(0.25);
  EXPECT_EQ(CandidateBudgetTokens(ratio, 1000), 250);
  EXPECT_EQ(CandidateBudgetTokens(ratio, 1001), 251);
  EXPECT_EQ(CandidateBudgetTokens(ratio, 1), 1);
  proto::SelectCandidate tokens;
  tokens.mutable_token()->set_policy("rocketkv");
  tokens.mutable_token()->set_budget_tokens(512);
  EXPECT_EQ(CandidateBudgetTokens(tokens, 100), 512);
  EXPECT_EQ(CandidateBudgetTokens(proto::SelectCandidate(), 100), -1);
}

void ExpectRefused(const std::string& text, const std::string& what) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/c.textproto";
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates(path);
  ASSERT_FALSE(set.ok()) << text;
  EXPECT_NE(set.status().message().find(what), std::string::npos) << set.status();
  EXPECT_NE(set.status().message().find(path), std::string::npos) << set.status();
}

TEST(CandidatesTest, BadSetsAreRefusedNamingTheCandidate) {
  ExpectRefused("", "no candidate");
  ExpectRefused("candidate { name: 'a' } candidate { name: 'a' }", "candidate 2 'a': duplicate name");
  ExpectRefused("candidate { name: 'a,b' }", "commas");
  ExpectRefused("candidate { name: 'q' quant { method: KV_QUANT_METHOD_KVQUANT bits: 5 } }", "bits=5");
  ExpectRefused("candidate { name: 'q' quant { bits: 4 } }", "quant.method is required");
  ExpectRefused("candidate { name: 'q' quant { method: KV_QUANT_METHOD_KIVI bits: 2 outlier_fraction: 0.01 } }",
                "KVQUANT only");
  ExpectRefused("candidate { name: 't' token { policy: 'nosuch' budget_tokens: 5 } }", "token.policy");
  ExpectRefused("candidate { name: 't' token { policy: 'h2o' } }", "exactly one");
  ExpectRefused("candidate { name: 't' token { policy: 'kivi4+h2o' budget_tokens: 64 } }", "quantises");
  ExpectRefused("candidate { name: 't' token { policy: 'h2o' budget_ratio: 1.5 } }", "budget_ratio=1.5");
  ExpectRefused("candidate { name: 'd' kv_dtype: DTYPE_INT8 }", "kv_dtype");
  ExpectRefused("candidate { nme: 'x' }", "c.textproto:1:");
}

}  // namespace
}  // namespace kvsim
