#include "policies/policy_factory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(PolicyFactoryTest, ParsesSpecsAndLabels) {
  auto config = ParsePolicySpec("lru+leaf_first+ttl");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->name(), "lru");
  EXPECT_TRUE(config->leaf_first());
  EXPECT_TRUE(config->has_ttl_pin());
  EXPECT_EQ(PolicyLabel(*config), "lru+leaf_first+ttl");
  auto policy = CreateEvictionPolicyFromConfig(*config);
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "lru+leaf_first+ttl");
}

TEST(PolicyFactoryTest, NamesAndModifiersInAnyCase) {
  auto config = ParsePolicySpec("S3FIFO+Leaf_First+TTL");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(PolicyLabel(*config), "s3fifo+leaf_first+ttl");
  auto policy = CreateEvictionPolicyFromConfig(*config);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "s3fifo+leaf_first+ttl");
  auto lru = ParsePolicySpec("LRU");
  ASSERT_TRUE(lru.ok());
  EXPECT_EQ(lru->name(), "lru");
  EXPECT_EQ(ParsePolicySpec("2Q")->name(), "2q");
  EXPECT_FALSE(CreateEvictionPolicyFromConfig(*ParsePolicySpec("LRUX")).ok());  // still only the real names
}

// A config file's eviction.name is read in any case too, and means the same policy everywhere: its label, the
// policy built, and the oracle check.
TEST(PolicyFactoryTest, ConfigNamesInAnyCase) {
  proto::EvictionPolicyConfig config;
  config.set_name("S3FIFO");
  auto policy = CreateEvictionPolicyFromConfig(config);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "s3fifo");
  EXPECT_EQ(PolicyLabel(config), "s3fifo");
  EXPECT_FALSE(PolicyNeedsOracle(config));
  config.set_name("Belady");
  EXPECT_TRUE(PolicyNeedsOracle(config));
  EXPECT_EQ(CreateServingEvictionPolicy(config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PolicyFactoryTest, UnknownModifierAndNameAreErrors) {
  auto bad = ParsePolicySpec("lru+sticky");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sticky"), absl::string_view::npos);
  proto::EvictionPolicyConfig config;
  config.set_name("nope");
  auto policy = CreateEvictionPolicyFromConfig(config);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(policy.status().message().find("known: "), absl::string_view::npos);
  EXPECT_NE(policy.status().message().find("belady"), absl::string_view::npos);
}

TEST(PolicyFactoryTest, ParametersOfAnotherPolicyAreRejected) {
  proto::EvictionPolicyConfig config;
  config.set_name("lru");
  config.mutable_s3fifo()->set_small_queue_ratio(0.2);
  auto policy = CreateEvictionPolicyFromConfig(config);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(policy.status().message().find("s3fifo"), absl::string_view::npos);
}

TEST(PolicyFactoryTest, DefaultNameIsLru) {
  auto policy = CreateEvictionPolicyFromConfig(proto::EvictionPolicyConfig());
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "lru");
}

}  // namespace
}  // namespace kvsim
