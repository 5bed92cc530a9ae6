#include "util/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status QuarterInto(int x, int* out) {
  KVSIM_ASSIGN_OR_RETURN(int half, Half(x));
  KVSIM_ASSIGN_OR_RETURN(*out, Half(half));
  return absl::OkStatus();
}

absl::Status FailsAt(int step, int* reached) {
  for (int i = 0; i < 3; ++i) {
    *reached = i;
    KVSIM_RETURN_IF_ERROR(i == step ? absl::NotFoundError("stop") : absl::OkStatus());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MakeBox(int x) { return std::make_unique<int>(x); }

absl::Status MoveOnly(int* out) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(7));
  *out = *box;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnAssignsValues) {
  int out = 0;
  ASSERT_TRUE(QuarterInto(12, &out).ok());
  EXPECT_EQ(out, 3);
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesTheFirstError) {
  int out = -1;
  absl::Status status = QuarterInto(6, &out);  // 6 -> 3 -> odd
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "odd");
  EXPECT_EQ(out, -1);
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtTheFailingStep) {
  int reached = -1;
  absl::Status status = FailsAt(1, &reached);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reached, 1);
  EXPECT_TRUE(FailsAt(5, &reached).ok());
  EXPECT_EQ(reached, 2);
}

TEST(StatusMacrosTest, AssignOrReturnMovesMoveOnlyValues) {
  int out = 0;
  ASSERT_TRUE(MoveOnly(&out).ok());
  EXPECT_EQ(out, 7);
}

}  // namespace
}  // namespace kvsim
