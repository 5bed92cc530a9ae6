#include "cost_models/table_model.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/synthetic_table.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

proto::ExperimentConfig Config() {
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(proto::ExperimentConfig(), "test");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

// A table for Llama-3.1-8B on H200 written to disk, and a config that names it.
proto::ExperimentConfig TableConfig() {
  proto::ExperimentConfig config = Config();
  static const std::string* path = [&config] {
    auto* p = new std::string(TempPath("h200.csv"));
    absl::StatusOr<proto::CalibrationTable> table = SynthesizeTable(config, SynthOptions());
    EXPECT_TRUE(table.ok()) << table.status();
    EXPECT_TRUE(WriteCalibrationTable(*p, *table).ok());
    return p;
  }();
  config.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_TABLE);
  config.mutable_cost_model()->set_table_path(*path);
  return config;
}

std::unique_ptr<TableCostModel> Model(const proto::ExperimentConfig& config) {
  absl::StatusOr<std::unique_ptr<TableCostModel>> model = TableCostModel::Create(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

SequenceWork Piece(int64_t context, int64_t new_tokens, bool samples = true, int32_t segments = 1) {
  SequenceWork s;
  s.context_tokens = context;
  s.new_tokens = new_tokens;
  s.samples_token = samples;
  s.num_segments = segments;
  return s;
}

BatchShape Batch(std::initializer_list<SequenceWork> pieces) {
  BatchShape b;
  b.sequences = pieces;
  return b;
}

KernelQuery Decode(int64_t batch, int64_t context, int64_t segments = 1) {
  KernelQuery q;
  q.kind = proto::KERNEL_KIND_DECODE_ATTENTION;
  q.batch = batch;
  q.context_tokens = context;
  q.num_segments = segments;
  q.num_heads = 32;
  q.num_kv_heads = 8;
  q.head_dim = 128;
  return q;
}

TEST(TableModelTest, RegisteredAsTableAndSaysWhatTableItUses) {
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(TableConfig());
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string description = (*model)->Describe();
  EXPECT_NE(description.find("h200.csv"), std::string::npos) << description;
  EXPECT_NE(description.find("synthetic from datasheet"), std::string::npos) << description;
  EXPECT_NE(description.find("H200-SXM"), std::string::npos) << description;
}

TEST(TableModelTest, MissingTableIsAnErrorNamingIt) {
  proto::ExperimentConfig config = TableConfig();
  config.mutable_cost_model()->set_table_path(TempPath("nowhere.csv"));
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(config);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("nowhere.csv"), absl::string_view::npos);
}

TEST(TableModelTest, MixedBatchIsTheSumOfItsPartsPlusOverhead) {
  proto::ExperimentConfig config = TableConfig();
  config.mutable_cost_model()->set_iteration_overhead_ns(7000);
  auto model = Model(config);
  const SequenceWork d1 = Piece(3000, 1), d2 = Piece(70000, 1), chunk = Piece(512, 1024, false);
  const CostBreakdown mixed = *model->IterationBreakdown(Batch({d1, d2, chunk}));
  // Attention: the decodes as one batch-2 kernel, plus the chunk's own kernel.
  EXPECT_NEAR(mixed.attention_ns,
              model->IterationBreakdown(Batch({d1, d2}))->attention_ns +
                  model->IterationBreakdown(Batch({chunk}))->attention_ns,
              2);
  // GEMMs: over all 1026 new tokens at once.
  EXPECT_EQ(mixed.linear_ns, model->IterationBreakdown(Batch({Piece(0, 1026, false)}))->linear_ns);
  EXPECT_EQ(mixed.lm_head_ns, model->IterationBreakdown(Batch({d1, d2}))->lm_head_ns);
  EXPECT_EQ(mixed.overhead_ns, 7000);
  EXPECT_EQ(mixed.total_ns, mixed.linear_ns + mixed.lm_head_ns + mixed.attention_ns + mixed.allreduce_ns + 7000);
  EXPECT_EQ(*model->IterationTimeNs(Batch({d1, d2, chunk})), mixed.total_ns);
}

TEST(TableModelTest, EachDecodePaysItsOwnContextNotTheMean) {
  auto model = Model(TableConfig());
  const CostBreakdown b = *model->IterationBreakdown(Batch({Piece(1000, 1), Piece(100000, 1)}));
  // 32 layers x (T(2, 1000) + T(2, 100000)) / 2.
  const double expected =
      32 * (model->table().Predict(Decode(2, 1000)).seconds + model->table().Predict(Decode(2, 100000)).seconds) / 2;
  EXPECT_NEAR(b.attention_ns, expected * 1e9, 1.0);
}

TEST(TableModelTest, SegmentsWithoutTheirOwnSeriesPayAttentionPlusMerge) {
  auto model = Model(TableConfig());
  const CostBreakdown b = *model->IterationBreakdown(Batch({Piece(8192, 1, true, 4)}));
  KernelQuery merge;
  merge.kind = proto::KERNEL_KIND_SEGMENT_MERGE;
  merge.batch = 1;
  merge.num_segments = 4;
  merge.num_heads = 32;
  merge.head_dim = 128;
  const double expected =
      32 * (model->table().Predict(Decode(1, 8192)).seconds + model->table().Predict(merge).seconds);
  EXPECT_NEAR(b.attention_ns, expected * 1e9, 1.0);
  EXPECT_GT(b.attention_ns, model->IterationBreakdown(Batch({Piece(8192, 1)}))->attention_ns);
}

TEST(TableModelTest, ExtrapolationIsCountedAndReported) {
  auto model = Model(TableConfig());
  ASSERT_TRUE(model->IterationTimeNs(Batch({Piece(4096, 1)})).ok());
  EXPECT_EQ(model->num_extrapolated(), 0);
  EXPECT_EQ(model->Accuracy().extrapolated_predictions(), 0);
  // 1M tokens of context: beyond the table's 128K.
  ASSERT_TRUE(model->IterationTimeNs(Batch({Piece(1 << 20, 1)})).ok());
  EXPECT_EQ(model->num_extrapolated(), 1);
  EXPECT_EQ(model->Accuracy().extrapolated_predictions(), 1);
  EXPECT_EQ(model->Accuracy().unmeasured_predictions(), 0);
}

TEST(TableModelTest, EstimatesArePricedButNotCounted) {
  auto model = Model(TableConfig());
  ASSERT_TRUE(model->IterationTimeNs(Batch({Piece(4096, 1)})).ok());
  const std::string before = model->Accuracy().SerializeAsString();
  const int64_t predictions = model->num_predictions();
  // 1M tokens of context: beyond the table's 128K, extrapolated were it counted.
  absl::StatusOr<CostBreakdown> estimate = model->EstimateBreakdown(Batch({Piece(1 << 20, 1)}));
  ASSERT_TRUE(estimate.ok()) << estimate.status();
  ASSERT_TRUE(model->RecomputeTimeNs(4096, 512).ok());
  EXPECT_EQ(model->Accuracy().SerializeAsString(), before);
  EXPECT_EQ(model->num_predictions(), predictions);
  absl::StatusOr<CostBreakdown> run = model->IterationBreakdown(Batch({Piece(1 << 20, 1)}));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->total_ns, estimate->total_ns);
  EXPECT_GT(model->num_predictions(), predictions);
  EXPECT_EQ(model->num_extrapolated(), 1);
}

// One series of five host-to-device copies (bytes -> ns): 1000 -> 10, 2000 -> 20, 4000 -> 50, 8000 -> 80,
// 16000 -> 160.
proto::CalibrationTable CopyTable() {
  proto::CalibrationTable table;
  const int64_t bytes[] = {1000, 2000, 4000, 8000, 16000};
  const double ns[] = {10, 20, 50, 80, 160};
  for (int i = 0; i < 5; ++i) {
    proto::CalibrationPoint* p = table.add_points();
    p->set_kind(proto::KERNEL_KIND_HOST_DEVICE_COPY);
    p->mutable_shape()->set_bytes(bytes[i]);
    p->set_median_ns(ns[i]);
  }
  return table;
}

// A host transfer priced from the table's measured copies counts as a prediction when it is made
// (TransferTimeNs), not when it is only estimated (a reload-or-recompute decision, a restore estimate).
TEST(TableModelTest, EstimatedTransfersCostTheSameAndAreNotCounted) {
  absl::StatusOr<std::unique_ptr<TableCostModel>> model = TableCostModel::FromTable(Config(), CopyTable(), "hand.csv");
  ASSERT_TRUE(model.ok()) << model.status();
  proto::TierConfig host;
  host.set_kind(proto::TIER_KIND_HOST);
  host.set_latency_ns(1000);
  const std::string before = (*model)->Accuracy().SerializeAsString();
  const int64_t estimate = (*model)->EstimateTransferTimeNs(8000, host);
  EXPECT_EQ(estimate, 1000 + 80);  // the latency plus the measured 8000-byte copy
  EXPECT_EQ((*model)->Accuracy().SerializeAsString(), before);
  EXPECT_EQ((*model)->TransferTimeNs(8000, host), estimate);
  EXPECT_EQ((*model)->Accuracy().kernel_predictions(), 1);
}

TEST(TableModelTest, AccuracyIsTheTablesHeldOutErrorPlusThisRunsCounts) {
  // One series of five host-to-device copies; the held-out split (every 5th point from the middle of
  // the first stride) holds out the third. Its neighbours (2000 B, 20 ns) and (8000 B, 80 ns) predict
  // exp((ln 20 + ln 80) / 2) = 40 ns in log-log space at 4000 B, against 50 ns measured: 20% error.
  absl::StatusOr<std::unique_ptr<TableCostModel>> model = TableCostModel::FromTable(Config(), CopyTable(), "hand.csv");
  ASSERT_TRUE(model.ok()) << model.status();
  proto::CostModelAccuracy a = (*model)->Accuracy();
  EXPECT_TRUE(a.calibrated());
  EXPECT_FALSE(a.synthetic_table());
  EXPECT_EQ(a.heldout_points(), 1);
  EXPECT_NEAR(a.heldout_median_error(), 0.2, 1e-9);
  EXPECT_NEAR(a.heldout_p95_error(), 0.2, 1e-9);
  EXPECT_NEAR(a.heldout_worst_error(), 0.2, 1e-9);
  EXPECT_EQ(a.kernel_predictions(), 0);
  // The table has no GEMM or attention series: every kernel of an iteration is unmeasured.
  ASSERT_TRUE((*model)->IterationTimeNs(Batch({Piece(4096, 1)})).ok());
  a = (*model)->Accuracy();
  EXPECT_GT(a.kernel_predictions(), 0);
  EXPECT_EQ(a.unmeasured_predictions(), a.kernel_predictions());
  EXPECT_EQ(a.extrapolated_predictions(), a.kernel_predictions());
  // The bundled-style synthetic table says it is synthetic.
  EXPECT_TRUE(Model(TableConfig())->Accuracy().synthetic_table());
}

TEST(TableModelTest, PerKindErrorIsWeightedByTheTimeThisRunSpentInEachKind) {
  auto model = Model(TableConfig());
  const BatchShape batch = Batch({Piece(4096, 1), Piece(0, 512)});
  absl::StatusOr<CostBreakdown> b = model->IterationBreakdown(batch);
  ASSERT_TRUE(b.ok()) << b.status();
  const proto::CostModelAccuracy a = model->Accuracy();
  // One GPU: GEMMs and attention, never an all-reduce (whose error must not colour a TP-1 run).
  double fractions = 0, median = 0, attention = 0;
  for (const proto::KernelKindAccuracy& k : a.kinds()) {
    EXPECT_NE(k.kind(), "all_reduce");
    fractions += k.time_fraction();
    median += k.time_fraction() * k.heldout_median_error();
    if (k.kind() == "decode_attention" || k.kind() == "prefill_attention") attention += k.time_fraction();
  }
  EXPECT_NEAR(fractions, 1, 1e-12);
  EXPECT_NEAR(a.time_weighted_median_error(), median, 1e-12);
  // The shares are the breakdown's: attention's share of the kernel time (all but the fixed overhead).
  EXPECT_NEAR(attention, static_cast<double>(b->attention_ns) / (b->total_ns - b->overhead_ns), 1e-3);
  EXPECT_FALSE(a.per_kind_only());
}

TEST(TableModelTest, FourBitKvDecodeIsNotJustFewerBytes) {
  proto::ExperimentConfig config = TableConfig();
  auto bf16 = Model(config);
  config.mutable_cost_model()->set_kv_quant_bits(4);
  auto int4 = Model(config);
  const BatchShape batch = Batch({Piece(32768, 1), Piece(32768, 1), Piece(32768, 1), Piece(32768, 1)});
  const double ratio = static_cast<double>(int4->IterationBreakdown(batch)->attention_ns) /
                       bf16->IterationBreakdown(batch)->attention_ns;
  // Bytes alone would give 0.53125 / 2 = 0.27; the dequantisation makes it compute-bound (~0.45).
  EXPECT_GT(ratio, 0.35);
  EXPECT_LT(ratio, 0.6);
}

TEST(TableModelTest, RecomputeByKvProjectionIsCheaperAndPositionIndependent) {
  proto::ExperimentConfig config = TableConfig();
  auto full = Model(config);
  config.mutable_cost_model()->set_recompute_cost(proto::RECOMPUTE_COST_KV_PROJECTION);
  auto projection = Model(config);
  EXPECT_GT(*full->RecomputeTimeNs(65536, 16), *full->RecomputeTimeNs(0, 16));
  EXPECT_EQ(*projection->RecomputeTimeNs(65536, 16), *projection->RecomputeTimeNs(0, 16));
  EXPECT_LT(*projection->RecomputeTimeNs(65536, 16), *full->RecomputeTimeNs(65536, 16));
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

proto::CalibrationPoint SegmentedDecode(int64_t batch, int64_t context, int32_t segments, double ns) {
  proto::CalibrationPoint p;
  p.set_kind(proto::KERNEL_KIND_DECODE_ATTENTION);
  p.set_dtype("bf16");
  p.mutable_shape()->set_batch(batch);
  p.mutable_shape()->set_query_tokens(1);
  p.mutable_shape()->set_context_tokens(context);
  p.mutable_shape()->set_num_segments(segments);
  p.mutable_shape()->set_num_heads(32);
  p.mutable_shape()->set_num_kv_heads(8);
  p.mutable_shape()->set_head_dim(128);
  p.set_median_ns(ns);
  return p;
}

TEST(TableModelTest, UnmeasuredSegmentCountsInterpolateBetweenMeasuredOnes) {
  // Decode series measured with 1, 2 and 8 segments: t = 10 us x (1 + 0.1 x segments) at every shape.
  proto::CalibrationTable table;
  for (int32_t s : {1, 2, 8}) {
    for (int64_t b : {1, 2}) {
      for (int64_t l : {1024, 8192}) *table.add_points() = SegmentedDecode(b, l, s, 10000 * (1 + 0.1 * s));
    }
  }
  absl::StatusOr<std::unique_ptr<TableCostModel>> model = TableCostModel::FromTable(Config(), table, "seg");
  ASSERT_TRUE(model.ok()) << model.status();
  // 8 segments: measured, 18 us per layer. 4 segments: halfway between 2 and 8 in log(segments), so
  // sqrt(12 x 18) = 14.70 us per layer; 32 layers.
  EXPECT_NEAR((*model)->IterationBreakdown(Batch({Piece(1024, 1, true, 8)}))->attention_ns, 32 * 18000.0, 1.0);
  EXPECT_NEAR((*model)->IterationBreakdown(Batch({Piece(1024, 1, true, 4)}))->attention_ns,
              32 * std::sqrt(12000.0 * 18000.0), 1.0);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(TableModelTest, SharedPrefixInL2CountsUniqueBytes) {
  auto model = Model(TableConfig());
  SequenceWork a = Piece(5000, 1), b = Piece(5000, 1);
  a.prefix_id = b.prefix_id = 3;
  a.shared_prefix_tokens = b.shared_prefix_tokens = 4000;  // 16.4 MB per layer: fits in 50 MiB of L2
  const double expected =
      32 * (model->table().Predict(Decode(2, 5000)).seconds + model->table().Predict(Decode(2, 1000)).seconds) / 2;
  EXPECT_NEAR(model->IterationBreakdown(Batch({a, b}))->attention_ns, expected * 1e9, 1.0);
}

}  // namespace
}  // namespace kvsim
