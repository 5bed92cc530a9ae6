#include "sim/serving/request_state.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(RequestStateTest, LifecycleThroughPreemption) {
  RequestState state;
  EXPECT_EQ(state.phase(), RequestPhase::kQueued);
  state.Admit(100);
  EXPECT_EQ(state.phase(), RequestPhase::kPrefill);
  EXPECT_EQ(state.first_scheduled_ns, 100);
  state.FinishPrefill();
  EXPECT_EQ(state.phase(), RequestPhase::kDecode);
  state.Preempt();
  EXPECT_EQ(state.phase(), RequestPhase::kPreempted);
  EXPECT_EQ(state.preemptions, 1);
  state.Admit(500);  // recompute: back to prefill; the first scheduling time is kept
  EXPECT_EQ(state.first_scheduled_ns, 100);
  state.FinishPrefill();
  state.Preempt();
  state.Resume(900);  // swapped back in while decoding
  EXPECT_EQ(state.phase(), RequestPhase::kDecode);
  state.Finish(1000);
  EXPECT_EQ(state.phase(), RequestPhase::kFinished);
  EXPECT_EQ(state.finish_ns, 1000);
  EXPECT_EQ(state.preemptions, 2);
}

TEST(RequestStateDeathTest, IllegalTransitionsAreBugs) {
  RequestState queued;
  EXPECT_DEATH(queued.FinishPrefill(), "decode from queued");
  EXPECT_DEATH(queued.Finish(0), "finish from queued");
  EXPECT_DEATH(queued.Resume(0), "resume from queued");
  RequestState finished;
  finished.Admit(0);
  finished.Finish(1);
  EXPECT_DEATH(finished.Preempt(), "preempt from finished");
  EXPECT_DEATH(finished.Admit(2), "admit from finished");
}

TEST(RequestStateTest, ComputeRunsAdvanceAcrossRuns) {
  RequestState state;
  state.prefill_target_tokens = 100;
  state.ClearComputeRuns();
  state.AddComputeRun(16, 16, 1);
  state.AddComputeRun(32, 8, 1);  // adjacent, same segments: merged into [16, 40)
  state.AddComputeRun(64, 36, 2);
  ASSERT_EQ(state.compute_runs().size(), 2u);
  EXPECT_EQ(state.compute_runs()[0].length, 24);
  EXPECT_EQ(state.remaining_compute_tokens(), 60);
  EXPECT_EQ(state.frontier_tokens(), 16);
  state.AdvanceCompute(30);  // 24 of the first run, 6 of the second
  EXPECT_EQ(state.frontier_tokens(), 70);
  EXPECT_EQ(state.remaining_compute_tokens(), 30);
  state.AdvanceCompute(30);
  EXPECT_EQ(state.frontier_tokens(), 100);  // done: the target
  EXPECT_EQ(state.remaining_compute_tokens(), 0);
}

TEST(RequestPoolTest, ReusesFreedSlotsWithCleanState) {
  RequestPool pool;
  const int32_t a = pool.Allocate();
  pool.at(a).request.block_hashes = {1, 2, 3};
  pool.at(a).generated_tokens = 5;
  const int32_t b = pool.Allocate();
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.in_use(), 2);
  pool.Free(a);
  const int32_t c = pool.Allocate();
  EXPECT_EQ(c, a);
  EXPECT_TRUE(pool.at(c).request.block_hashes.empty());
  EXPECT_EQ(pool.at(c).generated_tokens, 0);
  EXPECT_EQ(pool.at(c).phase(), RequestPhase::kQueued);
}

}  // namespace
}  // namespace kvsim
