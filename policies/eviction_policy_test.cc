#include "policies/eviction_policy.h"

#include <memory>

#include "gtest/gtest.h"
#include "policies/lru_policy.h"

namespace kvsim {
namespace {

TEST(MakeRequestEndInfoTest, ToolCallsGiveTheFirstNameAndTheSumOfDurations) {
  Request request;
  request.request_id = 3;
  request.session_id = 9;
  RequestEndInfo plain = MakeRequestEndInfo(request, 42);
  EXPECT_EQ(plain.request_id, 3u);
  EXPECT_EQ(plain.session_id, 9);
  EXPECT_EQ(plain.time_ns, 42);
  EXPECT_FALSE(plain.ends_in_tool_call);
  EXPECT_EQ(plain.tool_duration_ns, -1);  // unknown: no tool call
  request.tool_calls = {{"bash", 700}, {"edit", 300}, {"", 0}};
  RequestEndInfo tools = MakeRequestEndInfo(request, 42);
  EXPECT_TRUE(tools.ends_in_tool_call);
  EXPECT_EQ(tools.tool_name, "bash");
  EXPECT_EQ(tools.tool_duration_ns, 1000);
}

// A policy that ignores the filter: the base class's check catches it.
class IgnoresTheFilter final : public EvictionPolicy {
 public:
  absl::string_view Name() const override { return "ignores_the_filter"; }
  void OnInsert(BlockId block, const AccessInfo& info) override {}
  void OnAccess(BlockId block, const AccessInfo& info) override {}
  void OnRemove(BlockId block) override {}

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override { return 5; }
};

TEST(EvictionPolicyTest, SelectVictimReturnsThePoliciesChoiceWithinTheFilter) {
  LruPolicy lru;
  lru.OnInsert(1, {});
  lru.OnInsert(2, {});
  EXPECT_EQ(lru.SelectVictim([](BlockId) { return true; }), 1u);
  EXPECT_EQ(lru.SelectVictim([](BlockId b) { return b != 1; }), 2u);
  EXPECT_FALSE(lru.TrySelectVictim([](BlockId) { return false; }).has_value());
}

TEST(EvictionPolicyDeathTest, AChoiceOutsideTheFilterOrNoneAtAllIsAnInvariantViolation) {
  IgnoresTheFilter policy;
  EXPECT_DEATH(policy.SelectVictim([](BlockId b) { return b != 5; }), "which the cache may not evict");
  LruPolicy empty;
  EXPECT_DEATH(empty.SelectVictim([](BlockId) { return true; }), "lru: no evictable block");
}

}  // namespace
}  // namespace kvsim
