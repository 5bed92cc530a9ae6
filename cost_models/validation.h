// File: cost_models/validation.h
//
// How well a calibration table predicts itself: the error of the table model's interpolation on points
// it has not seen, per kernel kind.
//   - Leave-one-out: each point predicted from its series without it (a point at the edge of its series
//     is then an extrapolation through the roofline prior, as it would be in use).
//   - Held-out split: within each series (points in feature order), every `holdout_every`-th point,
//     starting at the middle of the first stride, is held out; the rest predict it. Deterministic.
// Errors are relative: |predicted - measured| / measured. A series with a single point has nothing to
// learn from; its point is predicted by the roofline alone (counted in `roofline_only`).
// Large series are sampled for leave-one-out (every k-th point, so at most `max_loo_points` per series).
// Stateless functions; thread-compatible.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(ValidationReport report, ValidateTable(table, MakeDeviceRates(device), {}));
//   std::cout << FormatValidationReport(report);
//   KVSIM_RETURN_IF_ERROR(WriteFileAtomically("plot.svg", ValidationPlotSvg(report, "h200.csv")));
#ifndef KVSIM_COST_MODELS_VALIDATION_H_
#define KVSIM_COST_MODELS_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost_models/kernel_roofline.h"
#include "proto/calibration.pb.h"

namespace kvsim {

struct ValidationOptions {
  int holdout_every = 5;      // hold out 1 point in this many
  int max_loo_points = 2000;  // per series
  bool wave_quantisation = true;
  bool leave_one_out = true;  // false: only the held-out split (cheap; what a replay reports)
};

struct ErrorStats {
  std::string kind;  // kernel kind name, or "all"
  int64_t count = 0;
  int64_t extrapolated = 0;               // predictions outside the remaining points' range
  int64_t roofline_only = 0;              // series too small to predict from
  double median = 0, p95 = 0, worst = 0;  // relative errors
};

struct PredictedPoint {
  std::string kind;
  double measured_ns = 0;
  double predicted_ns = 0;
};

// One held-out prediction, for listing the points a table predicts worst.
struct HeldOutPoint {
  std::string kind;
  std::string shape;  // the point's non-default shape fields, e.g. "bf16 batch=64 context=8192 segments=4"
  double measured_ns = 0;
  double predicted_ns = 0;
  double error = 0;  // relative
  bool extrapolated = false;
};

struct ValidationReport {
  std::vector<ErrorStats> leave_one_out;  // one per kind present, then "all"
  std::vector<ErrorStats> held_out;
  std::vector<PredictedPoint> loo_points;     // for the plot
  std::vector<HeldOutPoint> held_out_points;  // every held-out prediction, worst first
  int64_t num_points = 0;
  int64_t num_series = 0;
};

// InvalidArgument (naming the point) for invalid points; FailedPrecondition for an empty table.
absl::StatusOr<ValidationReport> ValidateTable(const proto::CalibrationTable& table, const DeviceRates& rates,
                                               const ValidationOptions& options);

// A plain-text table: one row per kind with count, median, p95 and worst error of both methods.
std::string FormatValidationReport(const ValidationReport& report);

// The `count` worst held-out predictions (kind, shape, measured, predicted, error), one per line.
std::string FormatWorstHeldOut(const ValidationReport& report, int count);

// Log-log scatter of predicted (leave-one-out) against measured time, one colour per kind, with the
// y = x line, decade grid, axis labels and a legend. Self-contained SVG 1.1.
std::string ValidationPlotSvg(const ValidationReport& report, const std::string& title);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_VALIDATION_H_
