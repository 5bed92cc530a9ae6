#include "cost_models/fitted_model.h"

#include <cmath>
#include <memory>
#include <vector>

#include "config/experiment_config.h"
#include "cost_models/fitted_kernels.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

proto::ExperimentConfig Config(const std::string& device, int tp = 1) {
  proto::ExperimentConfig config;
  config.set_model_preset(tp == 1 ? "llama-3.1-8b" : "llama-3.1-70b-tp4");
  config.set_device_preset(device);
  config.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_FITTED);
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return *resolved;
}

int64_t Ns(double seconds) { return std::llround(seconds * 1e9); }

// One decode at context 1000 on the A100 preset, composed by hand from the fitted kernel curves of the
// preset (cost_models/fitted_kernels.h) and Llama-3.1-8B's shapes.
TEST(FittedModelTest, DecodeIterationIsTheSumOfItsFittedKernels) {
  const proto::ExperimentConfig config = Config("a100-80gb");
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  const proto::FittedCostParams& f = config.device().fitted();
  ASSERT_TRUE(f.gemm().quality().fitted());
  const DevicePeaks peaks = MakeDevicePeaks(config.device());
  const double bf16 = peaks.bf16_flops_per_s;
  auto gemm = [&](double m, double n, double k) { return FittedGemmSeconds(f.gemm(), peaks, bf16, 2, m, n, k); };
  // QKV 4096 -> (32 + 2 x 8) x 128, O 4096 -> 4096, gate+up 4096 -> 28672, down 14336 -> 4096.
  const double linear = gemm(1, 6144, 4096) + gemm(1, 4096, 4096) + gemm(1, 28672, 4096) + gemm(1, 4096, 14336);
  const double attention = FittedDecodeSeconds(f.decode_attention(), peaks, 1, 1000, 1000, 8, 2.0 * 8 * 128 * 2);
  const double elementwise = FittedElementwiseSeconds(f.elementwise(), 1, 4096);
  const double lm_head = gemm(1, 128256, 4096);
  BatchShape batch;
  batch.sequences.push_back({.context_tokens = 1000, .new_tokens = 1});
  absl::StatusOr<CostBreakdown> b = (*model)->IterationBreakdown(batch);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->linear_ns, Ns(32 * linear));
  EXPECT_EQ(b->attention_ns, Ns(32 * attention));
  EXPECT_EQ(b->other_ns, Ns(32 * elementwise));
  EXPECT_EQ(b->lm_head_ns, Ns(lm_head));
  EXPECT_EQ(b->allreduce_ns, 0);
  EXPECT_EQ(b->total_ns, b->linear_ns + b->attention_ns + b->other_ns + b->lm_head_ns + b->overhead_ns);
  absl::StatusOr<int64_t> total = (*model)->IterationTimeNs(batch);
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, b->total_ns);
}

// Two prefill chunks of one iteration (vLLM runs all prefills of a batch in one attention kernel) on the
// A100 preset: one kernel over both chunks' terms, not the two chunks priced apart.
TEST(FittedModelTest, PrefillChunksOfAnIterationArePricedAsOneKernel) {
  const proto::ExperimentConfig config = Config("a100-80gb");
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  const proto::PrefillAttentionFit& f = config.device().fitted().prefill_attention();
  ASSERT_GT(f.split_chunk_tokens(), 0);
  const DevicePeaks peaks = MakeDevicePeaks(config.device());
  const double kv_bytes = 2.0 * 8 * 128 * 2;  // Llama-3.1-8B: 8 KV heads of 128, bf16
  auto terms = [&](double n, double c) { return MakeFittedPrefillTerms(f, peaks, 1, n, c, 32, 8, 128, kv_bytes); };
  FittedPrefillTerms both = terms(64, 2000);
  both.Add(terms(200, 0));
  const double together = FittedPrefillKernelSeconds(f, peaks, both);
  const double apart = FittedPrefillKernelSeconds(f, peaks, terms(64, 2000)) +
                       FittedPrefillKernelSeconds(f, peaks, terms(200, 0));
  EXPECT_LT(together, apart);  // one launch, and the short chunk's pass hides under the long one's
  BatchShape batch;
  batch.sequences.push_back({.context_tokens = 2000, .new_tokens = 64});
  batch.sequences.push_back({.context_tokens = 0, .new_tokens = 200});
  absl::StatusOr<CostBreakdown> b = (*model)->IterationBreakdown(batch);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->attention_ns, Ns(32 * together));
}

TEST(FittedModelTest, AccuracyIsWeightedByTheKindsThisRunUsed) {
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(Config("a100-80gb"));
  ASSERT_TRUE(model.ok()) << model.status();
  BatchShape decode;
  decode.sequences.push_back({.context_tokens = 1000, .new_tokens = 1});
  ASSERT_TRUE((*model)->IterationTimeNs(decode).ok());
  proto::CostModelAccuracy a = (*model)->Accuracy();
  EXPECT_TRUE(a.calibrated());
  // A single-GPU decode: GEMMs, decode attention, element-wise ops; no prefill, no all-reduce.
  ASSERT_EQ(a.kinds_size(), 3);
  double fractions = 0, median = 0;
  for (const proto::KernelKindAccuracy& k : a.kinds()) {
    EXPECT_NE(k.kind(), "all_reduce");
    EXPECT_NE(k.kind(), "prefill_attention");
    EXPECT_TRUE(k.fitted()) << k.kind();
    fractions += k.time_fraction();
    median += k.time_fraction() * k.heldout_median_error();
  }
  EXPECT_NEAR(fractions, 1, 1e-12);
  EXPECT_NEAR(a.time_weighted_median_error(), median, 1e-12);
  EXPECT_EQ(a.kinds(0).kind(), "gemm");
  EXPECT_GT(a.kinds(0).time_fraction(), 0.5);    // weight reads dominate a batch-1 decode
  EXPECT_EQ(a.extrapolated_time_fraction(), 0);  // context 1000, 1 token: inside the measurements

  // A 100K-token context lies beyond the measured decode contexts (16K): that share is extrapolated.
  BatchShape long_decode;
  long_decode.sequences.push_back({.context_tokens = 100000, .new_tokens = 1});
  ASSERT_TRUE((*model)->IterationTimeNs(long_decode).ok());
  a = (*model)->Accuracy();
  EXPECT_GT(a.extrapolated_time_fraction(), 0.01);
  EXPECT_LT(a.extrapolated_time_fraction(), 0.5);
}

// What is priced but not run (a restore estimate, an adaptive-chunk probe, the TTFT decomposition's chunk
// alone) costs what the iteration would and leaves the run's accuracy counts as they were.
TEST(FittedModelTest, EstimatesArePricedButNotCounted) {
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(Config("a100-80gb"));
  ASSERT_TRUE(model.ok()) << model.status();
  BatchShape decode;
  decode.sequences.push_back({.context_tokens = 1000, .new_tokens = 1});
  ASSERT_TRUE((*model)->IterationTimeNs(decode).ok());
  const proto::CostModelAccuracy before = (*model)->Accuracy();
  EXPECT_GT(before.kernel_predictions(), 0);
  // A prefill beyond the measured chunk sizes alone: extrapolated, were it counted.
  BatchShape prefill;
  prefill.sequences.push_back({.context_tokens = 0, .new_tokens = 200000});
  absl::StatusOr<CostBreakdown> estimate = (*model)->EstimateBreakdown(prefill);
  ASSERT_TRUE(estimate.ok()) << estimate.status();
  ASSERT_TRUE((*model)->RecomputeTimeNs(100000, 4096).ok());
  const proto::CostModelAccuracy after = (*model)->Accuracy();
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString());
  // Counted, the same batch costs the same and moves the counts.
  absl::StatusOr<CostBreakdown> run = (*model)->IterationBreakdown(prefill);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->total_ns, estimate->total_ns);
  EXPECT_EQ(run->attention_ns, estimate->attention_ns);
  EXPECT_GT((*model)->Accuracy().kernel_predictions(), before.kernel_predictions());
  EXPECT_GT((*model)->Accuracy().extrapolated_time_fraction(), before.extrapolated_time_fraction());
}

TEST(FittedModelTest, TensorParallelRunsChargeTheFittedAllReduce) {
  const proto::ExperimentConfig config = Config("h100-sxm", 4);
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  BatchShape batch;
  batch.sequences.push_back({.context_tokens = 1000, .new_tokens = 1});
  absl::StatusOr<CostBreakdown> b = (*model)->IterationBreakdown(batch);
  ASSERT_TRUE(b.ok());
  bool exact = false;
  const proto::AllReduceFit* ar = FindAllReduceFit(config.device().fitted(), 4, &exact);
  ASSERT_NE(ar, nullptr);
  EXPECT_TRUE(exact);
  // 80 layers x 2 all-reduces of 8192 x 2 bytes over 4 GPUs: the latency floor, not ~0.
  EXPECT_EQ(b->allreduce_ns, Ns(80 * 2 * FittedAllReduceSeconds(*ar, 8192 * 2, 4)));
  EXPECT_GT(b->allreduce_ns, 80 * 2 * 10000);  // > 10 us each
  // H100 has no bundled attention measurements: that kind is reported as not fitted.
  proto::CostModelAccuracy a = (*model)->Accuracy();
  bool saw_decode = false, saw_all_reduce = false;
  // Each kind weighs what it adds to the iteration: the all-reduce both of its per-layer kernels.
  const double kernels_ns = b->linear_ns + b->lm_head_ns + b->attention_ns + b->allreduce_ns + b->other_ns;
  for (const proto::KernelKindAccuracy& k : a.kinds()) {
    if (k.kind() == "decode_attention") {
      saw_decode = true;
      EXPECT_FALSE(k.fitted());
    }
    if (k.kind() == "all_reduce") {
      saw_all_reduce = true;
      EXPECT_NEAR(k.time_fraction(), b->allreduce_ns / kernels_ns, 1e-6);
    }
  }
  EXPECT_TRUE(saw_decode);
  EXPECT_TRUE(saw_all_reduce);
  EXPECT_GT(a.extrapolated_time_fraction(), 0);
}

// A decode run priced by StartDecodeRun's pricer costs, step by step, what IterationTimeNs of the grown
// batch costs, and leaves the same Accuracy() (counts and extrapolated share) as pricing every step
// whole: batches with segments, decode contexts that leave the measured range during the run (the decode
// kind turns extrapolated), tensor parallelism (the all-reduce term), and a prefix group (the default,
// stepwise pricer).
TEST(FittedModelTest, DecodeRunsCostWhatEachIterationCosts) {
  struct Case {
    const char* device;
    int tp;
    std::vector<SequenceWork> pieces;
  };
  const std::vector<Case> cases = {
      {"h200", 1, {{.context_tokens = 1000, .new_tokens = 1}}},
      {"h200", 1,
       {{.context_tokens = 30000, .new_tokens = 1},
        {.context_tokens = 17, .new_tokens = 1, .num_segments = 3},
        {.context_tokens = 4096, .new_tokens = 1}}},
      // The bundled H200 measurements stop at 32K decode contexts: the run crosses that edge.
      {"h200", 1, {{.context_tokens = 32760, .new_tokens = 1}, {.context_tokens = 5, .new_tokens = 1}}},
      {"h100-sxm", 4, {{.context_tokens = 800, .new_tokens = 1}, {.context_tokens = 900, .new_tokens = 1}}},
      // The longest context passes one split-KV chunk (128 tokens) at step 19: the split's merge from then on.
      {"a100-80gb", 1, {{.context_tokens = 90, .new_tokens = 1}, {.context_tokens = 109, .new_tokens = 1}}},
      {"a100-80gb", 1,
       {{.context_tokens = 100, .new_tokens = 1, .prefix_id = 7, .shared_prefix_tokens = 64},
        {.context_tokens = 120, .new_tokens = 1, .prefix_id = 7, .shared_prefix_tokens = 64}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.device);
    absl::StatusOr<std::unique_ptr<CostModel>> stepped = CreateCostModel(Config(c.device, c.tp));
    absl::StatusOr<std::unique_ptr<CostModel>> run = CreateCostModel(Config(c.device, c.tp));
    ASSERT_TRUE(stepped.ok() && run.ok());
    BatchShape batch;
    batch.sequences = c.pieces;
    ASSERT_TRUE((*stepped)->IterationTimeNs(batch).ok());
    ASSERT_TRUE((*run)->IterationTimeNs(batch).ok());
    std::unique_ptr<DecodeRunPricer> pricer = (*run)->StartDecodeRun(batch);
    for (int64_t step = 1; step <= 40; ++step) {
      for (SequenceWork& s : batch.sequences) ++s.context_tokens;
      absl::StatusOr<int64_t> whole = (*stepped)->IterationTimeNs(batch);
      absl::StatusOr<int64_t> priced = pricer->IterationTimeNs(step, batch);
      ASSERT_TRUE(whole.ok() && priced.ok());
      EXPECT_EQ(*priced, *whole) << "step " << step;
    }
    pricer.reset();  // commits the run's counts
    EXPECT_EQ((*run)->Accuracy().SerializeAsString(), (*stepped)->Accuracy().SerializeAsString());
  }
}

TEST(FittedModelTest, UnfittedPresetsAreRefusedByName) {
  for (const char* device : {"l40s", "b200"}) {
    absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(Config(device));
    EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition) << device;
    EXPECT_NE(model.status().message().find(absl::StrCat("preset '", device, "') has no fitted parameters")),
              absl::string_view::npos)
        << model.status();
  }
}

TEST(FittedModelTest, BadBatchesAreInvalidArgument) {
  absl::StatusOr<std::unique_ptr<CostModel>> model = CreateCostModel(Config("h200"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->IterationTimeNs(BatchShape()).status().code(), absl::StatusCode::kInvalidArgument);
  BatchShape bad;
  bad.sequences.push_back({.context_tokens = 0, .new_tokens = 0});
  EXPECT_EQ((*model)->IterationTimeNs(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
