// The "replay" sweep mode: each point's serving summary equals a replay run directly with the config the
// point describes (built here by hand, not through the grid), and cache and replay points mix in one grid.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "gtest/gtest.h"
#include "sim/serving/replay.h"
#include "sim/sweep/serving_mode.h"
#include "sim/sweep/sweep.h"
#include "traces/trace_reader.h"

namespace kvsim {
namespace {

constexpr char kTrace[] = "traces/data/mooncake_synthetic.jsonl";

std::string TempDir(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

proto::ExperimentConfig Base() {
  proto::ExperimentConfig config;
  config.mutable_workload()->set_max_requests(400);  // keeps the test fast
  return config;
}

// A replay's summary and its cost model's accuracy after the run.
struct Direct {
  proto::Summary summary;
  proto::CostModelAccuracy accuracy;
};

Direct DirectReplay(const std::string& policy, int64_t capacity_blocks) {
  proto::ExperimentConfig raw = Base();
  raw.mutable_eviction()->set_name(policy);
  raw.mutable_cache()->set_gpu_capacity_blocks(capacity_blocks);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "direct");
  EXPECT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<CostModel>> cost = CreateCostModel(*config);
  EXPECT_TRUE(cost.ok()) << cost.status();
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(kTrace, {});
  EXPECT_TRUE(reader.ok()) << reader.status();
  ReplayOptions options;
  options.timeline = false;
  absl::StatusOr<ReplayOutput> output = RunReplay(*config, **cost, reader->get(), options);
  EXPECT_TRUE(output.ok()) << output.status();
  return {output->results.summary(), (*cost)->Accuracy()};
}

int Column(const Table& table, const std::string& name) {
  const auto& columns = table.columns();
  auto it = std::find(columns.begin(), columns.end(), name);
  EXPECT_NE(it, columns.end()) << name;
  return static_cast<int>(it - columns.begin());
}

TEST(SweepReplayTest, PointsEqualDirectReplaysOfTheSameConfig) {
  absl::StatusOr<std::vector<GridAxis>> axes = ParseGrid("policy=lru,fifo capacity_blocks=300,900");
  ASSERT_TRUE(axes.ok()) << axes.status();
  SweepOptions options;
  options.out_dir = TempDir("replay_sweep");
  options.trace_path = kTrace;
  options.default_mode = "replay";
  absl::StatusOr<SweepSummary> summary = RunSweep(*axes, Base(), options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->points_run, 4);
  absl::StatusOr<Table> table = MergeSweep({options.out_dir}, "");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows().size(), 4u);
  const int policy = Column(*table, "axis.policy");
  const int capacity = Column(*table, "axis.capacity_blocks");
  const int finished = Column(*table, "finished_requests");
  const int ttft = Column(*table, "ttft_p50_ms");
  const int evicted = Column(*table, "evicted_blocks");
  const int hits = Column(*table, "hit_ratio");
  for (const std::vector<std::string>& row : table->rows()) {
    SCOPED_TRACE(row[policy] + " " + row[capacity]);
    const Direct direct = DirectReplay(row[policy], std::stoll(row[capacity]));
    EXPECT_EQ(row[finished], std::to_string(direct.summary.finished_requests()));
    EXPECT_EQ(row[finished], "400");
    EXPECT_EQ(row[ttft], FormatDouble(direct.summary.ttft_ms().p50()));
    EXPECT_EQ(row[evicted], std::to_string(direct.summary.evicted_blocks()));
    EXPECT_EQ(row[hits], "");  // cache-replay columns stay empty for replay points
    // The default model on H200 is the fitted one: each point carries its time-weighted held-out error and
    // its extrapolated predictions, as the direct run's model reports them.
    ASSERT_TRUE(direct.accuracy.per_kind_only());
    ASSERT_GT(direct.accuracy.heldout_median_error(), 0);
    EXPECT_EQ(row[Column(*table, "cost_model_heldout_median_error")],
              FormatDouble(direct.accuracy.heldout_median_error()));
    EXPECT_EQ(row[Column(*table, "cost_model_extrapolated_predictions")],
              std::to_string(direct.accuracy.extrapolated_predictions()));
  }
  // A smaller GPU cache evicts more blocks under the same policy.
  EXPECT_GT(std::stoll(table->rows()[0][evicted]), std::stoll(table->rows()[1][evicted]));
}

TEST(SweepReplayTest, TablePointsCarryTheTablesHeldOutErrorAndTheirExtrapolations) {
  proto::ExperimentConfig base = Base();
  base.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_TABLE);
  base.mutable_cost_model()->set_table_path("cost_models/tables/h200_llama-3.1-8b.csv");
  absl::StatusOr<std::vector<GridAxis>> axes = ParseGrid("capacity_blocks=600");
  ASSERT_TRUE(axes.ok()) << axes.status();
  SweepOptions options;
  options.out_dir = TempDir("table_sweep");
  options.trace_path = kTrace;
  options.default_mode = "replay";
  ASSERT_TRUE(RunSweep(*axes, base, options).ok());
  absl::StatusOr<Table> table = MergeSweep({options.out_dir}, "");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows().size(), 1u);
  // The same run made directly: its model's accuracy after the replay.
  base.mutable_cache()->set_gpu_capacity_blocks(600);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(base, "direct");
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<CostModel>> cost = CreateCostModel(*config);
  ASSERT_TRUE(cost.ok()) << cost.status();
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(kTrace, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  ReplayOptions replay_options;
  replay_options.timeline = false;
  ASSERT_TRUE(RunReplay(*config, **cost, reader->get(), replay_options).ok());
  const proto::CostModelAccuracy accuracy = (*cost)->Accuracy();
  ASSERT_TRUE(accuracy.calibrated());
  ASSERT_GT(accuracy.heldout_points(), 0);
  const std::vector<std::string>& row = table->rows()[0];
  EXPECT_EQ(row[Column(*table, "cost_model_heldout_median_error")], FormatDouble(accuracy.heldout_median_error()));
  EXPECT_EQ(row[Column(*table, "cost_model_heldout_p95_error")], FormatDouble(accuracy.heldout_p95_error()));
  EXPECT_EQ(row[Column(*table, "cost_model_extrapolated_predictions")],
            std::to_string(accuracy.extrapolated_predictions()));
}

TEST(SweepReplayTest, CacheAndReplayPointsMixInOneGrid) {
  absl::StatusOr<std::vector<GridAxis>> axes = ParseGrid("mode=cache,replay capacity_blocks=600");
  ASSERT_TRUE(axes.ok()) << axes.status();
  SweepOptions options;
  options.out_dir = TempDir("mixed_sweep");
  options.trace_path = kTrace;
  ASSERT_TRUE(RunSweep(*axes, Base(), options).ok());
  absl::StatusOr<Table> table = MergeSweep({options.out_dir}, "");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows().size(), 2u);
  const int mode = Column(*table, "mode");
  const int finished = Column(*table, "finished_requests");
  const int hits = Column(*table, "hit_ratio");
  EXPECT_EQ(table->rows()[0][mode], "cache");
  EXPECT_NE(table->rows()[0][hits], "");
  EXPECT_EQ(table->rows()[0][finished], "");
  EXPECT_EQ(table->rows()[1][mode], "replay");
  EXPECT_EQ(table->rows()[1][hits], "");
  EXPECT_EQ(table->rows()[1][finished], "400");
}

TEST(SweepReplayTest, BadPointConfigIsAnError) {
  proto::SweepPointResult out;
  SweepPointContext context{Base(), kTrace, ""};
  context.config.mutable_scheduler()->set_max_num_seqs(-1);
  absl::Status status = RunServingSweepPoint(context, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("scheduler.max_num_seqs"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
