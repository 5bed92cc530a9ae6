#include "cost_models/kernel_table.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "cost_models/calibration_table.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

bool IsGemm(proto::KernelKind kind) {
  return kind == proto::KERNEL_KIND_KV_PROJECTION || kind == proto::KERNEL_KIND_MLP_GEMM ||
         kind == proto::KERNEL_KIND_LINEAR_GEMM;
}

bool IsAttention(proto::KernelKind kind) {
  return kind == proto::KERNEL_KIND_DECODE_ATTENTION || kind == proto::KERNEL_KIND_PREFILL_ATTENTION;
}

int64_t Round(double x) { return static_cast<int64_t>(std::llround(x)); }

}  // namespace

std::string KernelSeriesKey(const KernelQuery& q) {
  const std::string format = q.format.Name();
  if (IsAttention(q.kind)) {
    return absl::StrCat(KernelKindName(q.kind), "|", format, "|h", q.num_heads, "|kv", q.num_kv_heads, "|d", q.head_dim,
                        "|s", q.num_segments);
  }
  if (IsGemm(q.kind)) return absl::StrCat("gemm|", format, "|", q.in_features, "->", q.out_features);
  switch (q.kind) {
    case proto::KERNEL_KIND_SEGMENT_MERGE:
      return absl::StrCat("segment_merge|h", q.num_heads, "|d", q.head_dim);
    case proto::KERNEL_KIND_ALL_REDUCE:
      return absl::StrCat("all_reduce|", format, "|g", q.num_gpus);
    default:
      return KernelKindName(q.kind);
  }
}

std::vector<double> KernelFeatures(const KernelQuery& q) {
  switch (q.kind) {
    case proto::KERNEL_KIND_DECODE_ATTENTION:
      return {double(q.batch), double(q.context_tokens)};
    case proto::KERNEL_KIND_PREFILL_ATTENTION:
      return {double(q.batch), double(q.query_tokens), double(q.context_tokens)};
    case proto::KERNEL_KIND_SEGMENT_MERGE:
      return {double(q.batch), double(q.num_segments)};
    case proto::KERNEL_KIND_ALL_REDUCE:
    case proto::KERNEL_KIND_HOST_DEVICE_COPY:
      return {double(q.bytes)};
    default:  // GEMMs
      return {double(q.query_tokens * q.batch)};
  }
}

KernelQuery WithKernelFeatures(KernelQuery q, const std::vector<double>& f) {
  switch (q.kind) {
    case proto::KERNEL_KIND_DECODE_ATTENTION:
      q.batch = Round(f[0]);
      q.context_tokens = Round(f[1]);
      break;
    case proto::KERNEL_KIND_PREFILL_ATTENTION:
      q.batch = Round(f[0]);
      q.query_tokens = Round(f[1]);
      q.context_tokens = Round(f[2]);
      break;
    case proto::KERNEL_KIND_SEGMENT_MERGE:
      q.batch = Round(f[0]);
      q.num_segments = Round(f[1]);
      break;
    case proto::KERNEL_KIND_ALL_REDUCE:
    case proto::KERNEL_KIND_HOST_DEVICE_COPY:
      q.bytes = Round(f[0]);
      break;
    default:
      q.batch = 1;
      q.query_tokens = Round(f[0]);
      break;
  }
  return q;
}

absl::StatusOr<KernelTable> KernelTable::Build(const proto::CalibrationTable& table, const DeviceRates& rates,
                                               const KernelTableOptions& options) {
  std::map<std::string, std::vector<LogGridInterpolator::Point>> points;
  std::map<std::string, int> dims;
  for (int i = 0; i < table.points_size(); ++i) {
    proto::CalibrationPoint point = table.points(i);
    FillCalibrationDefaults(&point);
    KVSIM_RETURN_IF_ERROR(ValidateCalibrationPoint(point, absl::StrCat("calibration point ", i)));
    const KernelQuery q = KernelQueryFromPoint(point);
    const std::string key = KernelSeriesKey(q);
    std::vector<double> features = KernelFeatures(q);
    dims[key] = features.size();
    points[key].push_back({std::move(features), point.median_ns() * 1e-9});
  }
  KernelTable result;
  result.rates_ = rates;
  result.options_ = options;
  result.num_points_ = table.points_size();
  for (auto& [key, series_points] : points) {
    KVSIM_ASSIGN_OR_RETURN(LogGridInterpolator interp, LogGridInterpolator::Build(series_points, dims[key]));
    result.series_.emplace(key, std::move(interp));
  }
  return result;
}

double KernelTable::RooflineSeconds(const KernelQuery& query) const {
  return KernelRooflineSeconds(query, rates_, options_.wave_quantisation);
}

bool KernelTable::HasSeries(const KernelQuery& query) const { return series_.count(KernelSeriesKey(query)) > 0; }

KernelTable::Prediction KernelTable::PredictInSeries(const LogGridInterpolator& series,
                                                     const KernelQuery& query) const {
  auto prior = [this, &query](const std::vector<double>& f) {
    return std::max(RooflineSeconds(WithKernelFeatures(query, f)), 1e-15);
  };
  auto scale = [this, &query](const std::vector<double>& f) {
    return KernelRooflineSeconds(WithKernelFeatures(query, f), rates_, /*wave_quantisation=*/false);
  };
  const LogGridInterpolator::Result r = series.Predict(KernelFeatures(query), prior, scale);
  Prediction p;
  p.extrapolated = r.extrapolated;
  p.seconds = r.extrapolated && !options_.anchor_extrapolation ? RooflineSeconds(query) : r.value;
  return p;
}

KernelTable::Prediction KernelTable::Predict(const KernelQuery& query) const {
  auto it = series_.find(KernelSeriesKey(query));
  if (it != series_.end()) return PredictInSeries(it->second, query);
  if (IsAttention(query.kind) && query.format.bits != 16) {
    // Borrow the bf16 series, scaled by the roofline ratio of the two formats.
    KernelQuery bf16 = query;
    bf16.format = KvFormat();
    auto base = series_.find(KernelSeriesKey(bf16));
    if (base != series_.end()) {
      Prediction p = PredictInSeries(base->second, bf16);
      p.seconds *= RooflineSeconds(query) / std::max(RooflineSeconds(bf16), 1e-15);
      p.extrapolated = true;
      return p;
    }
  }
  Prediction p;
  p.seconds = RooflineSeconds(query);
  p.extrapolated = true;
  p.measured = false;
  return p;
}

}  // namespace kvsim
