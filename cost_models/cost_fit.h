// File: cost_models/cost_fit.h
//
// Fits the fitted cost model's per-op curves (proto/spec.proto FittedCostParams; formulas in
// cost_models/fitted_kernels.h) to one GPU's measured kernel times: calibration points (imported Vidur
// profiles or `kvsim calibrate` tables) and Vidur's element-wise op times.
//
// Procedure (deterministic: same rows, same result, bit for bit):
//   1. Rows by kind: GEMMs (linear, MLP, KV projection; bf16/fp16 weights), prefill attention and decode
//      attention (bf16/fp16 KV, one segment), element-wise ops, all-reduce (one curve per GPU count).
//      Rows of other formats or multi-segment rows are counted as not used.
//   2. Split: a kind's rows sorted by their features (then by measured time); every 5th row, starting
//      with the 3rd, is held out (20%). The held-out rows never enter the fit.
//   3. Fit: Levenberg-Marquardt on the training rows, minimising the sum of squared log errors
//      log(predicted / measured) (relative error, so microsecond and second kernels weigh the same),
//      over unconstrained parameters (log for positive ones, logit for fractions), central-difference
//      Jacobian, damping x10 / /10, from each of a small fixed grid of starting points; the converged run
//      with the lowest training cost wins. Converged = the last accepted step lowered the cost by less
//      than 1e-10 relative, within 400 iterations.
//   4. A kind with fewer than max(12, 4 x parameters) training rows, or whose runs all fail to converge,
//      keeps its previous parameters (`previous`, or the documented starting values when there are none)
//      with FitQuality.fitted = false and a note saying why. Never zeros.
//   5. Held-out error of the final parameters, per kind: median, p95, worst of |pred - meas| / meas.
//   6. FitOptions.prefill_attention_from / decode_attention_from: that kind is not fitted but carried over
//      from the other GPU's fit (TransferPrefillAttention, TransferDecodeAttention below), with
//      FitQuality.fitted = false; its error on this GPU's held-out rows, if any, is still reported.
//
// Stateless functions; thread-compatible.
//
// Example:
//   FitInput input;
//   KVSIM_RETURN_IF_ERROR(AddCalibrationRows(table, "a100.csv", &input));
//   KVSIM_ASSIGN_OR_RETURN(FitResult fit, FitDevice(input, device, device.fitted()));
//   *device.mutable_fitted() = fit.params;
#ifndef KVSIM_COST_MODELS_COST_FIT_H_
#define KVSIM_COST_MODELS_COST_FIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost_models/kernel_roofline.h"
#include "cost_models/vidur_import.h"
#include "proto/calibration.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

// The kinds the fit knows, as FitQuality and reports name them.
inline constexpr const char* kFitKinds[] = {"gemm", "prefill_attention", "decode_attention", "elementwise",
                                            "all_reduce"};

// One measured row, normalised.
struct FitRow {
  std::string kind;   // one of kFitKinds
  KernelQuery query;  // shape (for elementwise: query_tokens = tokens, in_features = hidden)
  double measured_s = 0;
  std::string where;  // file (and point index) it came from
};

struct FitInput {
  std::vector<FitRow> rows;
  std::vector<std::string> sources;   // files read
  std::vector<std::string> not_used;  // "source: N points of kind K not used (why)"
};

// Appends the usable points of `table` (named `source`) to `input`.
absl::Status AddCalibrationRows(const proto::CalibrationTable& table, const std::string& source, FitInput* input);
void AddElementwiseRows(const std::vector<VidurElementwiseRow>& rows, const std::string& source, FitInput* input);

// Reads one Vidur profile directory (ImportVidurProfiles, single-node all-reduce, plus the element-wise
// columns of its mlp.csv), or a calibration table file, into `input`.
absl::Status AddMeasurements(const std::string& path, FitInput* input);

struct KindFitReport {
  std::string kind;  // kFitKinds entry, or "all_reduce/<g>"
  int num_parameters = 0;
  int64_t train_rows = 0, heldout_rows = 0;
  bool fitted = false;  // false: previous parameters kept (`note` says why)
  int iterations = 0;   // of the winning run
  double train_rms_log_error = 0;
  std::string note;
  // Held-out relative errors of the final parameters, and of the roofline (kernel_roofline.h with the
  // device's efficiencies) on the same rows, for comparison.
  std::vector<double> heldout_errors;
  std::vector<double> roofline_heldout_errors;
  // The held-out rows themselves, in heldout_errors order: where, measured and predicted seconds.
  struct Row {
    std::string where;
    std::string shape;
    double measured_s = 0, predicted_s = 0;
  };
  std::vector<Row> heldout;
};

struct FitResult {
  proto::FittedCostParams params;
  std::vector<KindFitReport> kinds;
};

struct FitOptions {
  int max_iterations = 400;  // Levenberg-Marquardt iterations per starting point (>= 1)
  // When set, the prefill-attention curve is not fitted to the input's rows but carried over from this
  // device's fitted parameters (TransferPrefillAttention): for a GPU whose prefill rows time a kernel
  // unlike a serving engine's (a `kvsim calibrate` table times kvsim's own prefill kernel, which has no
  // split-KV and runs at a fraction of FlashAttention-3's rate). The carried curve's error on those rows
  // is still reported, for comparison. Not owned; must outlive the call.
  const proto::DeviceSpec* prefill_attention_from = nullptr;
  // The same for the decode-attention curve (TransferDecodeAttention): for a GPU with no decode
  // measurements.
  const proto::DeviceSpec* decode_attention_from = nullptr;
};

// The fitted prefill-attention curve of `from` carried over to the GPU `to`. Efficiencies are fractions of
// each GPU's own peaks and stay as they are; the serial pass of one thread block is scaled by the ratio of
// the two GPUs' bf16 peak per SM (a block runs on one SM); the launch, merge and split-KV chunk and the
// causal terms stay. Its FitQuality: not fitted, `from`'s feature ranges, a note naming `from`.
// FailedPrecondition when `from` has no fitted prefill-attention curve (or either GPU lacks a bf16 peak or
// an SM count).
absl::StatusOr<proto::PrefillAttentionFit> TransferPrefillAttention(const proto::DeviceSpec& from,
                                                                    const proto::DeviceSpec& to);

// The fitted decode-attention curve of `from`, carried over as it is: its efficiencies are fractions of the
// memory bandwidth of whichever GPU runs it, its split-KV slots are thread blocks per SM x that GPU's SMs,
// and its launch, per-sequence and merge costs stay. FitQuality as above. FailedPrecondition when `from` has
// no fitted decode-attention curve.
absl::StatusOr<proto::DecodeAttentionFit> TransferDecodeAttention(const proto::DeviceSpec& from);

// Fits every kind of `input` on `device`'s peaks. `previous` supplies the parameters of kinds that cannot
// be fitted. FailedPrecondition when `input` has no rows or a device to carry a curve over from has none;
// InvalidArgument naming the field and its range when a fitted parameter falls outside config/model_spec.h
// ValidateFittedCostParams.
absl::StatusOr<FitResult> FitDevice(const FitInput& input, const proto::DeviceSpec& device,
                                    const proto::FittedCostParams& previous, const FitOptions& options = {});

// Median, p95 and worst of `errors` (0 for none).
struct ErrorSummary {
  double median = 0, p95 = 0, worst = 0;
};
ErrorSummary SummariseErrors(const std::vector<double>& errors);

// A plain-text table: per kind, rows, fitted or not, held-out median / p95 / worst of the fit and of the
// roofline, and the note.
std::string FormatFitReport(const FitResult& result);

// The `count` worst held-out predictions of the fit over all kinds, one per line.
std::string FormatWorstFitRows(const FitResult& result, int count);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_COST_FIT_H_
