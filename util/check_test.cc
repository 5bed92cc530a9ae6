#include "util/check.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(CheckDeathTest, FailedCheckAbortsWithConditionAndMessage) {
  int refcount = 0;
  EXPECT_DEATH(KVSIM_CHECK(refcount > 0) << "block " << 42, "check failed: refcount > 0 block 42");
}

TEST(CheckTest, PassingCheckDoesNotEvaluateTheMessage) {
  int evaluated = 0;
  auto side_effect = [&]() { return ++evaluated; };
  KVSIM_CHECK(1 + 1 == 2) << side_effect();
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace kvsim
