#include "cost_models/roofline.h"

#include <cmath>
#include <memory>

#include "config/experiment_config.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

// H200 preset figures: 4.8e12 B/s x 0.8 = 3.84e12 B/s; 989.5e12 FLOP/s x 0.7 = 692.65e12 FLOP/s;
// CUDA cores 67e12 x 0.7 = 46.9e12 op/s.
constexpr double kHbm = 4.8e12 * 0.8;
constexpr double kTensor = 989.5e12 * 0.7;
constexpr double kAlu = 67e12 * 0.7;
// Llama-3.1-8B: 32 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 128, intermediate 14336,
// vocab 128256. Weights per layer: QKV 4096 x 6144 + O 4096 x 4096 + gate/up 4096 x 28672 +
// down 14336 x 4096 = 25,165,824 + 16,777,216 + 117,440,512 + 58,720,256 = 218,103,808 parameters.
constexpr double kLayerParams = 218103808;
constexpr double kLmHeadParams = 4096.0 * 128256;

proto::ExperimentConfig Config(const std::string& text_overrides = "") {
  proto::ExperimentConfig config;
  config.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_ROOFLINE);  // the default on H200 is fitted
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return *resolved;
}

std::unique_ptr<RooflineCostModel> Model(const proto::ExperimentConfig& config) {
  absl::StatusOr<std::unique_ptr<RooflineCostModel>> model = RooflineCostModel::Create(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

BatchShape Batch(std::initializer_list<SequenceWork> pieces) {
  BatchShape batch;
  batch.sequences = pieces;
  return batch;
}

SequenceWork Piece(int64_t context, int64_t new_tokens, bool samples = true) {
  SequenceWork s;
  s.context_tokens = context;
  s.new_tokens = new_tokens;
  s.samples_token = samples;
  return s;
}

TEST(RooflineTest, SingleDecodeOfLlama8bOnH200IsBoundByWeightBytes) {
  auto model = Model(Config());
  absl::StatusOr<CostBreakdown> b = model->IterationBreakdown(Batch({Piece(1000, 1)}));
  ASSERT_TRUE(b.ok()) << b.status();
  // Linear: every weight byte once (2 bytes each) plus bf16 activations in and out of each GEMM for one
  // token: (6144 + 4096 + 4096 + 4096 + 28672 + 4096 + 4096 + 14336) x 2 = 139,264 bytes per layer.
  const double linear_bytes = 32 * (kLayerParams * 2 + 139264);  // 13,963,100,160 bytes
  EXPECT_NEAR(b->linear_ns, linear_bytes / kHbm * 1e9, 1.0);     // 3.636224 ms
  // LM head: 525,336,576 x 2 bytes + (128256 + 4096) x 2 activation bytes.
  EXPECT_NEAR(b->lm_head_ns, (kLmHeadParams * 2 + (128256 + 4096) * 2) / kHbm * 1e9, 1.0);
  // Attention per layer: KV of 1001 tokens read and 1 written, 2 x 8 x 128 = 2048 elements per token,
  // 2 bytes each, plus Q and O (2 x 32 x 128 x 2 bytes): 4,120,576 bytes; the CUDA-core dot products
  // (4 x 32 x 128 x 1001 = 16.4 MFLOP -> 0.35 us) are under the 1.07 us memory time.
  const double attention_bytes = (1002.0 * 2048) * 2 + 2 * 32 * 128 * 2;
  EXPECT_NEAR(b->attention_ns, 32 * attention_bytes / kHbm * 1e9, 1.0);  // 34.3 us
  EXPECT_EQ(b->allreduce_ns, 0);
  EXPECT_EQ(b->overhead_ns, 0);
  EXPECT_EQ(b->total_ns, b->linear_ns + b->lm_head_ns + b->attention_ns);
  // ~15.01 GB of weights streamed at 3.84 TB/s: about 3.94 ms in all. (The 16.06 GB of all 8.03e9
  // parameters would give 4.18 ms; the input embedding table is gathered, not streamed.)
  EXPECT_GT(b->total_ns, 3'900'000);
  EXPECT_LT(b->total_ns, 4'200'000);
  EXPECT_EQ(*model->IterationTimeNs(Batch({Piece(1000, 1)})), b->total_ns);
}

// The terms that depend only on token counts come from a table below 512 tokens and from the formula
// above: both sides of the edge must equal the per-operation formulas (each tested by hand above),
// summed over 80 layers and rounded to ns.
TEST(RooflineTest, TokenCountTermsAgreeWithTheFormulasAcrossTheTableEdge) {
  proto::ExperimentConfig config;
  config.set_model_preset("llama-3.1-70b-tp4");
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  auto model = Model(*resolved);
  const double layers = 80;
  for (int64_t tokens : {1, 2, 255, 511, 512, 513, 4096}) {
    SCOPED_TRACE(tokens);
    absl::StatusOr<CostBreakdown> b = model->IterationBreakdown(Batch({Piece(100, tokens)}));
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->linear_ns, std::llround(layers * model->LayerLinearSeconds(tokens) * 1e9));
    EXPECT_EQ(b->allreduce_ns, std::llround(layers * 2 * model->AllReduceSeconds(tokens) * 1e9));
    EXPECT_GT(b->allreduce_ns, 0);
    // `tokens` decodes sample `tokens` tokens: the LM head over that many rows.
    BatchShape decodes;
    decodes.sequences.assign(tokens, Piece(100, 1));
    b = model->IterationBreakdown(decodes);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->lm_head_ns, std::llround(model->LmHeadSeconds(tokens) * 1e9));
  }
}

TEST(RooflineTest, LongPrefillIsComputeBound) {
  auto model = Model(Config());
  absl::StatusOr<CostBreakdown> b = model->IterationBreakdown(Batch({Piece(0, 4096)}));
  ASSERT_TRUE(b.ok()) << b.status();
  // Linear: 2 x 4096 x 218,103,808 x 32 FLOPs = 5.717e13 at 692.65 TFLOP/s = 82.5 ms, against
  // 14 GB of weights = 3.6 ms of memory time: compute-bound (each GEMM has M = 4096 tokens).
  EXPECT_NEAR(b->linear_ns, 2 * 4096 * kLayerParams * 32 / kTensor * 1e9, 2.0);
  // Attention: causal pairs 4096 x 4097 / 2 = 8,390,656; 4 x 32 x 128 FLOPs each per layer.
  EXPECT_NEAR(b->attention_ns, 32 * 4.0 * 32 * 128 * 8390656 / kTensor * 1e9, 1.0);  // 6.35 ms
  // The LM head runs for the one sampled token only: memory-bound like the decode's.
  EXPECT_NEAR(b->lm_head_ns, (kLmHeadParams * 2 + (128256 + 4096) * 2) / kHbm * 1e9, 1.0);
}

TEST(RooflineTest, TensorParallelAllReduceByHand) {
  proto::ExperimentConfig config;
  config.set_model_preset("llama-3.1-70b-tp4");
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  auto model = Model(*resolved);
  // One decode token: ring all-reduce of 8192 x 2 bytes over 4 GPUs moves 2 x 3/4 x 16,384 = 24,576
  // bytes per GPU at 450e9 x 0.7 = 315e9 B/s = 78.02 ns; 2 per layer x 80 layers = 12,483 ns.
  absl::StatusOr<CostBreakdown> b = model->IterationBreakdown(Batch({Piece(100, 1)}));
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->allreduce_ns, 160 * 24576 / 315e9 * 1e9, 1.0);
  // With 1 us per ring step: 2 x (4 - 1) = 6 steps per all-reduce add 160 x 6 us = 960 us.
  resolved->mutable_device()->set_interconnect_latency_ns(1000);
  b = Model(*resolved)->IterationBreakdown(Batch({Piece(100, 1)}));
  EXPECT_NEAR(b->allreduce_ns, 960000 + 160 * 24576 / 315e9 * 1e9, 1.0);
  // Without NVLink the ring runs over PCIe: 64e9 x 0.7 = 44.8e9 B/s.
  resolved->mutable_device()->set_interconnect_latency_ns(0);
  resolved->mutable_device()->set_interconnect_bandwidth_bytes_per_s(0);
  b = Model(*resolved)->IterationBreakdown(Batch({Piece(100, 1)}));
  EXPECT_NEAR(b->allreduce_ns, 160 * 24576 / 44.8e9 * 1e9, 1.0);
}

TEST(RooflineTest, MonotoneInContextAndTokens) {
  auto model = Model(Config());
  int64_t last = 0;
  for (int64_t context = 0; context <= 200000; context += 997) {
    const int64_t ns = *model->IterationTimeNs(Batch({Piece(context, 1)}));
    EXPECT_GE(ns, last) << "context " << context;
    last = ns;
  }
  last = 0;
  for (int64_t tokens = 1; tokens <= 16384; tokens = tokens * 3 / 2 + 1) {
    const int64_t ns = *model->IterationTimeNs(Batch({Piece(2048, tokens)}));
    EXPECT_GT(ns, last) << "tokens " << tokens;
    last = ns;
  }
}

TEST(RooflineTest, MixedBatchIsLinearOverAllTokensPlusEachPiecesAttention) {
  proto::ExperimentConfig config = Config();
  config.mutable_cost_model()->set_iteration_overhead_ns(5000);
  auto model = Model(config);
  const SequenceWork d1 = Piece(3000, 1), d2 = Piece(70000, 1), chunk = Piece(512, 1024, false);
  CostBreakdown mixed = *model->IterationBreakdown(Batch({d1, d2, chunk}));
  // Linear layers depend only on the total new tokens (1 + 1 + 1024): same as one 1026-token piece.
  EXPECT_EQ(mixed.linear_ns, model->IterationBreakdown(Batch({Piece(0, 1026, false)}))->linear_ns);
  // Attention is one op per piece: the sum of the pieces' attention alone (each rounded: +-2 ns).
  const int64_t parts = model->IterationBreakdown(Batch({d1}))->attention_ns +
                        model->IterationBreakdown(Batch({d2}))->attention_ns +
                        model->IterationBreakdown(Batch({chunk}))->attention_ns;
  EXPECT_NEAR(mixed.attention_ns, parts, 2);
  // The LM head runs for the two decodes (the chunk is not the prompt's last).
  EXPECT_EQ(mixed.lm_head_ns, model->IterationBreakdown(Batch({Piece(0, 1), Piece(0, 1)}))->lm_head_ns);
  EXPECT_EQ(mixed.overhead_ns, 5000);
  EXPECT_EQ(mixed.total_ns, mixed.linear_ns + mixed.lm_head_ns + mixed.attention_ns + mixed.allreduce_ns + 5000);
}

TEST(RooflineTest, DecodeOverFourBitKvTurnsComputeBound) {
  // One layer, one decode over 8192 resident tokens (context 8191 + itself): 8192 x 2048 = 16,777,216
  // KV elements read, 2048 written; Q and O 16,384 bytes. Dot products on CUDA cores:
  // 4 x 32 x 128 x 8192 = 134,217,728 ops.
  const double read = 8192.0 * 2048, written = 2048, qo = 16384, dots = 134217728;
  struct Case {
    int bits;
    double bytes_per_element, dequant_ops;
    bool compute_bound;
  };
  // bf16: 33.6 MB -> 8.74 us vs 2.86 us of ALU.  int8 (+4 B per 128): 17.3 MB -> 4.51 us vs
  // (2 x 16.8M + 134M) / 46.9e12 = 3.58 us.  int4: 8.9 MB -> 2.33 us vs (3 x 16.8M + 134M) = 3.94 us.
  // 2-bit: 5.2 MB -> 1.34 us vs 3.94 us.
  for (const Case& c :
       {Case{16, 2.0, 0, false}, Case{8, 1.03125, 2, false}, Case{4, 0.53125, 3, true}, Case{2, 0.28125, 3, true}}) {
    proto::ExperimentConfig config = Config();
    config.mutable_cost_model()->set_kv_quant_bits(c.bits);
    auto model = Model(config);
    const double memory_s = ((read + written) * c.bytes_per_element + qo) / kHbm;
    const double compute_s = (read * c.dequant_ops + dots) / kAlu;
    EXPECT_NEAR(model->AttentionSeconds(Piece(8191, 1)), std::max(memory_s, compute_s), 1e-12) << c.bits << " bits";
    EXPECT_EQ(compute_s > memory_s, c.compute_bound) << c.bits << " bits";
  }
}

TEST(RooflineTest, RecomputeCostsFullLayersOrKvProjection) {
  proto::ExperimentConfig config = Config();
  auto full = Model(config);
  // Full layers: a 16-token block costs more the later it sits (attention over its position).
  const int64_t early = *full->RecomputeTimeNs(0, 16), late = *full->RecomputeTimeNs(100000, 16);
  EXPECT_GT(late, early);
  // It equals a non-sampling 16-token prefill piece at that position, and the base class's definition.
  EXPECT_EQ(late, *full->IterationTimeNs(Batch({Piece(100000, 16, false)})));
  EXPECT_EQ(late, *full->CostModel::RecomputeTimeNs(100000, 16));
  config.mutable_cost_model()->set_recompute_cost(proto::RECOMPUTE_COST_KV_PROJECTION);
  auto projection = Model(config);
  // K/V projection only: per layer a 16 x 4096 -> 2048 GEMM, memory-bound: 2048 x 4096 x 2 weight bytes
  // + 16 x (2048 + 4096) x 2 activation bytes = 16,973,824 bytes; x 32 layers; independent of position.
  const double expected_ns = 32 * 16973824 / kHbm * 1e9;  // 141.4 us
  EXPECT_NEAR(*projection->RecomputeTimeNs(0, 16), expected_ns, 1.0);
  EXPECT_NEAR(*projection->RecomputeTimeNs(100000, 16), expected_ns, 1.0);
  EXPECT_EQ(*projection->RecomputeTimeNs(100000, 16), *projection->CostModel::RecomputeTimeNs(100000, 16));
  EXPECT_LT(*projection->RecomputeTimeNs(100000, 16), late);
}

TEST(RooflineTest, TransferIsLatencyPlusBytesOverBandwidth) {
  auto model = Model(Config());
  proto::TierConfig tier;
  tier.set_bandwidth_bytes_per_s(64e9);
  tier.set_latency_ns(5000);
  // 1 MiB at 64 GB/s = 16,384 ns, plus 5 us.
  EXPECT_EQ(model->TransferTimeNs(1 << 20, tier), 5000 + 16384);
  EXPECT_EQ(model->TransferTimeNs(0, tier), 0);
}

TEST(RooflineTest, RejectsMalformedBatchesNamingThePiece) {
  auto model = Model(Config());
  absl::StatusOr<int64_t> empty = model->IterationTimeNs(BatchShape{});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty batch"), absl::string_view::npos);
  absl::StatusOr<int64_t> zero = model->IterationTimeNs(Batch({Piece(10, 1), Piece(10, 0)}));
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("piece 1"), absl::string_view::npos);
  EXPECT_EQ(model->RecomputeTimeNs(-1, 16).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RooflineTest, RegisteredAsRoofline) {
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(Config());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->Describe().rfind("roofline", 0), 0u) << (*model)->Describe();
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(RooflineTest, SharedPrefixInL2IsReadFromHbmOnce) {
  auto model = Model(Config());
  SequenceWork a = Piece(5000, 1), b = Piece(5000, 1);
  a.prefix_id = b.prefix_id = 7;
  a.shared_prefix_tokens = b.shared_prefix_tokens = 4000;
  // 4000 shared tokens x 4096 KV bytes per layer = 16.4 MB <= 50 MiB of L2: the second decode reads
  // only its 1000 own tokens (+ itself) from HBM: (1002 x 2048 x 2 + 16384) bytes = 1.07 us, which
  // leaves its CUDA-core dot products over all 5001 tokens, 4 x 32 x 128 x 5001 ops at 46.9e12/s =
  // 1.75 us, as its bound.
  const int64_t shared = model->IterationBreakdown(Batch({a, b}))->attention_ns;
  const double second_s = std::max((1002.0 * 2048 * 2 + 16384) / kHbm, 4.0 * 32 * 128 * 5001 / kAlu);
  EXPECT_NEAR(second_s, 4.0 * 32 * 128 * 5001 / kAlu, 1e-15);
  const double expected_s = 32 * (model->AttentionSeconds(Piece(5000, 1)) + second_s);
  EXPECT_NEAR(shared, expected_s * 1e9, 1.0);
  EXPECT_LT(shared, model->IterationBreakdown(Batch({Piece(5000, 1), Piece(5000, 1)}))->attention_ns);
  // 20,000 shared tokens = 82 MB do not fit in L2: no discount.
  a.context_tokens = b.context_tokens = 21000;
  a.shared_prefix_tokens = b.shared_prefix_tokens = 20000;
  EXPECT_EQ(model->IterationBreakdown(Batch({a, b}))->attention_ns,
            model->IterationBreakdown(Batch({Piece(21000, 1), Piece(21000, 1)}))->attention_ns);
}

TEST(RooflineTest, AccuracyIsUncalibratedButCitesItsErrorAgainstTheDevicesMeasurements) {
  // The default H200 preset was fitted to a measured table: the roofline lists its own held-out error
  // there (as the fit recorded it), per kind, and stays "not calibrated"; a single GPU lists no all-reduce.
  // The H200's prefill curve is carried over from the A100 (its table's prefill rows time kvsim's own
  // kernel): no held-out rows, nothing cited for that kind.
  const proto::ExperimentConfig config = Config();
  const proto::CostModelAccuracy a = Model(config)->Accuracy();
  EXPECT_FALSE(a.calibrated());
  ASSERT_EQ(a.kinds_size(), 2);
  EXPECT_EQ(a.kinds(0).kind(), "gemm");
  EXPECT_EQ(a.kinds(0).heldout_median_error(),
            config.device().fitted().gemm().quality().roofline_heldout_median_error());
  EXPECT_EQ(a.kinds(1).kind(), "decode_attention");
  EXPECT_GT(a.kinds(1).heldout_p95_error(), 0.5);  // the roofline is far off
  for (const proto::KernelKindAccuracy& k : a.kinds()) {
    EXPECT_NE(k.kind(), "all_reduce");
    EXPECT_NE(k.kind(), "prefill_attention");
  }
  // A datasheet-only preset has nothing to cite.
  proto::ExperimentConfig l40s;
  l40s.set_device_preset("l40s");
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(l40s, "test");
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(Model(*resolved)->Accuracy().kinds_size(), 0);
}

}  // namespace
}  // namespace kvsim
