#include "cost_models/cost_fit.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "cost_models/fitted_kernels.h"
#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

proto::DeviceSpec A100Like() {
  proto::DeviceSpec d;
  d.set_name("test-gpu");
  d.set_peak_bf16_flops(312e12);
  d.set_memory_bandwidth_bytes_per_s(2.039e12);
  d.set_num_sms(108);
  d.set_memory_bytes(int64_t{80} << 30);
  d.set_pcie_bandwidth_bytes_per_s(32e9);
  return d;
}

FitRow GemmRow(int64_t tokens, int64_t out, int64_t in, double seconds) {
  FitRow r;
  r.kind = "gemm";
  r.query.kind = proto::KERNEL_KIND_LINEAR_GEMM;
  r.query.query_tokens = tokens;
  r.query.out_features = out;
  r.query.in_features = in;
  r.query.format.bits = 16;
  r.measured_s = seconds;
  r.where = "synthetic";
  return r;
}

// Rows generated from known parameters: the fit must recover them (an independent expectation: the
// generating values), and predict its held-out rows exactly.
TEST(CostFitTest, RecoversGemmAndAllReduceParametersFromSyntheticRows) {
  const proto::DeviceSpec device = A100Like();
  const DevicePeaks peaks = MakeDevicePeaks(device);
  proto::GemmFit truth;
  truth.set_launch_ns(4000);
  truth.set_compute_efficiency(0.7);
  truth.set_memory_efficiency(0.8);
  truth.set_ridge_exponent(3);
  truth.set_wave_weight(0.4);
  FitInput input;
  for (int64_t tokens = 1; tokens <= 16384; tokens = tokens * 3 / 2 + 1) {
    for (auto [out, in] : {std::pair<int64_t, int64_t>{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}}) {
      input.rows.push_back(
          GemmRow(tokens, out, in, FittedGemmSeconds(truth, peaks, peaks.bf16_flops_per_s, 2, tokens, out, in)));
    }
  }
  // Three protocols chosen by size, away from the fit's starting grid (AllReduceFit in proto/spec.proto).
  proto::AllReduceFit ar_truth;
  ar_truth.set_latency_ns(15000);
  ar_truth.set_bus_bandwidth_bytes_per_s(30e9);
  ar_truth.set_large_latency_ns(35000);
  ar_truth.set_large_bus_bandwidth_bytes_per_s(120e9);
  ar_truth.set_switch_bytes(400e3);
  ar_truth.set_bulk_switch_bytes(6e6);
  ar_truth.set_bulk_latency_ns(20000);
  ar_truth.set_bulk_bus_bandwidth_bytes_per_s(200e9);
  int64_t largest = 0;
  for (int64_t bytes = 2048; bytes <= (int64_t{64} << 20); bytes = bytes * 11 / 10) {  // 110 sizes
    largest = bytes;
    FitRow r;
    r.kind = "all_reduce";
    r.query.kind = proto::KERNEL_KIND_ALL_REDUCE;
    r.query.bytes = bytes;
    r.query.num_gpus = 4;
    r.measured_s = FittedAllReduceSeconds(ar_truth, bytes, 4);
    input.rows.push_back(r);
  }
  absl::StatusOr<FitResult> fit = FitDevice(input, device, proto::FittedCostParams());
  ASSERT_TRUE(fit.ok()) << fit.status();
  const proto::GemmFit& g = fit->params.gemm();
  EXPECT_TRUE(g.quality().fitted()) << g.quality().note();
  EXPECT_NEAR(g.launch_ns(), 4000, 40);
  EXPECT_NEAR(g.compute_efficiency(), 0.7, 0.007);
  EXPECT_NEAR(g.memory_efficiency(), 0.8, 0.008);
  EXPECT_NEAR(g.ridge_exponent(), 3, 0.03);
  EXPECT_NEAR(g.wave_weight(), 0.4, 0.004);
  EXPECT_LT(g.quality().heldout_worst_error(), 1e-3);
  EXPECT_EQ(g.quality().heldout_rows() + g.quality().train_rows(), 4 * 22);
  EXPECT_EQ(g.quality().heldout_rows(), 18);  // every 5th of the 88 rows, from the 3rd: indices 2, 7, ..., 87
  ASSERT_EQ(fit->params.all_reduce_size(), 1);
  const proto::AllReduceFit& ar = fit->params.all_reduce(0);
  EXPECT_EQ(ar.num_gpus(), 4);
  EXPECT_NEAR(ar.switch_bytes(), 400e3, 400);
  EXPECT_NEAR(ar.bulk_switch_bytes(), 6e6, 6e3);
  for (double bytes : {2048.0, 65536.0, 400e3, 1048576.0, 6e6, 67108864.0}) {
    const double want = FittedAllReduceSeconds(ar_truth, bytes, 4);
    EXPECT_NEAR(FittedAllReduceSeconds(ar, bytes, 4), want, want * 1e-3) << bytes;
  }
  EXPECT_LT(ar.quality().heldout_worst_error(), 1e-3);
  ASSERT_EQ(ar.quality().feature_min_size(), 1);
  EXPECT_EQ(ar.quality().feature_min(0), 2048);
  EXPECT_EQ(ar.quality().feature_max(0), largest);

  // Deterministic: the same rows give the same parameters bit for bit, in any input order.
  FitInput reversed = input;
  std::reverse(reversed.rows.begin(), reversed.rows.end());
  absl::StatusOr<FitResult> again = FitDevice(reversed, device, proto::FittedCostParams());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->params.SerializeAsString(), fit->params.SerializeAsString());
}

FitRow PrefillRow(int64_t batch, int64_t n, int64_t c, const proto::PrefillAttentionFit& truth,
                  const DevicePeaks& peaks) {
  FitRow r;
  r.kind = "prefill_attention";
  r.query.kind = proto::KERNEL_KIND_PREFILL_ATTENTION;
  r.query.batch = batch;
  r.query.query_tokens = n;
  r.query.context_tokens = c;
  r.query.num_heads = 32;
  r.query.num_kv_heads = 8;
  r.query.head_dim = 128;
  r.measured_s = FittedPrefillSeconds(truth, peaks, batch, n, c, 32, 8, 128, 2.0 * 8 * 128 * 2);
  r.where = "synthetic";
  return r;
}

// A prefill curve of the A100 fit's shape: a 512-token split chunk, a 60 ns/key serial pass, a 10 us merge.
proto::PrefillAttentionFit A100LikePrefill() {
  proto::PrefillAttentionFit truth;
  truth.set_launch_ns(5000);
  truth.set_compute_efficiency(0.55);
  truth.set_half_efficiency_tokens(45);
  truth.set_causal_pair_cost(0.9);
  truth.set_memory_efficiency(0.5);
  truth.set_causal_extra_tokens(1000);
  truth.set_serial_ns_per_token(60);
  truth.set_split_ns(10000);
  truth.set_split_chunk_tokens(512);
  return truth;
}

// The split-KV chunk is discrete: rows generated with a 512-token chunk must be fitted best with 512 of
// the chunks tried, with the continuous parameters recovered; with fewer rows than the eight-parameter
// curve needs, the five-parameter curve is fitted and the note says why.
TEST(CostFitTest, PrefillFitFindsTheSplitChunkOrFallsBackToTheBaseCurve) {
  const proto::DeviceSpec device = A100Like();
  const DevicePeaks peaks = MakeDevicePeaks(device);
  const proto::PrefillAttentionFit truth = A100LikePrefill();
  FitInput input;
  for (int64_t batch : {1, 8}) {
    for (int64_t n : {16, 64, 256, 1024, 4096}) {
      for (int64_t c : {0, 128, 384, 1024, 3000, 8000}) input.rows.push_back(PrefillRow(batch, n, c, truth, peaks));
    }
  }
  absl::StatusOr<FitResult> fit = FitDevice(input, device, proto::FittedCostParams());
  ASSERT_TRUE(fit.ok()) << fit.status();
  const proto::PrefillAttentionFit& f = fit->params.prefill_attention();
  EXPECT_TRUE(f.quality().fitted()) << f.quality().note();
  EXPECT_EQ(f.split_chunk_tokens(), 512);
  EXPECT_EQ(f.quality().note(), "split_chunk_tokens 512 by training cost");
  EXPECT_NEAR(f.launch_ns(), 5000, 50);
  EXPECT_NEAR(f.serial_ns_per_token(), 60, 0.6);
  EXPECT_NEAR(f.split_ns(), 10000, 100);
  EXPECT_NEAR(f.compute_efficiency(), 0.55, 0.0055);
  EXPECT_LT(f.quality().heldout_worst_error(), 1e-3);

  // 30 rows: 24 training rows, enough for five parameters (20), not for eight (32).
  FitInput few;
  for (int64_t n : {16, 64, 256, 1024, 4096}) {
    for (int64_t c : {0, 128, 384, 1024, 3000, 8000}) few.rows.push_back(PrefillRow(1, n, c, truth, peaks));
  }
  absl::StatusOr<FitResult> base = FitDevice(few, device, proto::FittedCostParams());
  ASSERT_TRUE(base.ok()) << base.status();
  const proto::PrefillAttentionFit& b = base->params.prefill_attention();
  EXPECT_TRUE(b.quality().fitted()) << b.quality().note();
  EXPECT_EQ(b.split_chunk_tokens(), 0);
  EXPECT_EQ(b.serial_ns_per_token(), 0);
  EXPECT_EQ(b.split_ns(), 0);
  EXPECT_EQ(b.quality().note(), "without the serial and split-KV terms (full curve: too few rows (24 training < 32))");
}

// --prefill_attention_from: the curve of another GPU's fit, carried over (efficiencies kept as fractions of
// this GPU's peaks; the serial pass scaled by bf16 peak per SM: A100-like 312 TFLOP/s on 108 SMs to
// 989.5 TFLOP/s on 132, x (312 / 108) / (989.5 / 132) = 0.38538...), is not fitted to this GPU's rows,
// whatever they say, and reports its error on them for comparison.
TEST(CostFitTest, APrefillCurveCarriedOverIsScaledNotFitted) {
  proto::DeviceSpec a100 = A100Like();
  proto::PrefillAttentionFit& from = *a100.mutable_fitted()->mutable_prefill_attention();
  from = A100LikePrefill();
  from.mutable_quality()->set_fitted(true);
  from.mutable_quality()->add_feature_min(64);
  from.mutable_quality()->add_feature_max(16128);
  proto::DeviceSpec h200 = A100Like();
  h200.set_name("other-gpu");
  h200.set_peak_bf16_flops(989.5e12);
  h200.set_num_sms(132);

  absl::StatusOr<proto::PrefillAttentionFit> carried = TransferPrefillAttention(a100, h200);
  ASSERT_TRUE(carried.ok()) << carried.status();
  EXPECT_NEAR(carried->serial_ns_per_token(), 60 * (312.0 / 108) / (989.5 / 132), 1e-9);
  EXPECT_EQ(carried->compute_efficiency(), 0.55);
  EXPECT_EQ(carried->launch_ns(), 5000);
  EXPECT_EQ(carried->split_chunk_tokens(), 512);
  EXPECT_FALSE(carried->quality().fitted());
  ASSERT_EQ(carried->quality().feature_max_size(), 1);
  EXPECT_EQ(carried->quality().feature_max(0), 16128);
  EXPECT_EQ(carried->quality().note(),
            "carried over from test-gpu's fit (efficiencies as fractions of this GPU's peaks, serial pass x 0.3854 "
            "by bf16 peak per SM), not fitted on this GPU");

  // The other GPU's rows come from a curve three times slower: the carried curve stays as it is.
  proto::PrefillAttentionFit slow = *carried;
  slow.set_compute_efficiency(0.55 / 3);
  slow.set_serial_ns_per_token(3 * carried->serial_ns_per_token());
  const DevicePeaks peaks = MakeDevicePeaks(h200);
  FitInput input;
  for (int64_t batch : {1, 8}) {
    for (int64_t n : {16, 64, 256, 1024, 4096}) {
      for (int64_t c : {0, 128, 384, 1024, 3000, 8000}) input.rows.push_back(PrefillRow(batch, n, c, slow, peaks));
    }
  }
  FitOptions options;
  options.prefill_attention_from = &a100;
  absl::StatusOr<FitResult> fit = FitDevice(input, h200, proto::FittedCostParams(), options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->params.prefill_attention().SerializeAsString(), carried->SerializeAsString());
  EXPECT_NE(fit->params.source().find("prefill attention carried over from test-gpu"), std::string::npos);
  bool reported = false;
  for (const KindFitReport& k : fit->kinds) {
    if (k.kind != "prefill_attention") continue;
    reported = true;
    EXPECT_FALSE(k.fitted);
    ASSERT_EQ(k.heldout_errors.size(), 12u);
    EXPECT_GT(SummariseErrors(k.heldout_errors).median, 0.3);  // rows of a slower kernel: far off, and said
  }
  EXPECT_TRUE(reported);
  // Without the option the same rows are fitted.
  absl::StatusOr<FitResult> fitted = FitDevice(input, h200, proto::FittedCostParams());
  ASSERT_TRUE(fitted.ok());
  EXPECT_TRUE(fitted->params.prefill_attention().quality().fitted());
  // A device without a fitted prefill curve has nothing to carry over.
  EXPECT_EQ(TransferPrefillAttention(A100Like(), h200).status().code(), absl::StatusCode::kFailedPrecondition);

  // Decode attention: carried over as it is, for a GPU with no decode rows (the input has none).
  proto::DecodeAttentionFit& decode = *a100.mutable_fitted()->mutable_decode_attention();
  decode.set_launch_ns(6000);
  decode.set_per_sequence_ns(25);
  decode.set_memory_efficiency(0.88);
  decode.set_wave_weight(0.6);
  decode.set_split_ns(12000);
  decode.set_split_memory_efficiency(0.8);
  decode.set_ctas_per_sm(3);
  EXPECT_EQ(TransferDecodeAttention(a100).status().code(), absl::StatusCode::kFailedPrecondition);  // not fitted
  decode.mutable_quality()->set_fitted(true);
  options.decode_attention_from = &a100;
  absl::StatusOr<FitResult> both = FitDevice(input, h200, proto::FittedCostParams(), options);
  ASSERT_TRUE(both.ok()) << both.status();
  const proto::DecodeAttentionFit& d = both->params.decode_attention();
  EXPECT_EQ(d.launch_ns(), 6000);
  EXPECT_EQ(d.memory_efficiency(), 0.88);
  EXPECT_EQ(d.ctas_per_sm(), 3);
  EXPECT_FALSE(d.quality().fitted());
  EXPECT_EQ(d.quality().note(),
            "carried over from test-gpu's fit (efficiencies as fractions of this GPU's bandwidth), not fitted on this "
            "GPU");
  EXPECT_NE(both->params.source().find("decode attention carried over from test-gpu"), std::string::npos);
}

TEST(CostFitTest, TooFewRowsKeepThePreviousParametersAndSaySo) {
  const proto::DeviceSpec device = A100Like();
  proto::FittedCostParams previous;
  previous.mutable_gemm()->set_launch_ns(1234);
  previous.mutable_gemm()->set_compute_efficiency(0.6);
  previous.mutable_gemm()->set_memory_efficiency(0.7);
  previous.mutable_gemm()->set_ridge_exponent(5);
  previous.mutable_gemm()->set_wave_weight(0.1);
  previous.mutable_prefill_attention()->set_launch_ns(777);
  previous.mutable_prefill_attention()->set_compute_efficiency(0.55);
  previous.mutable_prefill_attention()->set_half_efficiency_tokens(64);
  previous.mutable_prefill_attention()->set_causal_pair_cost(1.5);
  previous.mutable_prefill_attention()->set_memory_efficiency(0.9);
  FitInput input;
  for (int i = 1; i <= 6; ++i) input.rows.push_back(GemmRow(i * 100, 4096, 4096, 1e-5 * i));
  absl::StatusOr<FitResult> fit = FitDevice(input, device, previous);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const proto::GemmFit& g = fit->params.gemm();
  EXPECT_FALSE(g.quality().fitted());
  EXPECT_NE(g.quality().note().find("too few rows (5 training < 20): previous parameters kept"), std::string::npos)
      << g.quality().note();
  EXPECT_EQ(g.launch_ns(), 1234);
  EXPECT_EQ(g.compute_efficiency(), 0.6);
  // A kind with no rows at all keeps its previous values too, never zeros.
  EXPECT_EQ(fit->params.prefill_attention().launch_ns(), 777);
  EXPECT_EQ(fit->params.prefill_attention().causal_pair_cost(), 1.5);
  EXPECT_FALSE(fit->params.prefill_attention().quality().fitted());
  // Without previous parameters: the documented roofline-equivalent starting values, not zeros.
  absl::StatusOr<FitResult> fresh = FitDevice(input, device, proto::FittedCostParams());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->params.gemm().compute_efficiency(), 0.7);
  EXPECT_EQ(fresh->params.gemm().memory_efficiency(), 0.8);
  EXPECT_NE(fresh->params.gemm().quality().note().find("roofline-equivalent starting values kept"), std::string::npos);
  EXPECT_EQ(FitDevice(FitInput(), device, previous).status().code(), absl::StatusCode::kFailedPrecondition);
}

// Parameters carried into the output (here a kind with no rows keeps the previous values) are checked
// like a preset's before the fit is returned for storing.
TEST(CostFitTest, AFitOutsidePhysicalRangesIsRefusedNamingTheField) {
  const proto::DeviceSpec device = A100Like();
  proto::FittedCostParams previous;
  previous.mutable_gemm()->set_launch_ns(1234);
  previous.mutable_gemm()->set_compute_efficiency(0.6);
  previous.mutable_gemm()->set_memory_efficiency(0.7);
  previous.mutable_gemm()->set_ridge_exponent(5);
  previous.mutable_gemm()->set_wave_weight(0.1);
  previous.mutable_prefill_attention()->set_launch_ns(777);
  previous.mutable_prefill_attention()->set_compute_efficiency(0.55);
  previous.mutable_prefill_attention()->set_half_efficiency_tokens(64);
  previous.mutable_prefill_attention()->set_causal_pair_cost(1e6);  // beyond [1e-6, 100]
  previous.mutable_prefill_attention()->set_memory_efficiency(0.9);
  FitInput input;
  for (int i = 1; i <= 6; ++i) input.rows.push_back(GemmRow(i * 100, 4096, 4096, 1e-5 * i));
  absl::StatusOr<FitResult> fit = FitDevice(input, device, previous);
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fit.status().message().find("field fitted.prefill_attention.causal_pair_cost: must be in [1e-06, 100], "
                                        "got 1000000"),
            std::string::npos)
      << fit.status();
  previous.mutable_prefill_attention()->set_causal_pair_cost(1.5);
  EXPECT_TRUE(FitDevice(input, device, previous).ok());
}

TEST(CostFitTest, AFitThatDoesNotConvergeKeepsThePreviousParametersAndSaysSo) {
  const proto::DeviceSpec device = A100Like();
  const DevicePeaks peaks = MakeDevicePeaks(device);
  proto::GemmFit truth;
  truth.set_launch_ns(4000);
  truth.set_compute_efficiency(0.7);
  truth.set_memory_efficiency(0.8);
  truth.set_ridge_exponent(3);
  truth.set_wave_weight(0.4);
  FitInput input;
  for (int64_t tokens = 1; tokens <= 16384; tokens *= 2) {
    input.rows.push_back(
        GemmRow(tokens, 4096, 4096, FittedGemmSeconds(truth, peaks, peaks.bf16_flops_per_s, 2, tokens, 4096, 4096)));
    input.rows.push_back(
        GemmRow(tokens, 28672, 4096, FittedGemmSeconds(truth, peaks, peaks.bf16_flops_per_s, 2, tokens, 28672, 4096)));
  }
  proto::FittedCostParams previous;
  previous.mutable_gemm()->set_launch_ns(1234);
  previous.mutable_gemm()->set_compute_efficiency(0.6);
  previous.mutable_gemm()->set_memory_efficiency(0.7);
  previous.mutable_gemm()->set_ridge_exponent(5);
  previous.mutable_gemm()->set_wave_weight(0.1);
  FitOptions one;
  one.max_iterations = 1;  // far too few for these starts to converge
  absl::StatusOr<FitResult> fit = FitDevice(input, device, previous, one);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const proto::GemmFit& g = fit->params.gemm();
  EXPECT_FALSE(g.quality().fitted());
  EXPECT_NE(g.quality().note().find("no start converged within 1 iterations: previous parameters kept"),
            std::string::npos)
      << g.quality().note();
  EXPECT_EQ(g.launch_ns(), 1234);
  EXPECT_EQ(g.ridge_exponent(), 5);
  // The same rows with the default budget converge.
  absl::StatusOr<FitResult> full = FitDevice(input, device, previous);
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->params.gemm().quality().fitted()) << full->params.gemm().quality().note();
  EXPECT_EQ(FitDevice(input, device, previous, FitOptions{.max_iterations = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

std::string TmpDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

TEST(CostFitTest, BadMeasurementFilesAreRefusedNamingFileLineAndColumn) {
  FitInput input;
  const std::string dir = TmpDir("bad_vidur");
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median,size\n"
                                  "2,2048,all_reduce,0.01,2048\n")
                  .ok());
  absl::Status twice = AddMeasurements(dir, &input);
  EXPECT_NE(twice.message().find("all_reduce.csv:1: column 'size' appears twice"), std::string::npos) << twice;
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median\n"
                                  "2,2048,all_reduce,0.01\n2,4096,all_reduce,-0.02\n")
                  .ok());
  absl::Status negative = AddMeasurements(dir, &input);
  EXPECT_NE(negative.message().find("all_reduce.csv:3: column time_stats.all_reduce.median: expected a time >= 0"),
            std::string::npos)
      << negative;
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv",
                                  "num_workers,size,collective,time_stats.all_reduce.median\n2,big,all_reduce,0.01\n")
                  .ok());
  absl::Status text = AddMeasurements(dir, &input);
  EXPECT_NE(text.message().find("all_reduce.csv:2: column size: expected a number, got 'big'"), std::string::npos)
      << text;
  ASSERT_TRUE(WriteFileAtomically(dir + "/all_reduce.csv", "num_workers,size,collective\n2,2048,all_reduce\n").ok());
  absl::Status missing = AddMeasurements(dir, &input);
  EXPECT_NE(missing.message().find("all_reduce.csv:1: missing column 'time_stats.all_reduce.median'"),
            std::string::npos)
      << missing;
  // A calibration table with a negative time: ReadCalibrationTable's error, with the file and line.
  const std::string table = TmpDir("bad_table") + "/t.csv";
  ASSERT_TRUE(WriteFileAtomically(table,
                                  "kind,in_features,out_features,query_tokens,median_ns\n"
                                  "linear_gemm,4096,4096,16,1000\nlinear_gemm,4096,4096,32,-5\n")
                  .ok());
  absl::Status bad_table = AddMeasurements(table, &input);
  EXPECT_FALSE(bad_table.ok());
  EXPECT_NE(bad_table.message().find("t.csv:3"), std::string::npos) << bad_table;
  EXPECT_NE(bad_table.message().find("median_ns"), std::string::npos) << bad_table;
}

}  // namespace
}  // namespace kvsim
