#include "policies/token/quest_policy.h"

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

std::vector<int32_t> Range(int32_t from, int32_t to) {  // [from, to]
  std::vector<int32_t> r;
  for (int32_t i = from; i <= to; ++i) r.push_back(i);
  return r;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// With keys sqrt(d) e_i, page P's channel c has max sqrt(d) if token c is in P and 0 otherwise, min 0, so
// U_P = sqrt(d) * sum_{i in P} max(logit_i, 0): the pages are ranked by their positive logits.
TestHead Head() {
  std::vector<double> m0(66, 0.0), m1(66, 0.0);
  for (int i = 16; i < 32; ++i) m0[i] = 1.0;  // page 1: 16
  m0[50] = 5.0;                               // page 3: 5
  m0[2] = -100.0;                             // negative logits add nothing
  m1[3] = 2.0;                                // page 0: 2
  for (int i = 32; i < 48; ++i) m1[i] = 0.5;  // page 2: 8
  return TestHead::FromLogits(64, 64, {{m0, m0}, {m1, m1}});
}

TEST(QuestPolicyTest, ReadsTheCurrentPagePlusTopBoundPagesPerQueryHead) {
  TestHead head = Head();
  head.layer = 2;  // layers 0 and 1 are dense
  QuestPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 48);  // K = 3 pages: the current one and two others
  // Member 0: pages 1 (16) and 3 (5); member 1: pages 2 (8) and 0 (2).
  EXPECT_EQ(kept[0][0][0], Concat(Concat(Range(16, 31), Range(48, 63)), {64}));
  EXPECT_EQ(kept[0][0][1], Concat(Concat(Range(0, 15), Range(32, 47)), {64}));
  EXPECT_EQ(kept[1][0][0], Concat(Concat(Range(16, 31), Range(48, 63)), {64, 65}));
}

TEST(QuestPolicyTest, DenseInFirstLayersAndMinimumThreePages) {
  TestHead head = Head();
  head.layer = 1;
  QuestPolicy policy({});
  EXPECT_EQ(RunPolicy(policy, {&head}, 16)[0][0][0], Range(0, 64));
  head.layer = 5;
  // B = 16 would be one page, but Quest reads at least 3.
  EXPECT_EQ(RunPolicy(policy, {&head}, 16)[0][0][0].size(), 33u);
}

}  // namespace
}  // namespace kvsim
