// The gain decomposition sums to the measured TTFT difference of two runs (the metrics collector's mean
// TTFT, computed independently from first-token times) on a trace with shared prefixes, misses and queueing.
#include "sim/serving/ttft_decomposition.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "cost_models/roofline.h"
#include "gtest/gtest.h"
#include "sim/serving/engine.h"
#include "sim/serving/metrics.h"
#include "sim/serving/testing/test_util.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

// 120 requests, 4 ms apart: 8 document families of 40-120 shared blocks, then 4-30 private blocks.
std::vector<Request> SharedDocuments() {
  std::vector<Request> requests;
  uint64_t fresh = 1'000'000;
  for (uint64_t i = 0; i < 120; ++i) {
    const uint64_t family = (i * 5) % 8;
    const int64_t shared = 40 + static_cast<int64_t>((family * 13) % 81);
    const int64_t own = 4 + static_cast<int64_t>((i * 7) % 27);
    std::vector<uint64_t> hashes;
    for (int64_t k = 0; k < shared; ++k) hashes.push_back(family * 1000 + k + 1);
    for (int64_t k = 0; k < own; ++k) hashes.push_back(fresh++);
    requests.push_back(
        MakeRequest(i + 1, static_cast<int64_t>(i) * 4'000'000, 16 * static_cast<int64_t>(hashes.size()), 32, hashes));
  }
  return requests;
}

struct RunOutcome {
  TtftParts parts;
  double measured_ttft_ms = 0;
};

RunOutcome Replay(const proto::ExperimentConfig& overrides) {
  const proto::ExperimentConfig config = TestConfig(1500, overrides);  // far below the working set
  auto cost = RooflineCostModel::Create(config);
  EXPECT_TRUE(cost.ok()) << cost.status();
  VectorTraceReader reader(SharedDocuments(), TraceInfo{"docs", "vector", 16});
  auto engine = Engine::Create(config, cost->get(), 16);
  EXPECT_TRUE(engine.ok()) << engine.status();
  MetricsCollector metrics(100'000'000, {.slo = config.slo()});
  TtftDecomposition decomposition(cost->get());
  (*engine)->AddObserver(&metrics);
  (*engine)->AddObserver(&decomposition);
  const absl::Status run = (*engine)->Run(&reader);
  EXPECT_TRUE(run.ok()) << run;
  absl::StatusOr<proto::Results> results = metrics.TakeResults();
  EXPECT_TRUE(results.ok()) << results.status();
  return {decomposition.MeanParts(), results.ok() ? results->summary().ttft_ms().mean() : 0};
}

TEST(TtftDecompositionTest, PartsSumToTheMeasuredDifference) {
  proto::ExperimentConfig base;   // prefix reuse, FIXED 8192-token chunks
  proto::ExperimentConfig other;  // segment reuse, adaptive chunks, a host tier
  other.mutable_cache()->set_reuse_mode(proto::REUSE_MODE_SEGMENT);
  other.mutable_scheduler()->set_chunking(proto::CHUNKING_MODE_ADAPTIVE);
  proto::TierConfig* host = other.mutable_cache()->add_lower_tiers();
  host->set_kind(proto::TIER_KIND_HOST);
  host->set_capacity_bytes(int64_t{4} << 30);
  const RunOutcome a = Replay(base);
  const RunOutcome b = Replay(other);
  ASSERT_EQ(a.parts.requests, 120);
  for (const RunOutcome* r : {&a, &b}) {
    EXPECT_NEAR(r->parts.SumOfParts(), r->measured_ttft_ms, 1e-6 * r->measured_ttft_ms);
    EXPECT_GE(r->parts.chunk_wait_ms, -1e-9);  // iterations of one request never overlap
    EXPECT_GT(r->parts.prefill_attention_ms, 0);
  }
  EXPECT_GT(a.parts.queueing_ms, 0);
  EXPECT_GT(b.parts.reload_ms, 0);
  const double measured = a.measured_ttft_ms - b.measured_ttft_ms;
  ASSERT_GT(std::abs(measured), 1.0);
  const TtftParts gain = Difference(a.parts, b.parts);
  EXPECT_NEAR(gain.SumOfParts(), measured, 0.01 * std::abs(measured));
  EXPECT_FALSE(FormatGainDecomposition(a.parts, b.parts).empty());
}

// Results.ttft_breakdown carries every field: distinct values survive ToProto, a serialised round trip
// and FromProto unchanged.
// A chunk priced alone spends `context` ns in attention and 1000 + 10 x tokens ns in everything else;
// the model counts its estimates.
class ChunkCosts final : public CostModel {
 public:
  std::string Describe() const override { return "chunk costs"; }
  absl::StatusOr<int64_t> IterationTimeNs(const BatchShape& batch) const override {
    absl::StatusOr<CostBreakdown> b = IterationBreakdown(batch);
    if (!b.ok()) return b.status();
    return b->total_ns;
  }
  absl::StatusOr<CostBreakdown> IterationBreakdown(const BatchShape& batch) const override {
    CostBreakdown b;
    b.overhead_ns = 1000;
    for (const SequenceWork& s : batch.sequences) {
      b.attention_ns += s.context_tokens;
      b.linear_ns += 10 * s.new_tokens;
    }
    b.total_ns = b.overhead_ns + b.attention_ns + b.linear_ns;
    return b;
  }
  absl::StatusOr<CostBreakdown> EstimateBreakdown(const BatchShape& batch) const override {
    ++estimates;
    return IterationBreakdown(batch);
  }
  int64_t TransferTimeNs(int64_t, const proto::TierConfig&) const override { return 0; }
  mutable int64_t estimates = 0;
};

// Each prefill chunk's attention share is its own context's, also when more (context, tokens) pairs
// occur than the decomposition memoises and when pairs repeat: 6,000 requests, each one chunk alone in
// an iteration of 5,000 + i ns, at 97 x 50 = 4,850 distinct pairs.
TEST(TtftDecompositionTest, EveryChunkIsPricedAloneAtItsOwnContext) {
  ChunkCosts costs;
  TtftDecomposition decomposition(&costs);
  RequestPool pool;
  double expected_attention_ns = 0, expected_linear_ns = 0;
  constexpr int kRequests = 6000;
  for (int i = 0; i < kRequests; ++i) {
    const int32_t slot = pool.Allocate();
    RequestState& state = pool.at(slot);
    state.request.request_id = static_cast<uint64_t>(i);
    const int64_t context = 16 * (i % 97), tokens = 1 + i % 50;
    state.request.input_tokens = context + tokens;
    state.AddComputeRun(context, tokens, 1);
    IterationPlan plan;
    plan.pieces.push_back({slot, tokens, /*prefill=*/true});
    plan.prefill_tokens = tokens;
    plan.compute_ns = 5000 + i;
    IterationRecord record;
    record.duration_ns = plan.compute_ns;
    record.plan = &plan;
    record.pool = &pool;
    decomposition.OnIteration(record);
    const double fraction = static_cast<double>(context) / static_cast<double>(context + 1000 + 10 * tokens);
    expected_attention_ns += plan.compute_ns * fraction;
    expected_linear_ns += plan.compute_ns * (1 - fraction);
    state.arrival_ns = state.first_scheduled_ns = 0;
    state.first_token_ns = plan.compute_ns;
    decomposition.OnRequestFinished(plan.compute_ns, state);
    pool.Free(slot);
  }
  const TtftParts parts = decomposition.MeanParts();
  EXPECT_EQ(parts.requests, kRequests);
  EXPECT_NEAR(parts.prefill_attention_ms, expected_attention_ns / kRequests / 1e6, 1e-12);
  EXPECT_NEAR(parts.prefill_linear_ms, expected_linear_ns / kRequests / 1e6, 1e-12);
  EXPECT_LT(costs.estimates, kRequests);  // repeated pairs are not priced again
  EXPECT_GE(costs.estimates, 4850);
}

TEST(TtftDecompositionTest, ProtoRoundTripKeepsEveryField) {
  TtftParts parts;
  parts.queueing_ms = 1.5;
  parts.reload_ms = 2.25;
  parts.prefill_linear_ms = 3.125;
  parts.prefill_attention_ms = 4.0625;
  parts.co_batched_ms = 5.5;
  parts.chunk_wait_ms = -0.75;
  parts.ttft_ms = 15.6875;
  parts.reused_tokens = 96.5;
  parts.recomputed_tokens = 31.25;
  parts.requests = 7;
  proto::TtftBreakdown parsed;
  ASSERT_TRUE(parsed.ParseFromString(ToProto(parts).SerializeAsString()));
  const TtftParts back = FromProto(parsed);
  EXPECT_EQ(back.queueing_ms, 1.5);
  EXPECT_EQ(back.reload_ms, 2.25);
  EXPECT_EQ(back.prefill_linear_ms, 3.125);
  EXPECT_EQ(back.prefill_attention_ms, 4.0625);
  EXPECT_EQ(back.co_batched_ms, 5.5);
  EXPECT_EQ(back.chunk_wait_ms, -0.75);
  EXPECT_EQ(back.ttft_ms, 15.6875);
  EXPECT_EQ(back.reused_tokens, 96.5);
  EXPECT_EQ(back.recomputed_tokens, 31.25);
  EXPECT_EQ(back.requests, 7);
}

}  // namespace
}  // namespace kvsim
