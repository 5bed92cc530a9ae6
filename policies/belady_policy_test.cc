#include "policies/belady_policy.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(BeladyPolicyTest, EvictsFurthestNextUse) {
  BeladyPolicy belady;
  // Capacity 2. Accesses: 1 2 3 1 2 3 (clocks 0..5). At clock 2 (miss on 3, next use 5), resident
  // 1 (next 3) and 2 (next 4): 3's next use is furthest, so it is bypassed. Clock 3, 4: hits.
  // Clock 5: 3 misses (next never); 1 and 2 are never used again either: all tie at infinity, so 3 is
  // bypassed. Hits = 2, no victims.
  std::vector<BlockId> accesses = {1, 2, 3, 1, 2, 3};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_EQ(run.hits, 2);
  EXPECT_TRUE(run.victims.empty());
}

TEST(BeladyPolicyTest, EvictsResidentWhenIncomingIsNeededSooner) {
  BeladyPolicy belady;
  // Capacity 2. 1 2 3 3 1: at clock 2, resident 1 (next 4) and 2 (never): 3 (next 3) is admitted and
  // 2 is evicted. Clocks 3 and 4 hit.
  std::vector<BlockId> accesses = {1, 2, 3, 3, 1};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_EQ(run.hits, 2);
  EXPECT_THAT(run.victims, ElementsAre(2));
}

TEST(BeladyPolicyTest, TiesGoToTheMostRecentlyAccessedBlock) {
  BeladyPolicy belady;
  // Capacity 2. 9 1 5 5: at clock 2, 5 (next 3) is admitted; 9 (clock 0) and 1 (clock 1) are never used
  // again: the tie goes to the later access, 1, whatever the ids' order.
  std::vector<BlockId> accesses = {9, 1, 5, 5};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_THAT(run.victims, ElementsAre(1));
}

TEST(BeladyPolicyTest, SkipsBlocksThatAreNotEvictable) {
  BeladyPolicy belady;
  AccessInfo info;
  info.next_access_clock = AccessInfo::kNever;
  belady.OnInsert(1, info);
  info.next_access_clock = 10;
  belady.OnInsert(2, info);
  EXPECT_EQ(belady.SelectVictim([](BlockId) { return true; }), 1u);
  EXPECT_EQ(belady.SelectVictim([](BlockId b) { return b != 1; }), 2u);
  EXPECT_FALSE(belady.TrySelectVictim([](BlockId) { return false; }).has_value());
}

// Brute-force MIN with bypass and the same tie-break (among blocks never used again, the one accessed
// last; the incoming block is bypassed when no resident block's next use is later than its own): next
// uses found by scanning the future, the resident blocks scanned linearly. Returns the victims.
std::vector<BlockId> ReferenceMinVictims(const std::vector<BlockId>& accesses, int64_t capacity, int64_t* hits) {
  struct Resident {
    BlockId block;
    int64_t last_clock;
  };
  std::vector<Resident> resident;
  std::vector<BlockId> victims;
  *hits = 0;
  auto next_use = [&](BlockId b, size_t after) -> int64_t {
    for (size_t j = after + 1; j < accesses.size(); ++j) {
      if (accesses[j] == b) return static_cast<int64_t>(j);
    }
    return AccessInfo::kNever;
  };
  for (size_t i = 0; i < accesses.size(); ++i) {
    const BlockId b = accesses[i];
    bool hit = false;
    for (Resident& r : resident) {
      if (r.block == b) {
        hit = true;
        r.last_clock = static_cast<int64_t>(i);
      }
    }
    if (hit) {
      ++*hits;
      continue;
    }
    if (static_cast<int64_t>(resident.size()) >= capacity) {
      size_t worst = 0;
      for (size_t k = 1; k < resident.size(); ++k) {
        const int64_t nk = next_use(resident[k].block, resident[k].last_clock);
        const int64_t nw = next_use(resident[worst].block, resident[worst].last_clock);
        if (nk > nw || (nk == nw && resident[k].last_clock > resident[worst].last_clock)) worst = k;
      }
      if (next_use(b, i) >= next_use(resident[worst].block, resident[worst].last_clock)) continue;  // bypass
      victims.push_back(resident[worst].block);
      resident.erase(resident.begin() + static_cast<long>(worst));
    }
    resident.push_back({b, static_cast<int64_t>(i)});
  }
  return victims;
}

// Random streams over few blocks (many never-again ties at the end, bypasses, hits), with hashes and with
// dense ids, against the brute force: the same hits and the same victims in order.
TEST(BeladyPolicyTest, MatchesBruteForceMinOnRandomStreams) {
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t num_blocks = 3 + seed % 40;
    std::vector<BlockId> dense_accesses(3000 + seed * 50);
    for (BlockId& b : dense_accesses) b = rng() % num_blocks;
    std::vector<BlockId> hashed(dense_accesses.size());
    for (size_t i = 0; i < hashed.size(); ++i) hashed[i] = dense_accesses[i] * 0x9E3779B97F4A7C15ULL + 7;
    const int64_t capacity = 1 + seed % 12;
    SCOPED_TRACE(testing::Message() << "seed " << seed << " capacity " << capacity);
    int64_t expected_hits = 0;
    const std::vector<BlockId> expected = ReferenceMinVictims(dense_accesses, capacity, &expected_hits);

    BeladyPolicy by_hash;
    PolicyRun run = DrivePolicy(&by_hash, capacity, hashed, NextUses(hashed));
    EXPECT_EQ(run.hits, expected_hits);
    ASSERT_EQ(run.victims.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(run.victims[i], expected[i] * 0x9E3779B97F4A7C15ULL + 7);

    BeladyPolicy by_id;
    by_id.SetDenseIds(num_blocks);
    PolicyRun dense_run = DrivePolicy(&by_id, capacity, dense_accesses, NextUses(dense_accesses));
    EXPECT_EQ(dense_run.hits, expected_hits);
    EXPECT_EQ(dense_run.victims, expected);
  }
}

TEST(BeladyPolicyDeathTest, TwoResidentBlocksWithOneNextUseViolateTheContract) {
  BeladyPolicy belady;
  AccessInfo info;
  info.next_access_clock = 10;
  info.clock = 0;
  belady.OnInsert(1, info);
  info.clock = 1;
  EXPECT_DEATH(belady.OnInsert(2, info), "two resident blocks with next use 10");
}

}  // namespace
}  // namespace kvsim
