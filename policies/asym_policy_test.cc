#include "policies/asym_policy.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/lru_policy.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(AsymPolicyTest, KeepsCostlyBlocksLonger) {
  AsymPolicy asym;
  asym.SetCapacity(3);  // half-life 3 accesses
  auto all = [](BlockId) { return true; };
  AccessInfo info;
  info.restore_ns = 8;
  asym.OnInsert(1, info);  // t = 0: K = 0 + 3 x log2(8) = 9
  info.restore_ns = 1;
  asym.OnInsert(2, info);  // t = 1: K = 1
  info.restore_ns = 2;
  asym.OnInsert(3, info);                 // t = 2: K = 2 + 3 = 5
  EXPECT_EQ(asym.SelectVictim(all), 2u);  // LRU would pick 1
  asym.OnRemove(2);
  info.restore_ns = 1;
  asym.OnInsert(4, info);  // t = 3: K = 3, below 3's 5 and 1's 9
  EXPECT_EQ(asym.SelectVictim(all), 4u);
  EXPECT_EQ(asym.SelectVictim([](BlockId b) { return b != 4; }), 3u);
}

// With uniform cost the rule reduces to LRU: same victims on a random trace, for cost 0 and a constant.
TEST(AsymPolicyTest, UniformCostReducesToLru) {
  std::mt19937_64 rng(42);
  std::vector<BlockId> accesses(20000);
  for (BlockId& b : accesses) b = rng() % 500;
  for (int64_t cost : {0, 7000}) {
    for (int64_t capacity : {1, 16, 200}) {
      AsymPolicy asym;
      LruPolicy lru;
      auto drive = [&](EvictionPolicy* p) {
        p->SetCapacity(capacity);
        absl::flat_hash_set<BlockId> resident;
        std::vector<BlockId> victims;
        for (size_t i = 0; i < accesses.size(); ++i) {
          AccessInfo info;
          info.clock = i;
          info.restore_ns = cost;
          if (resident.contains(accesses[i])) {
            p->OnAccess(accesses[i], info);
            continue;
          }
          if (static_cast<int64_t>(resident.size()) >= capacity) {
            BlockId v = p->SelectVictim([](BlockId) { return true; });
            resident.erase(v);
            p->OnRemove(v);
            victims.push_back(v);
          }
          resident.insert(accesses[i]);
          p->OnInsert(accesses[i], info);
        }
        return victims;
      };
      std::vector<BlockId> a = drive(&asym), l = drive(&lru);
      EXPECT_GT(l.size(), 1000u);
      EXPECT_EQ(a, l) << "cost " << cost << " capacity " << capacity;
    }
  }
}

TEST(AsymPolicyTest, RejectsBadHalfLife) {
  proto::EvictionPolicyConfig config;
  config.mutable_asym()->set_half_life_accesses(-2);
  absl::Status status = AsymPolicy().Configure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("half_life_accesses"), absl::string_view::npos);
  EXPECT_TRUE(CreateEvictionPolicy("asym").ok());
}

}  // namespace
}  // namespace kvsim
