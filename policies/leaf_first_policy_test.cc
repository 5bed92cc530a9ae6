#include "policies/leaf_first_policy.h"

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/lru_policy.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

AccessInfo Child(BlockId parent, int64_t clock) {
  AccessInfo info;
  info.clock = clock;
  info.has_parent = true;
  info.parent = parent;
  return info;
}

TEST(LeafFirstPolicyTest, EvictsOnlyLeavesInInnerOrder) {
  LeafFirstPolicy policy(std::make_unique<LruPolicy>());
  // Prompt A = blocks 1 -> 2 -> 3, prompt B = 1 -> 4. LRU order (oldest first): 1 2 3 4.
  policy.OnInsert(1, AccessInfo{});
  policy.OnInsert(2, Child(1, 1));
  policy.OnInsert(3, Child(2, 2));
  policy.OnInsert(4, Child(1, 3));
  EXPECT_EQ(policy.ResidentChildren(1), 2);
  auto all = [](BlockId) { return true; };
  // Plain LRU would evict 1; the leaves are 3 and 4, and 3 is the older.
  EXPECT_EQ(policy.SelectVictim(all), 3u);
  policy.OnRemove(3);
  // Now 2 is a leaf and the oldest leaf.
  EXPECT_EQ(policy.SelectVictim(all), 2u);
  policy.OnRemove(2);
  EXPECT_EQ(policy.ResidentChildren(1), 1);
  EXPECT_EQ(policy.SelectVictim(all), 4u);
  policy.OnRemove(4);
  EXPECT_EQ(policy.SelectVictim(all), 1u);
}

TEST(LeafFirstPolicyTest, DropsTheConstraintWhenNoLeafIsEvictable) {
  LeafFirstPolicy policy(std::make_unique<LruPolicy>());
  policy.OnInsert(1, AccessInfo{});
  policy.OnInsert(2, Child(1, 1));
  // The only leaf (2) is pinned by the cache: the inner policy picks among the evictable blocks.
  EXPECT_EQ(policy.SelectVictim([](BlockId b) { return b != 2; }), 1u);
}

TEST(LeafFirstPolicyTest, LeafLruIsRegistered) {
  auto policy = CreateEvictionPolicy("leaf_lru");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "leaf_lru");
  (*policy)->OnInsert(1, AccessInfo{});
  (*policy)->OnInsert(2, Child(1, 1));
  EXPECT_EQ((*policy)->SelectVictim([](BlockId) { return true; }), 2u);
}

// leaf_lru (B-tree of leaves) chooses exactly the victims of LeafFirstPolicy(LruPolicy) (LRU scan).
TEST(LeafFirstPolicyTest, LeafLruMatchesTheGenericWrapperOverLru) {
  uint64_t x = 99;
  auto next = [&x] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int64_t capacity : {3, 40, 300}) {
    LeafLruPolicy fast;
    LeafFirstPolicy generic(std::make_unique<LruPolicy>());
    absl::flat_hash_set<BlockId> resident;
    std::vector<BlockId> victims[2];
    int64_t clock = 0;
    for (int r = 0; r < 4000; ++r) {
      // Prompts: a root from 3, then a chain of 1..6 blocks from a small alphabet (prefix-like reuse).
      BlockId prev = 1000 + next() % 3;
      std::vector<BlockId> prompt = {prev};
      for (int k = 0; k < 1 + static_cast<int>(next() % 6); ++k) prompt.push_back(prev = prev * 31 + next() % 4);
      for (size_t k = 0; k < prompt.size(); ++k) {
        AccessInfo info = k == 0 ? AccessInfo{} : Child(prompt[k - 1], clock);
        info.clock = clock++;
        const BlockId b = prompt[k];
        if (resident.contains(b)) {
          fast.OnAccess(b, info);
          generic.OnAccess(b, info);
          continue;
        }
        if (static_cast<int64_t>(resident.size()) >= capacity) {
          auto all = [](BlockId) { return true; };
          victims[0].push_back(fast.SelectVictim(all));
          victims[1].push_back(generic.SelectVictim(all));
          ASSERT_EQ(victims[0].back(), victims[1].back())
              << "capacity " << capacity << " eviction " << victims[0].size();
          resident.erase(victims[0].back());
          fast.OnRemove(victims[0].back());
          generic.OnRemove(victims[0].back());
        }
        resident.insert(b);
        fast.OnInsert(b, info);
        generic.OnInsert(b, info);
      }
    }
    EXPECT_GT(victims[0].size(), 100u);
  }
}

// The leaf-first wrapper as it was before the eligible view: the inner search with a filter that refuses
// non-leaves, passing over them one by one (O(resident blocks) per eviction). The reference for the
// fast path, which must choose the same victims.
class ScanLeafFirst final : public ForwardingPolicy {
 public:
  explicit ScanLeafFirst(std::unique_ptr<EvictionPolicy> inner) : ForwardingPolicy(std::move(inner)) {}
  absl::string_view Name() const override { return "scan_leaf_first"; }
  void OnInsert(BlockId block, const AccessInfo& info) override {
    if (info.has_parent && info.parent != block) {
      parent_of_[block] = info.parent;
      ++child_count_[info.parent];
    }
    inner().OnInsert(block, info);
  }
  void OnRemove(BlockId block) override {
    auto it = parent_of_.find(block);
    if (it != parent_of_.end()) {
      if (--child_count_[it->second] == 0) child_count_.erase(it->second);
      parent_of_.erase(it);
    }
    inner().OnRemove(block);
  }

 protected:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override {
    absl::optional<BlockId> leaf =
        inner().TrySelectVictim([&](BlockId b) { return !child_count_.contains(b) && evictable(b); });
    if (leaf.has_value()) return leaf;
    return inner().TrySelectVictim(evictable);
  }

 private:
  absl::flat_hash_map<BlockId, BlockId> parent_of_;
  absl::flat_hash_map<BlockId, int32_t> child_count_;
};

// Leaf-first over the policies with an eligible view chooses exactly the victims of the scanning wrapper
// over the same policy, driven as cache replay drives them (OnMiss, evictions while full or pending).
TEST(LeafFirstPolicyTest, EligibleViewChoosesTheVictimsOfTheScan) {
  for (const char* name : {"lru", "fifo", "arc", "2q", "s3fifo"}) {
    for (int64_t capacity : {3, 40, 300}) {
      SCOPED_TRACE(testing::Message() << name << " capacity " << capacity);
      auto inner_fast = CreateEvictionPolicy(name);
      auto inner_scan = CreateEvictionPolicy(name);
      ASSERT_TRUE(inner_fast.ok() && inner_scan.ok());
      ASSERT_NE((*inner_fast)->eligible_subset(), nullptr);
      LeafFirstPolicy fast(std::move(*inner_fast));
      ScanLeafFirst scan(std::move(*inner_scan));
      fast.SetCapacity(capacity);
      scan.SetCapacity(capacity);
      uint64_t x = 12345;
      auto next = [&x] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
      absl::flat_hash_set<BlockId> resident;
      int64_t clock = 0, evictions = 0;
      auto all = [](BlockId) { return true; };
      for (int r = 0; r < 3000; ++r) {
        // Prompts: a root from 4, then a chain of 1..8 blocks from a small alphabet (prefix-like reuse,
        // so many resident blocks have children and the leaves are a minority).
        BlockId prev = 1000 + next() % 4;
        std::vector<BlockId> prompt = {prev};
        for (int k = 0; k < 1 + static_cast<int>(next() % 8); ++k) prompt.push_back(prev = prev * 31 + next() % 3);
        for (size_t k = 0; k < prompt.size(); ++k) {
          AccessInfo info = k == 0 ? AccessInfo{} : Child(prompt[k - 1], clock);
          info.clock = clock++;
          const BlockId b = prompt[k];
          if (resident.contains(b)) {
            fast.OnAccess(b, info);
            scan.OnAccess(b, info);
            continue;
          }
          fast.OnMiss(b, info);
          scan.OnMiss(b, info);
          while (static_cast<int64_t>(resident.size()) >= capacity || scan.EvictionPending()) {
            ASSERT_TRUE(fast.EvictionPending() == scan.EvictionPending());
            const BlockId victim = scan.SelectVictim(all);
            ASSERT_EQ(fast.SelectVictim(all), victim) << "eviction " << evictions;
            ++evictions;
            resident.erase(victim);
            fast.OnRemove(victim);
            scan.OnRemove(victim);
          }
          ASSERT_FALSE(fast.EvictionPending());
          resident.insert(b);
          fast.OnInsert(b, info);
          scan.OnInsert(b, info);
        }
      }
      EXPECT_GT(evictions, 500);
    }
  }
}

}  // namespace
}  // namespace kvsim
