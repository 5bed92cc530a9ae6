#include "policies/arc_policy.h"

#include <algorithm>
#include <deque>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"
#include "policies/zipf_trace_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

// Canonical ARC straight from Megiddo and Modha's Fig. 4 (FAST 2003): four lists of ids, front = MRU,
// searched linearly. Independent of ArcPolicy and BlockLists.
class ReferenceArc {
 public:
  explicit ReferenceArc(int64_t c) : c_(c) {}

  // Returns true on a hit.
  bool Access(BlockId x) {
    if (Take(t1_, x) || Take(t2_, x)) {  // case I
      t2_.push_front(x);
      return true;
    }
    const double b1 = static_cast<double>(b1_.size()), b2 = static_cast<double>(b2_.size());
    if (Take(b1_, x)) {  // case II (delta computed with x still in B1)
      p_ = std::min(p_ + (b1 >= b2 ? 1.0 : b2 / b1), static_cast<double>(c_));
      Replace(false);
      t2_.push_front(x);
      return false;
    }
    if (Take(b2_, x)) {  // case III
      p_ = std::max(p_ - (b2 >= b1 ? 1.0 : b1 / b2), 0.0);
      Replace(true);
      t2_.push_front(x);
      return false;
    }
    const int64_t l1 = static_cast<int64_t>(t1_.size() + b1_.size());
    const int64_t total = l1 + static_cast<int64_t>(t2_.size() + b2_.size());
    if (l1 == c_) {  // case IV.A
      if (static_cast<int64_t>(t1_.size()) < c_) {
        b1_.pop_back();
        Replace(false);
      } else {
        t1_.pop_back();
      }
    } else if (total >= c_) {  // case IV.B
      if (total == 2 * c_) b2_.pop_back();
      Replace(false);
    }
    t1_.push_front(x);
    return false;
  }

 private:
  static bool Take(std::deque<BlockId>& list, BlockId x) {
    auto it = std::find(list.begin(), list.end(), x);
    if (it == list.end()) return false;
    list.erase(it);
    return true;
  }
  void Replace(bool x_in_b2) {
    const double t1 = static_cast<double>(t1_.size());
    if (!t1_.empty() && ((x_in_b2 && t1 == p_) || t1 > p_)) {
      b1_.push_front(t1_.back());
      t1_.pop_back();
    } else {
      b2_.push_front(t2_.back());
      t2_.pop_back();
    }
  }

  int64_t c_;
  double p_ = 0;
  std::deque<BlockId> t1_, t2_, b1_, b2_;
};

TEST(ArcPolicyTest, AdaptsTheTargetWithGhostHits) {
  ArcPolicy arc;
  // Capacity 2, p = 0. 1 2 -> T1 [2 1]. 1 hit -> T2 [1], T1 [2]. 3 (case IV.B): |T1| = 1 > p: evict 2
  // -> B1 [2]; T1 [3]. 2 is in B1 (case II): p = min(0 + max(1, 0/1), 2) = 1 *before* REPLACE, so
  // |T1| = 1 is not > p: T2's LRU 1 goes -> B2 [1]; T2 [2]. 4 (IV.B): |T1| = 1, not > p: T2's 2 ->
  // B2 [2 1]; T1 [4 3]. 1 is in B2 (case III): p = max(1 - max(1, 0/2), 0) = 0; |T1| = 2 > p: T1's LRU
  // 3 -> B1 [3]; T2 [1].
  PolicyRun run = DrivePolicy(&arc, 2, {1, 2, 1, 3, 2, 4, 1});
  EXPECT_THAT(run.victims, ElementsAre(2, 1, 2, 3));
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

// Hit for hit, ArcPolicy driven as cache replay drives it equals the paper's pseudocode on Zipf traces
// (where the ghost lists and the target p move all the time) at several capacities.
TEST(ArcPolicyTest, EqualsCanonicalArcOnZipfTraces) {
  for (double alpha : {0.7, 1.0}) {
    const std::vector<BlockId> accesses = ZipfAccesses(3000, alpha, 30000, /*seed=*/7);
    for (int64_t capacity : {1, 2, 7, 50, 300, 1200}) {
      SCOPED_TRACE(testing::Message() << "alpha " << alpha << " capacity " << capacity);
      ArcPolicy arc;
      PolicyRun run = DrivePolicy(&arc, capacity, accesses);
      ReferenceArc reference(capacity);
      int64_t hits = 0;
      for (size_t i = 0; i < accesses.size(); ++i) {
        const bool hit = reference.Access(accesses[i]);
        hits += hit;
        ASSERT_EQ(hit, run.hit[i]) << "access " << i;
      }
      EXPECT_EQ(run.hits, hits);
      EXPECT_GT(hits, 0);
    }
  }
}

}  // namespace
}  // namespace kvsim
