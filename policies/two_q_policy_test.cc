#include "policies/two_q_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(TwoQPolicyTest, SecondUseAfterEvictionPromotesToAm) {
  TwoQPolicy two_q;
  // Capacity 4: Kin = 1, Kout = 2. 1 2 3 4 -> A1in [4 3 2 1]. 5: |A1in| = 4 > 1: evict 1 -> A1out [1].
  // 1: evict 2 -> A1out [2 1]; 1 was in A1out: enters Am. 6: evict 3 -> A1out [3 2] (1 dropped).
  // 1: hit in Am. 2: evict 4 -> A1out [4 3]; 2 is no longer in A1out: enters A1in.
  PolicyRun run = DrivePolicy(&two_q, 4, {1, 2, 3, 4, 5, 1, 6, 1, 2});
  EXPECT_THAT(run.victims, ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(run.hits, 1);
}

TEST(TwoQPolicyTest, EvictsFromAmWhenA1inIsWithinItsTarget) {
  TwoQPolicy two_q;
  proto::EvictionPolicyConfig config;
  config.mutable_two_q()->set_kin_ratio(0.5);
  config.mutable_two_q()->set_kout_ratio(1.0);
  ASSERT_TRUE(two_q.Configure(config).ok());
  // Capacity 2, Kin 1, Kout 2. 1 2 -> A1in [2 1]. 3: evict 1 (A1out [1]). 1: evict 2 (A1out [2 1]),
  // 1 was in A1out -> Am. A1in [3], Am [1]. 4: |A1in| = 1, not > 1: evict Am's LRU, 1.
  PolicyRun run = DrivePolicy(&two_q, 2, {1, 2, 3, 1, 4});
  EXPECT_THAT(run.victims, ElementsAre(1, 2, 1));
}

TEST(TwoQPolicyTest, RejectsBadParameters) {
  proto::EvictionPolicyConfig config;
  config.mutable_two_q()->set_kout_ratio(-1);
  absl::Status status = TwoQPolicy().Configure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("kout_ratio"), absl::string_view::npos);
  auto policy = CreateEvictionPolicy("2q");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "2q");
}

}  // namespace
}  // namespace kvsim
