#include "policies/s3fifo_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(S3FifoPolicyTest, SmallQueueFiltersOneHitWonders) {
  S3FifoPolicy s3fifo;
  // Capacity 4: S target max(1, round(0.4)) = 1, ghost round(3.6) = 4 ids. 1 2 3 4 -> S [4 3 2 1];
  // 1 hit (counter 1). 5: S is over its target: 1 (counter 1) moves to M; 2 (counter 0) is the victim,
  // its id enters G. 2: S's oldest 3 is the victim (G [3 2]); 2 is in G: it enters M [2 1]. 6: 4 is
  // the victim. 7: 5 is the victim.
  PolicyRun run = DrivePolicy(&s3fifo, 4, {1, 2, 3, 4, 1, 5, 2, 6, 7});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 4, 5));
}

TEST(S3FifoPolicyTest, MainQueueIsClockLike) {
  S3FifoPolicy s3fifo;
  proto::EvictionPolicyConfig config;
  config.mutable_s3fifo()->set_small_queue_ratio(0.5);
  ASSERT_TRUE(s3fifo.Configure(config).ok());
  // Capacity 2, S target 1. 1 2 -> S [2 1]. 1 hit. 3: 1 moves to M; 2 victim (G [2]). S [3], M [1].
  // 2: S at target: 3 victim (G [3 2]); 2 from G into M [2 1]. 1 hit (counter 1). 4: S empty... S [] is
  // below target, so M: 1 (counter 1 -> 0, reinserted), 2 (counter 0): victim.
  PolicyRun run = DrivePolicy(&s3fifo, 2, {1, 2, 1, 3, 2, 1, 4});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 2));
}

TEST(S3FifoPolicyTest, RejectsBadParameters) {
  S3FifoPolicy s3fifo;
  proto::EvictionPolicyConfig config;
  config.mutable_s3fifo()->set_small_queue_ratio(1.5);
  absl::Status status = s3fifo.Configure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("small_queue_ratio"), absl::string_view::npos);
  proto::EvictionPolicyConfig other;
  other.mutable_two_q()->set_kin_ratio(0.5);
  EXPECT_EQ(S3FifoPolicy().Configure(other).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateEvictionPolicy("s3fifo").ok());
}

}  // namespace
}  // namespace kvsim
