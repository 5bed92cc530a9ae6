#include "policies/token/token_policy.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(TokenPolicyRegistryTest, KnowsEveryPolicy) {
  const std::vector<std::string> names = TokenPolicyNames();
  for (const char* name :
       {"full", "random", "knorm", "streaming_llm", "h2o", "tova", "snapkv", "pyramidkv", "quest", "kivi2", "kivi3",
        "kivi4", "kivi8", "kvquant2", "kvquant3", "kvquant4", "kvquant8", "kvquant2-1pct", "kvquant3-1pct",
        "kvquant4-1pct", "kvquant8-1pct", "oracle_select", "oracle_evict", "scissorhands", "expected_attention", "rocketkv"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    auto policy = CreateTokenPolicy(name);
    ASSERT_TRUE(policy.ok()) << name << ": " << policy.status();
    EXPECT_EQ((*policy)->Name(), name);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "adakv"), names.end());  // a wrapper: adakv+POLICY
}

TEST(TokenPolicyRegistryTest, NamesInAnyCase) {
  auto policy = CreateTokenPolicy("SnapKV");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "snapkv");
  auto wrapped = CreateTokenPolicy("KIVI4+H2O");
  ASSERT_TRUE(wrapped.ok()) << wrapped.status();
  EXPECT_EQ((*wrapped)->Name(), "kivi4+h2o");
  EXPECT_FALSE(CreateTokenPolicy("SNAP_KV").ok());
}

TEST(TokenPolicyRegistryTest, UnknownNameListsKnownOnes) {
  auto policy = CreateTokenPolicy("lru");
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(policy.status().message().find("unknown token policy 'lru'"), std::string::npos);
  EXPECT_NE(policy.status().message().find("snapkv"), std::string::npos);
  // A plain policy cannot wrap another.
  EXPECT_EQ(CreateTokenPolicy("h2o+snapkv").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenPolicyRegistryTest, WrappersCompose) {
  auto policy = CreateTokenPolicy("kivi4+snapkv");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "kivi4+snapkv");
  EXPECT_EQ((*policy)->kind(), TokenPolicy::Kind::kQuantize);
  auto twice = CreateTokenPolicy("kivi4+kivi2");
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("cannot wrap 'kivi2'"), std::string::npos) << twice.status();
  auto dangling = CreateTokenPolicy("kivi4+", TokenPolicyOptions{});
  EXPECT_NE(dangling.status().message().find("token policy 'kivi4+': nothing after '+'"), std::string::npos)
      << dangling.status();
  auto alone = CreateTokenPolicy("adakv", TokenPolicyOptions{});
  EXPECT_NE(alone.status().message().find("'adakv' wraps another and cannot stand alone: write adakv+POLICY"),
            std::string::npos)
      << alone.status();
  EXPECT_EQ(CreateTokenPolicy("kivi4+nope").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenPolicyRegistryTest, KindsAreAsDocumented) {
  auto kind = [](const char* name) { return (*CreateTokenPolicy(name))->kind(); };
  EXPECT_EQ(kind("full"), TokenPolicy::Kind::kFull);
  EXPECT_EQ(kind("h2o"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("streaming_llm"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("snapkv"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("quest"), TokenPolicy::Kind::kSelect);
  EXPECT_EQ(kind("oracle_select"), TokenPolicy::Kind::kSelect);
  EXPECT_EQ(kind("oracle_evict"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("kivi2"), TokenPolicy::Kind::kQuantize);
  EXPECT_EQ(kind("scissorhands"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("expected_attention"), TokenPolicy::Kind::kEvict);
  EXPECT_EQ(kind("rocketkv"), TokenPolicy::Kind::kSelect);
  EXPECT_EQ(kind("adakv+snapkv"), TokenPolicy::Kind::kEvict);
}

}  // namespace
}  // namespace kvsim
