// ADAPTIVE chunking against the analytic roofline cost model: with enough prefill work queued, the
// iteration's predicted compute time (decodes and every prefill piece included) stays near the target.
#include "sim/serving/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "cost_models/roofline.h"
#include "gtest/gtest.h"
#include "sim/serving/engine.h"
#include "sim/serving/observer.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"
#include "util/percentile.h"

namespace kvsim {
namespace {

class IterationLog : public EngineObserver {
 public:
  void OnIteration(const IterationRecord& record) override { records.push_back(record); }
  std::vector<IterationRecord> records;
};

std::vector<IterationRecord> RunAdaptive(int64_t target_ns, int32_t max_batched_tokens) {
  proto::ExperimentConfig overrides;  // Llama-3.1-8B on one H200 (the defaults), roofline
  overrides.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_ADAPTIVE);
  overrides.mutable_scheduler()->set_target_iteration_ns(target_ns);
  overrides.mutable_scheduler()->set_max_num_batched_tokens(max_batched_tokens);
  const proto::ExperimentConfig config = TestConfig(40000, overrides);
  auto cost = RooflineCostModel::Create(config);
  EXPECT_TRUE(cost.ok()) << cost.status();
  // 32 prompts of 6000 tokens, 64 output tokens each, arriving 1 ms apart: far more prefill than one
  // iteration's target holds, so prefills of several requests share iterations with growing decodes.
  std::vector<Request> requests;
  for (int i = 0; i < 32; ++i) requests.push_back(MakeRequest(i + 1, int64_t{i} * 1000000, 6000, 64));
  VectorTraceReader reader(std::move(requests), TraceInfo{"adaptive", "vector", 0});
  auto engine = Engine::Create(config, cost->get(), 0);
  EXPECT_TRUE(engine.ok()) << engine.status();
  IterationLog log;
  (*engine)->AddObserver(&log);
  const absl::Status run = (*engine)->Run(&reader);
  EXPECT_TRUE(run.ok()) << run;
  return log.records;
}

// Compute times of the iterations that ran prefill while more prefill work waited.
std::vector<int64_t> LoadedPrefillTimes(const std::vector<IterationRecord>& records) {
  std::vector<int64_t> times;
  for (const IterationRecord& r : records) {
    if (r.prefill_tokens > 0 && r.queued_requests > 0) times.push_back(r.compute_ns);
  }
  std::sort(times.begin(), times.end());
  return times;
}

TEST(SchedulerAdaptiveTest, HoldsTheTargetAcrossRequests) {
  constexpr int64_t kTargetNs = 50'000'000;
  const std::vector<int64_t> times = LoadedPrefillTimes(RunAdaptive(kTargetNs, 8192));
  ASSERT_GE(times.size(), 15u);
  // The budget alone (8192 tokens) would run far over 50 ms on this model: the target, not the budget,
  // bounds these iterations. Never above the target; p10 and p90 within 10% of it.
  EXPECT_LE(times.back(), kTargetNs);
  EXPECT_GE(NearestRank(times, 0.9), kTargetNs * 0.9);
  EXPECT_LE(NearestRank(times, 0.9), kTargetNs * 1.1);
  EXPECT_GE(NearestRank(times, 0.1), kTargetNs * 0.9);
}

TEST(SchedulerAdaptiveTest, TheBudgetStillCapsTokens) {
  // A 1 s target is never reached by 2048 tokens: every loaded iteration runs the whole budget.
  const std::vector<IterationRecord> records = RunAdaptive(1'000'000'000, 2048);
  int64_t loaded = 0;
  for (const IterationRecord& r : records) {
    if (r.prefill_tokens > 0 && r.queued_requests > 0) {
      ++loaded;
      EXPECT_EQ(r.prefill_tokens + r.decode_tokens, 2048) << "iteration at " << r.start_ns;
    }
  }
  EXPECT_GT(loaded, 50);
}

// The gaps each finished request carries, with and without EngineOptions::record_token_gaps.
class GapLog : public EngineObserver {
 public:
  void OnRequestFinished(SimTime, const RequestState& state) override {
    gaps.push_back(state.token_gaps_ns);
    outputs.push_back(state.request.output_tokens);
  }
  std::vector<std::vector<int64_t>> gaps;
  std::vector<int64_t> outputs;
};

GapLog RunGaps(bool record_token_gaps) {
  const proto::ExperimentConfig config = TestConfig(40000);
  auto cost = RooflineCostModel::Create(config);
  EXPECT_TRUE(cost.ok()) << cost.status();
  std::vector<Request> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(MakeRequest(i + 1, int64_t{i} * 1000000, 100, 5 + 3 * i));
  VectorTraceReader reader(std::move(requests), TraceInfo{"gaps", "vector", 0});
  auto engine = Engine::Create(config, cost->get(), 0, EngineOptions{.record_token_gaps = record_token_gaps});
  EXPECT_TRUE(engine.ok()) << engine.status();
  GapLog log;
  (*engine)->AddObserver(&log);
  const absl::Status run = (*engine)->Run(&reader);
  EXPECT_TRUE(run.ok()) << run;
  return log;
}

TEST(SchedulerTokenGapsTest, StoredOnlyWhenRecorded) {
  const GapLog recorded = RunGaps(true);
  ASSERT_EQ(recorded.gaps.size(), 4u);
  for (size_t i = 0; i < recorded.gaps.size(); ++i) {
    // One gap between each pair of consecutive output tokens, each at least one iteration long.
    ASSERT_EQ(static_cast<int64_t>(recorded.gaps[i].size()), recorded.outputs[i] - 1) << i;
    for (int64_t gap : recorded.gaps[i]) EXPECT_GT(gap, 0);
  }
  const GapLog off = RunGaps(false);
  ASSERT_EQ(off.gaps.size(), 4u);
  for (const std::vector<int64_t>& gaps : off.gaps) EXPECT_TRUE(gaps.empty());
}

}  // namespace
}  // namespace kvsim
