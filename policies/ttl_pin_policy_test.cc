#include "policies/ttl_pin_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/lru_policy.h"

namespace kvsim {
namespace {

TEST(TtlPinPolicyTest, ChooseTtlMaximisesExpectedSaving) {
  // Durations 1, 2, 10 (ns), benefit 12: tau = 1 -> 1/3*12 - 1 = 3; tau = 2 -> 2/3*12 - 2 = 6;
  // tau = 10 -> 12 - 10 = 2; tau = 0 -> 0. Best: 2.
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({1, 2, 10}, 12, 1000), 2);
  // Benefit 30: 10 - 1 = 9, 20 - 2 = 18, 30 - 10 = 20 -> 10; capped at 5: 30 - 5 = 25 -> 5.
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({1, 2, 10}, 30, 1000), 10);
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({1, 2, 10}, 30, 5), 5);
  // Benefit below every duration's cost: no pin.
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({100}, 50, 1000), 0);
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({}, 50, 1000), 0);
  // Equal durations count together: P(D <= 4) = 1 for {4, 4}, benefit 6 -> 6 - 4 = 2 > 0.
  EXPECT_EQ(TtlPinPolicy::ChooseTtl({4, 4}, 6, 1000), 4);
}

class TtlPinScenario : public ::testing::Test {
 protected:
  TtlPinScenario() : policy_(std::make_unique<LruPolicy>(), Params()) {}
  static proto::TtlPinParams Params() {
    proto::TtlPinParams params;
    params.set_default_restore_ns(100);  // per block
    return params;
  }
  void Use(BlockId block, uint64_t request, int64_t session, int64_t time_ns, bool insert) {
    AccessInfo info;
    info.request_id = request;
    info.session_id = session;
    info.time_ns = time_ns;
    if (insert)
      policy_.OnInsert(block, info);
    else
      policy_.OnAccess(block, info);
  }
  void End(uint64_t request, int64_t session, int64_t time_ns, int64_t tool_ns) {
    RequestEndInfo end;
    end.request_id = request;
    end.session_id = session;
    end.time_ns = time_ns;
    end.ends_in_tool_call = true;
    end.tool_name = "search";
    end.tool_duration_ns = tool_ns;
    policy_.OnRequestEnd(end);
  }
  TtlPinPolicy policy_;
};

TEST_F(TtlPinScenario, PinsAfterAToolDurationHasBeenObserved) {
  // Request 1 (session 7) uses block 1, ends at t=0 in a tool call that runs 50 ns. No duration is known
  // yet: no pin. Its duration becomes known at t=50.
  Use(1, 1, 7, 0, true);
  End(1, 7, 0, 50);
  EXPECT_FALSE(policy_.IsPinned(1));
  // Request 2 (session 8) at t=60 uses blocks 2, 3 and ends in "search": history {50}, benefit =
  // 2 blocks x 100 ns = 200: tau = 50 -> 200 - 50 = 150 > 0, so both are pinned until 110.
  Use(2, 2, 8, 60, true);
  Use(3, 2, 8, 60, true);
  End(2, 8, 60, 30);
  EXPECT_TRUE(policy_.IsPinned(2));
  EXPECT_TRUE(policy_.IsPinned(3));
  // LRU order 1 2 3: 1 is unpinned and oldest.
  auto all = [](BlockId) { return true; };
  EXPECT_EQ(policy_.SelectVictim(all), 1u);
  policy_.OnRemove(1);
  // Only pinned blocks left: pins are soft, LRU picks 2.
  EXPECT_EQ(policy_.SelectVictim(all), 2u);
  // Block 4 from another session at t=100 (< 110): 2 and 3 still pinned, 4 is the victim.
  Use(4, 3, 9, 100, true);
  EXPECT_EQ(policy_.SelectVictim(all), 4u);
  // At t=111 the pins have expired: LRU order 2 3 4 -> 2.
  Use(4, 4, 9, 111, false);
  EXPECT_FALSE(policy_.IsPinned(2));
  EXPECT_EQ(policy_.SelectVictim(all), 2u);
}

TEST_F(TtlPinScenario, SessionResumingReleasesItsPins) {
  Use(1, 1, 7, 0, true);
  End(1, 7, 0, 10);  // duration 10 known at t=10
  Use(2, 2, 7, 20, true);
  End(2, 7, 20, 10);  // history {10}, benefit 100: pin block 2 until 30 (and block 1 is not used)
  EXPECT_TRUE(policy_.IsPinned(2));
  Use(2, 3, 7, 25, false);  // the session's next call uses block 2: the pin ends
  EXPECT_FALSE(policy_.IsPinned(2));
}

TEST(TtlPinPolicyTest, RejectsNegativeParameters) {
  proto::TtlPinParams params;
  params.set_max_ttl_ns(-1);
  absl::Status status = TtlPinPolicy::ValidateTtlPinParams(params);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("max_ttl_ns"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
