#include "policies/arc_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(ArcPolicyTest, AdaptsTheTargetWithGhostHits) {
  ArcPolicy arc;
  // Capacity 2, p = 0. 1 2 -> T1 [2 1]. 1 hit -> T2 [1], T1 [2]. 3: |T1| = 1 > p: evict 2 -> B1 [2];
  // T1 [3]. 2: |T1| = 1 > p: evict 3 -> B1 [3 2]; 2 is in B1: p = 0 + max(1, |B2|/|B1| = 0) = 1,
  // T2 [2 1]. 4: |T1| = 0: evict T2's LRU 1 -> B2 [1]; T1 [4]. 1: |T1| = 1, not > p = 1: evict T2's
  // LRU 2 -> B2 [2 1]; 1 in B2: p = 1 - max(1, |B1|/|B2| = 1/2 -> 0) = 0; T2 [1].
  PolicyRun run = DrivePolicy(&arc, 2, {1, 2, 1, 3, 2, 4, 1});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 1, 2));
  EXPECT_EQ(arc.target_t1(), 0);
  EXPECT_EQ(run.hits, 1);
}

TEST(ArcPolicyTest, ScanDoesNotFlushFrequentBlocks) {
  ArcPolicy arc;
  // Capacity 4: 1 and 2 are used twice (T2), then a scan of 10 new blocks. T1 holds the scan, so 1 and
  // 2 survive (LRU would lose them) and both hit at the end.
  std::vector<BlockId> accesses = {1, 2, 1, 2};
  for (BlockId b = 100; b < 110; ++b) accesses.push_back(b);
  accesses.push_back(1);
  accesses.push_back(2);
  PolicyRun run = DrivePolicy(&arc, 4, accesses);
  EXPECT_TRUE(run.hit[run.hit.size() - 2]);
  EXPECT_TRUE(run.hit.back());
  EXPECT_TRUE(CreateEvictionPolicy("arc").ok());
}

}  // namespace
}  // namespace kvsim
