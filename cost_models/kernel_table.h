// File: cost_models/kernel_table.h
//
// KernelTable: a calibration table organised for prediction. Points are grouped into series that share
// everything but their "size" features, and each series is a LogGridInterpolator over those features:
//
//   kind               series key (besides kind)                           features
//   decode attention   dtype+group, heads, KV heads, head_dim, segments    batch, context_tokens
//   prefill attention  dtype+group, heads, KV heads, head_dim, segments    batch, query_tokens, context_tokens
//   segment merge      heads, head_dim                                     batch, num_segments
//   GEMMs              dtype+group, in_features, out_features              rows (query_tokens x batch)
//   all-reduce         dtype, num_gpus                                     bytes
//   host<->device copy (none)                                              bytes
//
// The three GEMM kinds (KV projection, MLP, other linear) share series: a GEMM is a GEMM. Page size is
// not part of the key (FlashInfer reports it barely matters; rows that differ only in it are averaged).
//
// Prediction: inside a series' measured range, interpolation (exact at measured points) whose abscissae
// are the log of the kernel roofline without wave quantisation (see log_interpolator.h); outside, the
// kernel roofline (kernel_roofline.h, with wave quantisation over the SMs) scaled to meet the data at the
// nearest measured point, or the bare roofline if anchoring is off; both flagged `extrapolated`. A
// compressed-KV attention query with no series of its own borrows the bf16 series times the roofline
// ratio of the two formats (flagged). A query with no series at all gets the roofline (flagged
// `measured` = false).
//
// Immutable after Build; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(KernelTable table, KernelTable::Build(calibration, MakeDeviceRates(device), {}));
//   KernelTable::Prediction p = table.Predict(query);
#ifndef KVSIM_COST_MODELS_KERNEL_TABLE_H_
#define KVSIM_COST_MODELS_KERNEL_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost_models/kernel_roofline.h"
#include "cost_models/log_interpolator.h"
#include "proto/calibration.pb.h"

namespace kvsim {

struct KernelTableOptions {
  bool anchor_extrapolation = true;  // scale the roofline to the data at the boundary
  bool wave_quantisation = true;     // in the roofline prior
};

class KernelTable {
 public:
  struct Prediction {
    double seconds = 0;
    bool extrapolated = false;  // outside the measured range, or borrowed from another format
    bool measured = true;       // false: no series for this kernel; the roofline alone
  };

  // InvalidArgument naming the point index for points that fail ValidateCalibrationPoint.
  static absl::StatusOr<KernelTable> Build(const proto::CalibrationTable& table, const DeviceRates& rates,
                                           const KernelTableOptions& options);

  Prediction Predict(const KernelQuery& query) const;
  bool HasSeries(const KernelQuery& query) const;
  double RooflineSeconds(const KernelQuery& query) const;

  size_t num_series() const { return series_.size(); }
  size_t num_points() const { return num_points_; }

 private:
  Prediction PredictInSeries(const LogGridInterpolator& series, const KernelQuery& query) const;

  DeviceRates rates_;
  KernelTableOptions options_;
  std::map<std::string, LogGridInterpolator> series_;
  size_t num_points_ = 0;
};

// The series a query belongs to, and its feature vector (see the table above).
std::string KernelSeriesKey(const KernelQuery& query);
std::vector<double> KernelFeatures(const KernelQuery& query);
// `base` with its features replaced by `features`. REQUIRES: features from KernelFeatures of that kind.
KernelQuery WithKernelFeatures(KernelQuery base, const std::vector<double>& features);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_KERNEL_TABLE_H_
