#include "cost_models/cost_fit.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

#include "Eigen/Dense"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "config/field_checks.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
#include "cost_models/calibration_table.h"
#include "cost_models/fitted_kernels.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

constexpr int kHoldoutEvery = 5;
constexpr int kHoldoutOffset = 2;
// Thread blocks per SM the decode-attention fit tries (DecodeAttentionFit.ctas_per_sm).
constexpr int32_t kCtasPerSmCandidates[] = {1, 2, 3, 4};
// The split-KV chunks the prefill fit tries (PrefillAttentionFit.split_chunk_tokens).
constexpr int32_t kPrefillSplitChunkCandidates[] = {128, 256, 512, 1024, 2048};
constexpr double kConvergedRelativeDecrease = 1e-10;

// How an unconstrained fit variable maps to a parameter value.
enum class Transform { kLog, kLogit, kLogMinusOne };

double ToValue(double theta, Transform t) {
  switch (t) {
    case Transform::kLog:
      return std::exp(theta);
    case Transform::kLogit:
      return 1 / (1 + std::exp(-theta));
    case Transform::kLogMinusOne:
      return 1 + std::exp(theta);
  }
  return theta;
}

double ToTheta(double value, Transform t) {
  switch (t) {
    case Transform::kLog:
      return std::log(std::max(value, 1e-300));
    case Transform::kLogit: {
      const double v = std::clamp(value, 1e-9, 1 - 1e-9);
      return std::log(v / (1 - v));
    }
    case Transform::kLogMinusOne:
      return std::log(std::max(value - 1, 1e-12));
  }
  return value;
}

// One curve to fit: parameter values -> predicted seconds of a row.
struct Curve {
  std::string name;
  std::vector<Transform> transforms;
  std::function<double(const std::vector<double>& values, const FitRow& row)> predict;
  std::vector<std::vector<double>> starts;  // parameter values
};

struct LmOutcome {
  std::vector<double> theta;
  double cost = 0;
  bool converged = false;
  int iterations = 0;
};

std::vector<double> Values(const Curve& curve, const std::vector<double>& theta) {
  std::vector<double> v(theta.size());
  for (size_t i = 0; i < theta.size(); ++i) v[i] = ToValue(theta[i], curve.transforms[i]);
  return v;
}

double LogResidual(double predicted, double measured) {
  if (!(predicted > 0) || !std::isfinite(predicted)) return 50;
  return std::log(predicted / measured);
}

void Residuals(const Curve& curve, const std::vector<const FitRow*>& rows, const std::vector<double>& theta,
               Eigen::VectorXd* r) {
  const std::vector<double> values = Values(curve, theta);
  r->resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) (*r)(i) = LogResidual(curve.predict(values, *rows[i]), rows[i]->measured_s);
}

// Levenberg-Marquardt on sum of squared log residuals (see cost_fit.h).
LmOutcome LevenbergMarquardt(const Curve& curve, const std::vector<const FitRow*>& rows, std::vector<double> theta,
                             int max_iterations) {
  const int p = static_cast<int>(theta.size());
  Eigen::VectorXd r, r_plus, r_minus;
  Residuals(curve, rows, theta, &r);
  LmOutcome out;
  double cost = r.squaredNorm();
  double lambda = 1e-3;
  Eigen::MatrixXd jacobian(rows.size(), p);
  for (int iter = 1; iter <= max_iterations; ++iter) {
    out.iterations = iter;
    for (int j = 0; j < p; ++j) {
      const double h = 1e-6 * std::max(1.0, std::abs(theta[j]));
      std::vector<double> plus = theta, minus = theta;
      plus[j] += h;
      minus[j] -= h;
      Residuals(curve, rows, plus, &r_plus);
      Residuals(curve, rows, minus, &r_minus);
      jacobian.col(j) = (r_plus - r_minus) / (2 * h);
    }
    const Eigen::MatrixXd jtj = jacobian.transpose() * jacobian;
    const Eigen::VectorXd gradient = jacobian.transpose() * r;
    bool accepted = false;
    while (lambda < 1e12) {
      Eigen::MatrixXd a = jtj;
      for (int j = 0; j < p; ++j) a(j, j) += lambda * (jtj(j, j) + 1e-12);
      const Eigen::VectorXd step = a.ldlt().solve(-gradient);
      std::vector<double> candidate = theta;
      for (int j = 0; j < p; ++j) candidate[j] += step(j);
      Eigen::VectorXd r_candidate;
      Residuals(curve, rows, candidate, &r_candidate);
      const double candidate_cost = r_candidate.squaredNorm();
      if (std::isfinite(candidate_cost) && candidate_cost < cost) {
        const double decrease = (cost - candidate_cost) / std::max(cost, 1e-300);
        theta = candidate;
        r = r_candidate;
        cost = candidate_cost;
        lambda = std::max(lambda / 10, 1e-12);
        accepted = true;
        if (decrease < kConvergedRelativeDecrease) {
          out.converged = true;
        }
        break;
      }
      lambda *= 10;
    }
    // No step lowers the cost at any damping: a minimum to working precision.
    if (!accepted) out.converged = std::isfinite(cost);
    if (out.converged) break;
  }
  out.theta = theta;
  out.cost = cost;
  return out;
}

// The feature vector a row is sorted and ranged by (FitQuality feature_min/max order).
std::vector<double> Features(const FitRow& row) {
  const KernelQuery& q = row.query;
  if (row.kind == "gemm") return {static_cast<double>(q.query_tokens * q.batch)};
  if (row.kind == "prefill_attention") {
    return {static_cast<double>(q.query_tokens), static_cast<double>(q.context_tokens)};
  }
  if (row.kind == "decode_attention") return {static_cast<double>(q.batch), static_cast<double>(q.context_tokens)};
  if (row.kind == "elementwise") return {static_cast<double>(q.query_tokens)};
  return {static_cast<double>(q.bytes)};
}

// Sort key within a kind: the full shape, then the time (so the split does not depend on file order).
std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, double> SortKey(const FitRow& row) {
  const KernelQuery& q = row.query;
  return {q.num_gpus,     q.in_features,    q.out_features, q.num_heads,   q.batch,
          q.query_tokens, q.context_tokens, q.bytes,        row.measured_s};
}

// The measured kernels read bf16 KV.
double KvBytesPerToken(const KernelQuery& q) {
  return KvBytesPerTokenPerLayer(std::max<int64_t>(1, q.num_kv_heads), q.head_dim, KvFormat());
}

bool IsHalf(const KvFormat& f) { return f.bits == 16; }

// Parameter values <-> messages. Order as in the Curve transforms.
std::vector<double> GemmValues(const proto::GemmFit& f) {
  return {f.launch_ns(), f.compute_efficiency(), f.memory_efficiency(), f.ridge_exponent(), f.wave_weight()};
}
void SetGemm(const std::vector<double>& v, proto::GemmFit* f) {
  f->set_launch_ns(v[0]);
  f->set_compute_efficiency(v[1]);
  f->set_memory_efficiency(v[2]);
  f->set_ridge_exponent(v[3]);
  f->set_wave_weight(v[4]);
}
// The continuous parameters: the base curve's five, then the serial and split-KV terms' three
// (split_chunk_tokens is chosen by trying each value; FitDevice).
constexpr size_t kPrefillBaseValues = 5;
std::vector<double> PrefillValues(const proto::PrefillAttentionFit& f) {
  return {f.launch_ns(),         f.compute_efficiency(),  f.half_efficiency_tokens(), f.causal_pair_cost(),
          f.memory_efficiency(), f.causal_extra_tokens(), f.serial_ns_per_token(),    f.split_ns()};
}
// `v` holds all eight values, or the base curve's five (the other terms are then 0: off).
void SetPrefill(const std::vector<double>& v, proto::PrefillAttentionFit* f) {
  f->set_launch_ns(v[0]);
  f->set_compute_efficiency(v[1]);
  f->set_half_efficiency_tokens(v[2]);
  f->set_causal_pair_cost(v[3]);
  f->set_memory_efficiency(v[4]);
  const bool full = v.size() > kPrefillBaseValues;
  f->set_causal_extra_tokens(full ? v[5] : 0);
  f->set_serial_ns_per_token(full ? v[6] : 0);
  f->set_split_ns(full ? v[7] : 0);
}
// The continuous parameters (ctas_per_sm is chosen by trying each value; FitDevice).
std::vector<double> DecodeValues(const proto::DecodeAttentionFit& f) {
  return {f.launch_ns(), f.per_sequence_ns(), f.memory_efficiency(), f.wave_weight(), f.split_ns(),
          SplitMemoryEfficiency(f)};
}
void SetDecode(const std::vector<double>& v, proto::DecodeAttentionFit* f) {
  f->set_launch_ns(v[0]);
  f->set_per_sequence_ns(v[1]);
  f->set_memory_efficiency(v[2]);
  f->set_wave_weight(v[3]);
  f->set_split_ns(v[4]);
  f->set_split_memory_efficiency(v[5]);
}
std::vector<double> ElementwiseValues(const proto::ElementwiseFit& f) {
  return {f.launch_ns(), f.ns_per_token_element(), f.ns_per_token_element_beyond_cache(),
          f.cache_resident_token_elements()};
}
void SetElementwise(const std::vector<double>& v, proto::ElementwiseFit* f) {
  f->set_launch_ns(v[0]);
  f->set_ns_per_token_element(v[1]);
  f->set_ns_per_token_element_beyond_cache(v[2]);
  f->set_cache_resident_token_elements(v[3]);
}
std::vector<double> AllReduceValues(const proto::AllReduceFit& f) {
  return {f.latency_ns(),   f.bus_bandwidth_bytes_per_s(), f.large_latency_ns(), f.large_bus_bandwidth_bytes_per_s(),
          f.switch_bytes(), f.bulk_switch_bytes(),         f.bulk_latency_ns(),  f.bulk_bus_bandwidth_bytes_per_s()};
}
// A protocol whose time is all latency fits an unbounded bandwidth: bandwidths are held inside the
// range ValidateFittedCostParams accepts (at 1e16 bytes/s a 1 GB message costs 0.1 us), so that the
// curve the fit evaluates is the one stored.
double BoundBandwidth(double bytes_per_s) {
  return bytes_per_s <= 0 ? 0 : std::clamp(bytes_per_s, kMinBytesPerS, kMaxBytesPerS);
}
void SetAllReduce(const std::vector<double>& v, proto::AllReduceFit* f) {
  f->set_latency_ns(v[0]);
  f->set_bus_bandwidth_bytes_per_s(std::clamp(v[1], kMinBytesPerS, kMaxBytesPerS));
  f->set_large_latency_ns(v[2]);
  f->set_large_bus_bandwidth_bytes_per_s(BoundBandwidth(v[3]));
  // The two switches in increasing order (the fit moves them freely).
  f->set_switch_bytes(std::min(v[4], v[5]));
  f->set_bulk_switch_bytes(std::max(v[4], v[5]));
  f->set_bulk_latency_ns(v[6]);
  f->set_bulk_bus_bandwidth_bytes_per_s(BoundBandwidth(v[7]));
}

// Documented starting values, used when a kind cannot be fitted and no previous parameters exist: the
// roofline's efficiencies (DeviceSpec defaults), no latency floor, a sharp ridge, no wave term.
proto::FittedCostParams Defaults(const proto::DeviceSpec& device) {
  proto::FittedCostParams p;
  const double ce = device.has_compute_efficiency() ? device.compute_efficiency() : 0.7;
  const double me = device.has_memory_efficiency() ? device.memory_efficiency() : 0.8;
  SetGemm({1, ce, me, 50, 1e-6}, p.mutable_gemm());
  SetPrefill({1, ce, 1e-6, 1, me}, p.mutable_prefill_attention());
  SetDecode({1, 1e-6, me, 1e-6, 0, me}, p.mutable_decode_attention());
  p.mutable_decode_attention()->set_ctas_per_sm(1);
  SetElementwise({1, 1e-9, 0, 0}, p.mutable_elementwise());
  return p;
}

// Finite and non-negative (a fraction or floor may legitimately fit to ~0; efficiencies cannot reach 0
// through their logit).
bool Usable(const std::vector<double>& values) {
  for (double v : values) {
    if (!(v >= 0) || !std::isfinite(v)) return false;
  }
  return true;
}

struct KindOutcome {
  std::vector<double> values;
  KindFitReport report;
  proto::FitQuality quality;
};

// Splits, fits and evaluates one curve over `rows` (all of one kind).
KindOutcome FitCurve(const Curve& curve, std::vector<const FitRow*> rows, const std::vector<double>& previous,
                     const std::string& previous_name, const DeviceRates& rates, int max_iterations) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FitRow* a, const FitRow* b) { return SortKey(*a) < SortKey(*b); });
  std::vector<const FitRow*> train, held;
  for (size_t i = 0; i < rows.size(); ++i) (i % kHoldoutEvery == kHoldoutOffset ? held : train).push_back(rows[i]);
  KindOutcome out;
  KindFitReport& rep = out.report;
  rep.kind = curve.name;
  rep.num_parameters = static_cast<int>(curve.transforms.size());
  rep.train_rows = train.size();
  rep.heldout_rows = held.size();
  const size_t min_rows = std::max<size_t>(12, 4 * curve.transforms.size());
  out.values = previous;
  if (train.size() < min_rows) {
    rep.note = absl::StrCat("too few rows (", train.size(), " training < ", min_rows, "): ", previous_name, " kept");
  } else {
    bool any = false;
    LmOutcome best;
    for (const std::vector<double>& start : curve.starts) {
      std::vector<double> theta(start.size());
      for (size_t i = 0; i < start.size(); ++i) theta[i] = ToTheta(start[i], curve.transforms[i]);
      LmOutcome o = LevenbergMarquardt(curve, train, theta, max_iterations);
      if (!o.converged) continue;
      if (!any || o.cost < best.cost) best = o;
      any = true;
    }
    const std::vector<double> values = any ? Values(curve, best.theta) : std::vector<double>();
    if (!any) {
      rep.note = absl::StrCat("no start converged within ", max_iterations, " iterations: ", previous_name, " kept");
    } else if (!Usable(values)) {
      rep.note = absl::StrCat("fit gave unusable parameters: ", previous_name, " kept");
    } else {
      out.values = values;
      rep.fitted = true;
      rep.iterations = best.iterations;
      rep.train_rms_log_error = std::sqrt(best.cost / train.size());
    }
  }
  proto::FitQuality& q = out.quality;
  q.set_fitted(rep.fitted);
  q.set_train_rows(train.size());
  q.set_heldout_rows(held.size());
  q.set_note(rep.note);
  for (const FitRow* row : held) {
    const double predicted = curve.predict(out.values, *row);
    rep.heldout_errors.push_back(std::abs(predicted - row->measured_s) / row->measured_s);
    const KernelQuery& k = row->query;
    rep.heldout.push_back({row->where,
                           absl::StrFormat("batch=%d tokens=%d context=%d in=%d out=%d bytes=%d", k.batch,
                                           k.query_tokens, k.context_tokens, k.in_features, k.out_features, k.bytes),
                           row->measured_s, predicted});
    const double roofline = KernelRooflineSeconds(row->query, rates, /*wave_quantisation=*/false);
    rep.roofline_heldout_errors.push_back(std::abs(roofline - row->measured_s) / row->measured_s);
  }
  if (curve.name != "elementwise") {  // the roofline has no element-wise term
    const ErrorSummary r = SummariseErrors(rep.roofline_heldout_errors);
    q.set_roofline_heldout_median_error(r.median);
    q.set_roofline_heldout_p95_error(r.p95);
  }
  const ErrorSummary e = SummariseErrors(rep.heldout_errors);
  q.set_heldout_median_error(e.median);
  q.set_heldout_p95_error(e.p95);
  q.set_heldout_worst_error(e.worst);
  if (!rows.empty()) {
    std::vector<double> lo = Features(*rows[0]), hi = lo;
    for (const FitRow* row : rows) {
      const std::vector<double> f = Features(*row);
      for (size_t i = 0; i < f.size(); ++i) {
        lo[i] = std::min(lo[i], f[i]);
        hi[i] = std::max(hi[i], f[i]);
      }
    }
    for (size_t i = 0; i < lo.size(); ++i) {
      q.add_feature_min(lo[i]);
      q.add_feature_max(hi[i]);
    }
  }
  return out;
}

// FitCurve of `curve_for(v)` for each value v of a discrete parameter, in order.
struct DiscreteFit {
  KindOutcome best;           // the lowest training cost (the earlier value on a tie)
  int32_t value = 0;          // its value; 0: no value fitted
  std::string first_failure;  // the note of the first value that did not fit
};
DiscreteFit FitEachValue(absl::Span<const int32_t> values, const std::function<Curve(int32_t)>& curve_for,
                         const std::vector<const FitRow*>& rows, const std::vector<double>& previous,
                         const std::string& previous_name, const DeviceRates& rates, int max_iterations) {
  DiscreteFit fit;
  for (int32_t v : values) {
    KindOutcome o = FitCurve(curve_for(v), rows, previous, previous_name, rates, max_iterations);
    if (!o.report.fitted && fit.first_failure.empty()) fit.first_failure = o.report.note;
    if (o.report.fitted && (fit.value == 0 || o.report.train_rms_log_error < fit.best.report.train_rms_log_error)) {
      fit.best = std::move(o);
      fit.value = v;
    }
  }
  return fit;
}

}  // namespace

ErrorSummary SummariseErrors(const std::vector<double>& errors) {
  ErrorSummary s;
  if (errors.empty()) return s;
  std::vector<double> v = errors;
  std::sort(v.begin(), v.end());
  auto quantile = [&v](double q) {
    const double pos = q * (v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
    return v[lo] + (v[hi] - v[lo]) * (pos - lo);
  };
  s.median = quantile(0.5);
  s.p95 = quantile(0.95);
  s.worst = v.back();
  return s;
}

absl::Status AddCalibrationRows(const proto::CalibrationTable& table, const std::string& source, FitInput* input) {
  std::map<std::string, int64_t> not_used;
  for (int i = 0; i < table.points_size(); ++i) {
    proto::CalibrationPoint point = table.points(i);
    FillCalibrationDefaults(&point);
    KVSIM_RETURN_IF_ERROR(ValidateCalibrationPoint(point, absl::StrCat(source, ": points[", i, "]")));
    FitRow row;
    row.query = KernelQueryFromPoint(point);
    row.measured_s = point.median_ns() * 1e-9;
    row.where = absl::StrCat(source, ": points[", i, "]");
    switch (point.kind()) {
      case proto::KERNEL_KIND_LINEAR_GEMM:
      case proto::KERNEL_KIND_MLP_GEMM:
      case proto::KERNEL_KIND_KV_PROJECTION:
        row.kind = "gemm";
        break;
      case proto::KERNEL_KIND_PREFILL_ATTENTION:
        row.kind = "prefill_attention";
        break;
      case proto::KERNEL_KIND_DECODE_ATTENTION:
        row.kind = "decode_attention";
        break;
      case proto::KERNEL_KIND_ALL_REDUCE:
        row.kind = "all_reduce";
        break;
      default:
        ++not_used[absl::StrCat(KernelKindName(point.kind()), " (no fitted curve)")];
        continue;
    }
    if (row.kind != "all_reduce" && !IsHalf(row.query.format)) {
      ++not_used[absl::StrCat(KernelKindName(point.kind()), " (", point.dtype(), ": only bf16/fp16 are fitted)")];
      continue;
    }
    if (row.query.num_segments != 1) {
      ++not_used[absl::StrCat(KernelKindName(point.kind()), " (multi-segment)")];
      continue;
    }
    input->rows.push_back(std::move(row));
  }
  for (const auto& [why, count] : not_used) {
    input->not_used.push_back(absl::StrCat(source, ": ", count, " points of ", why, " not used"));
  }
  input->sources.push_back(source);
  return absl::OkStatus();
}

void AddElementwiseRows(const std::vector<VidurElementwiseRow>& rows, const std::string& source, FitInput* input) {
  int64_t sharded = 0;
  for (const VidurElementwiseRow& r : rows) {
    // The ops run on the full hidden size whatever the sharding, but the activation is sharded: keep
    // the unsharded rows, where the measured sum matches the per-layer composition exactly.
    if (r.tensor_parallel != 1) {
      ++sharded;
      continue;
    }
    FitRow row;
    row.kind = "elementwise";
    row.query.kind = proto::KERNEL_KIND_UNSPECIFIED;
    row.query.query_tokens = r.tokens;
    row.query.in_features = r.hidden;
    row.measured_s = r.median_ms * 1e-3;
    row.where = r.where;
    input->rows.push_back(std::move(row));
  }
  if (sharded > 0) {
    input->not_used.push_back(
        absl::StrCat(source, ": ", sharded, " element-wise rows of tensor-parallel shards not used"));
  }
}

absl::Status AddMeasurements(const std::string& path, FitInput* input) {
  absl::StatusOr<std::string> mlp = ReadFile(path + "/mlp.csv");
  const bool is_dir = mlp.ok() || ReadFile(path + "/all_reduce.csv").ok() || ReadFile(path + "/attention.csv").ok() ||
                      ReadFile(path + "/attention_sample.csv").ok();
  if (!is_dir) {
    KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ReadCalibrationTable(path));
    return AddCalibrationRows(table, path, input);
  }
  VidurImportReport report;
  KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ImportVidurProfiles(path, &report));
  KVSIM_RETURN_IF_ERROR(AddCalibrationRows(table, path, input));
  if (mlp.ok()) {
    std::vector<VidurElementwiseRow> rows;
    KVSIM_RETURN_IF_ERROR(ImportVidurElementwiseCsv(*mlp, path + "/mlp.csv", &rows, &report));
    AddElementwiseRows(rows, path + "/mlp.csv", input);
  }
  return absl::OkStatus();
}

namespace {

// FailedPrecondition unless `from` has a fitted curve of `kind` (its `quality`) to carry over.
absl::Status CheckCarriable(const proto::DeviceSpec& from, const proto::FitQuality& quality, absl::string_view kind) {
  if (from.fitted().unfitted() || !quality.fitted()) {
    return absl::FailedPreconditionError(
        absl::StrCat("device '", from.name(), "' has no fitted ", kind, " curve to carry over"));
  }
  return absl::OkStatus();
}

// The FitQuality of a curve carried over from `from` (its quality `from_quality`): not fitted, the same
// feature ranges, a note naming `from` and what was scaled.
proto::FitQuality CarriedQuality(const proto::DeviceSpec& from, const proto::FitQuality& from_quality,
                                 absl::string_view scaled) {
  proto::FitQuality quality;
  quality.mutable_feature_min()->CopyFrom(from_quality.feature_min());
  quality.mutable_feature_max()->CopyFrom(from_quality.feature_max());
  quality.set_note(absl::StrCat("carried over from ", from.name(), "'s fit (", scaled, "), not fitted on this GPU"));
  return quality;
}

}  // namespace

absl::StatusOr<proto::PrefillAttentionFit> TransferPrefillAttention(const proto::DeviceSpec& from,
                                                                    const proto::DeviceSpec& to) {
  KVSIM_RETURN_IF_ERROR(CheckCarriable(from, from.fitted().prefill_attention().quality(), "prefill-attention"));
  for (const proto::DeviceSpec* d : {&from, &to}) {
    if (!(d->peak_bf16_flops() > 0) || d->num_sms() <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device '", d->name(), "': carrying a prefill-attention curve over needs peak_bf16_flops and num_sms"));
    }
  }
  proto::PrefillAttentionFit f = from.fitted().prefill_attention();
  const double from_per_sm = from.peak_bf16_flops() / from.num_sms(), to_per_sm = to.peak_bf16_flops() / to.num_sms();
  f.set_serial_ns_per_token(f.serial_ns_per_token() * from_per_sm / to_per_sm);
  *f.mutable_quality() = CarriedQuality(
      from, f.quality(),
      absl::StrFormat("efficiencies as fractions of this GPU's peaks, serial pass x %.4f by bf16 peak per SM",
                      from_per_sm / to_per_sm));
  return f;
}

absl::StatusOr<proto::DecodeAttentionFit> TransferDecodeAttention(const proto::DeviceSpec& from) {
  KVSIM_RETURN_IF_ERROR(CheckCarriable(from, from.fitted().decode_attention().quality(), "decode-attention"));
  proto::DecodeAttentionFit f = from.fitted().decode_attention();
  *f.mutable_quality() = CarriedQuality(from, f.quality(), "efficiencies as fractions of this GPU's bandwidth");
  return f;
}

absl::StatusOr<FitResult> FitDevice(const FitInput& input, const proto::DeviceSpec& device,
                                    const proto::FittedCostParams& previous, const FitOptions& options) {
  if (input.rows.empty()) return absl::FailedPreconditionError("no measured rows to fit");
  if (options.max_iterations < 1) return absl::InvalidArgumentError("FitOptions.max_iterations must be >= 1");
  const int max_iterations = options.max_iterations;
  const DevicePeaks peaks = MakeDevicePeaks(device);
  const DeviceRates rates = MakeDeviceRates(device);
  const bool has_previous = !previous.unfitted() && previous.has_gemm();
  // A kind the previous parameters lack starts from the documented values too (never zeros).
  proto::FittedCostParams base = Defaults(device);
  if (has_previous) {
    const proto::FittedCostParams defaults = base;
    base = previous;
    if (!previous.has_prefill_attention()) *base.mutable_prefill_attention() = defaults.prefill_attention();
    if (!previous.has_decode_attention()) *base.mutable_decode_attention() = defaults.decode_attention();
    if (!previous.has_elementwise()) *base.mutable_elementwise() = defaults.elementwise();
  }
  const std::string base_name = has_previous ? "previous parameters" : "roofline-equivalent starting values";
  std::map<std::string, std::vector<const FitRow*>> by_kind;
  std::map<int64_t, std::vector<const FitRow*>> all_reduce;
  for (const FitRow& row : input.rows) {
    if (row.kind == "all_reduce") {
      all_reduce[row.query.num_gpus].push_back(&row);
    } else {
      by_kind[row.kind].push_back(&row);
    }
  }
  FitResult result;
  proto::FittedCostParams& out = result.params;
  out.set_iteration_overhead_ns(base.iteration_overhead_ns());

  Curve gemm{
      "gemm",
      {Transform::kLog, Transform::kLogit, Transform::kLogit, Transform::kLogMinusOne, Transform::kLogit},
      [&peaks](const std::vector<double>& v, const FitRow& r) {
        proto::GemmFit f;
        SetGemm(v, &f);
        const KernelQuery& q = r.query;
        return FittedGemmSeconds(f, peaks, peaks.bf16_flops_per_s, 2.0, q.query_tokens * q.batch, q.out_features,
                                 q.in_features);
      },
      {{5000, 0.6, 0.8, 2, 0.5}, {5000, 0.85, 0.8, 2, 0.5}, {5000, 0.6, 0.8, 8, 0.5}, {5000, 0.85, 0.8, 8, 0.5}}};
  // Prefill attention, for each split-KV chunk tried (0: the base curve, without the serial and split
  // terms): efficiency ramps at 64 and 512 tokens; with the terms, merges of 1 and 10 us.
  auto prefill_curve = [&peaks](int32_t split_chunk_tokens) {
    Curve c{"prefill_attention",
            {Transform::kLog, Transform::kLogit, Transform::kLog, Transform::kLog, Transform::kLogit},
            [&peaks, split_chunk_tokens](const std::vector<double>& v, const FitRow& r) {
              proto::PrefillAttentionFit f;
              SetPrefill(v, &f);
              f.set_split_chunk_tokens(split_chunk_tokens);
              const KernelQuery& q = r.query;
              return FittedPrefillSeconds(f, peaks, q.batch, q.query_tokens, q.context_tokens, q.num_heads,
                                          q.num_kv_heads, q.head_dim, KvBytesPerToken(q));
            },
            {}};
    if (split_chunk_tokens == 0) {
      c.starts = {
          {10000, 0.5, 64, 1, 0.5}, {10000, 0.5, 512, 1, 0.5}, {10000, 0.5, 64, 2, 0.5}, {10000, 0.5, 512, 2, 0.5}};
      return c;
    }
    c.transforms.insert(c.transforms.end(), {Transform::kLog, Transform::kLog, Transform::kLog});
    for (double half_tokens : {64.0, 512.0}) {
      for (double split_ns : {1000.0, 10000.0}) c.starts.push_back({5000, 0.5, half_tokens, 1, 0.5, 128, 50, split_ns});
    }
    return c;
  };
  // Decode attention, for each thread-block residency tried: split-KV merges of 1 and 10 us, efficiencies
  // of 0.5 and 0.8.
  auto decode_curve = [&peaks](int32_t ctas_per_sm) {
    Curve c{"decode_attention",
            {Transform::kLog, Transform::kLog, Transform::kLogit, Transform::kLogit, Transform::kLog, Transform::kLogit},
            [&peaks, ctas_per_sm](const std::vector<double>& v, const FitRow& r) {
              proto::DecodeAttentionFit f;
              SetDecode(v, &f);
              f.set_ctas_per_sm(ctas_per_sm);
              const KernelQuery& q = r.query;
              return FittedDecodeSeconds(f, peaks, q.batch, static_cast<double>(q.batch) * q.context_tokens,
                                         q.context_tokens, q.num_kv_heads, KvBytesPerToken(q));
            },
            {}};
    for (double split_ns : {1000.0, 10000.0}) {
      for (double efficiency : {0.5, 0.8}) {
        for (double wave_weight : {0.2, 0.8}) {
          c.starts.push_back({5000, 200, efficiency, wave_weight, split_ns, efficiency});
        }
      }
    }
    return c;
  };
  Curve elementwise{"elementwise",
                    {Transform::kLog, Transform::kLog, Transform::kLog, Transform::kLog},
                    [](const std::vector<double>& v, const FitRow& r) {
                      proto::ElementwiseFit f;
                      SetElementwise(v, &f);
                      return FittedElementwiseSeconds(f, r.query.query_tokens, r.query.in_features);
                    },
                    // Knees at 1M, 4M and 16M token elements (2, 8 and 32 MB of bf16 activations, up to
                    // the 40-60 MB L2 caches of the fitted GPUs); the six ops move ~24 bytes per token
                    // element, 0.01-0.02 ns at 1-2 TB/s.
                    {{20000, 0.01, 0.02, 1e6},
                     {20000, 0.01, 0.02, 4e6},
                     {20000, 0.01, 0.02, 16e6},
                     {5000, 0.02, 0.04, 1e6},
                     {5000, 0.02, 0.04, 4e6},
                     {5000, 0.02, 0.04, 16e6}}};

  // The report of a curve carried over from another GPU (FitOptions): not fitted; its error on this GPU's
  // held-out rows, if any, for comparison.
  auto carried_report = [&](Curve curve, const std::vector<double>& values, const proto::FitQuality& quality) {
    curve.starts.clear();  // evaluated, not fitted
    KindFitReport report = FitCurve(curve, by_kind[curve.name], values, base_name, rates, 1).report;
    report.fitted = false;
    report.note = quality.note();
    if (!by_kind[curve.name].empty()) report.note += "; error against this GPU's rows for comparison only";
    return report;
  };
  auto run = [&](const Curve& curve, const std::vector<double>& prev) {
    KindOutcome o = FitCurve(curve, by_kind[curve.name], prev, base_name, rates, max_iterations);
    result.kinds.push_back(o.report);
    return o;
  };
  {
    KindOutcome o = run(gemm, GemmValues(base.gemm()));
    SetGemm(o.values, out.mutable_gemm());
    *out.mutable_gemm()->mutable_quality() = o.quality;
  }
  if (options.prefill_attention_from != nullptr) {
    // Carried over, not fitted: this GPU's rows only measure how far the carried curve is from them.
    KVSIM_ASSIGN_OR_RETURN(proto::PrefillAttentionFit carried,
                           TransferPrefillAttention(*options.prefill_attention_from, device));
    result.kinds.push_back(
        carried_report(prefill_curve(carried.split_chunk_tokens()), PrefillValues(carried), carried.quality()));
    *out.mutable_prefill_attention() = carried;
  } else {
    // split_chunk_tokens is discrete: a fit per value, the lowest training cost kept (the smaller value on
    // a tie). When none fits (too few rows for its eight parameters, say), the base curve is fitted; when
    // that does not fit either, the previous parameters are kept whole.
    const std::vector<const FitRow*>& rows = by_kind["prefill_attention"];
    const std::vector<double> previous_values = PrefillValues(base.prefill_attention());
    const std::vector<double> previous_base(previous_values.begin(), previous_values.begin() + kPrefillBaseValues);
    DiscreteFit each = FitEachValue(kPrefillSplitChunkCandidates, prefill_curve, rows, previous_values, base_name,
                                    rates, max_iterations);
    KindOutcome best = std::move(each.best);
    int32_t best_chunk = each.value;
    if (best_chunk > 0) {
      best.report.note = absl::StrCat("split_chunk_tokens ", best_chunk, " by training cost");
      best.quality.set_note(best.report.note);
    } else {
      best = FitCurve(prefill_curve(0), rows, previous_base, base_name, rates, max_iterations);
      if (best.report.fitted) {
        const absl::string_view why = absl::StripSuffix(each.first_failure, absl::StrCat(": ", base_name, " kept"));
        best.report.note = absl::StrCat("without the serial and split-KV terms (full curve: ", why, ")");
        best.quality.set_note(best.report.note);
      } else {
        // Report the previous parameters' own held-out error, with their own split-KV chunk.
        best_chunk = base.prefill_attention().split_chunk_tokens();
        best = FitCurve(prefill_curve(best_chunk), rows, best_chunk > 0 ? previous_values : previous_base, base_name,
                        rates, max_iterations);
      }
    }
    result.kinds.push_back(best.report);
    SetPrefill(best.values, out.mutable_prefill_attention());
    out.mutable_prefill_attention()->set_split_chunk_tokens(best_chunk);
    *out.mutable_prefill_attention()->mutable_quality() = best.quality;
  }
  if (options.decode_attention_from != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(proto::DecodeAttentionFit carried, TransferDecodeAttention(*options.decode_attention_from));
    result.kinds.push_back(
        carried_report(decode_curve(std::max(1, carried.ctas_per_sm())), DecodeValues(carried), carried.quality()));
    *out.mutable_decode_attention() = carried;
  } else {
    // ctas_per_sm is discrete: a fit per value, the lowest training cost kept (the smaller value on a
    // tie). When none fits, the previous parameters are kept with their own value.
    const std::vector<const FitRow*>& rows = by_kind["decode_attention"];
    const std::vector<double> previous_values = DecodeValues(base.decode_attention());
    DiscreteFit each =
        FitEachValue(kCtasPerSmCandidates, decode_curve, rows, previous_values, base_name, rates, max_iterations);
    KindOutcome best = std::move(each.best);
    int32_t best_ctas = each.value;
    if (best_ctas == 0) {
      best_ctas = std::max(1, base.decode_attention().ctas_per_sm());
      best = FitCurve(decode_curve(best_ctas), rows, previous_values, base_name, rates, max_iterations);
    } else {
      best.report.note = absl::StrCat("ctas_per_sm ", best_ctas, " of ", kCtasPerSmCandidates[0], "-",
                                      std::end(kCtasPerSmCandidates)[-1], " by training cost");
      best.quality.set_note(best.report.note);
    }
    result.kinds.push_back(best.report);
    SetDecode(best.values, out.mutable_decode_attention());
    out.mutable_decode_attention()->set_ctas_per_sm(best_ctas);
    *out.mutable_decode_attention()->mutable_quality() = best.quality;
  }
  {
    KindOutcome o = run(elementwise, ElementwiseValues(base.elementwise()));
    SetElementwise(o.values, out.mutable_elementwise());
    *out.mutable_elementwise()->mutable_quality() = o.quality;
  }
  // All-reduce: one curve per GPU count measured; counts fitted before but absent now are kept.
  for (const auto& [gpus, rows] : all_reduce) {
    const int32_t g = static_cast<int32_t>(gpus);
    // Three protocols chosen by size (AllReduceFit, switch_bytes > 0); starts over a grid of switches.
    Curve curve{absl::StrCat("all_reduce/", g),
                std::vector<Transform>(8, Transform::kLog),
                [g](const std::vector<double>& v, const FitRow& r) {
                  proto::AllReduceFit f;
                  SetAllReduce(v, &f);
                  return FittedAllReduceSeconds(f, r.query.bytes, g);
                },
                {}};
    for (double switch_bytes : {128e3, 512e3, 1e6}) {
      for (double bulk_switch_bytes : {4e6, 8e6, 16e6}) {
        curve.starts.push_back({20000, 20e9, 30000, 100e9, switch_bytes, bulk_switch_bytes, 50000, 250e9});
      }
    }
    std::vector<double> prev = {10000, 50e9, 0, 0, 0, 0, 0, 0};
    std::string prev_name = "documented starting values (10 us, 50 GB/s, one protocol)";
    for (const proto::AllReduceFit& f : previous.all_reduce()) {
      if (f.num_gpus() == g) {
        prev = AllReduceValues(f);
        prev_name = "previous parameters";
      }
    }
    KindOutcome o = FitCurve(curve, rows, prev, prev_name, rates, max_iterations);
    result.kinds.push_back(o.report);
    proto::AllReduceFit* f = out.add_all_reduce();
    f->set_num_gpus(g);
    SetAllReduce(o.values, f);
    *f->mutable_quality() = o.quality;
  }
  for (const proto::AllReduceFit& f : previous.all_reduce()) {
    if (all_reduce.count(f.num_gpus()) == 0) *out.add_all_reduce() = f;
  }
  std::sort(out.mutable_all_reduce()->begin(), out.mutable_all_reduce()->end(),
            [](const proto::AllReduceFit& a, const proto::AllReduceFit& b) { return a.num_gpus() < b.num_gpus(); });
  out.set_source(
      absl::StrCat("kvsim costmodel fit on ", absl::StrJoin(input.sources, ", "), " (", input.rows.size(),
                   " rows; every 5th row per kind held out)",
                   options.prefill_attention_from == nullptr
                       ? ""
                       : absl::StrCat("; prefill attention carried over from ", options.prefill_attention_from->name()),
                   options.decode_attention_from == nullptr
                       ? ""
                       : absl::StrCat("; decode attention carried over from ", options.decode_attention_from->name())));
  // A fit that wandered outside physical ranges is refused rather than stored.
  KVSIM_RETURN_IF_ERROR(ValidateFittedCostParams(
      out, absl::StrCat("kvsim costmodel fit of ", device.name(), ": fitted parameters"), "fitted"));
  return result;
}

std::string FormatFitReport(const FitResult& result) {
  std::string out = absl::StrFormat("%-22s %6s %6s %6s %-6s | %-24s | %-24s | %s\n", "kind", "params", "train", "held",
                                    "fitted", "fitted held-out med/p95/max", "roofline held-out med/p95/max", "note");
  for (const KindFitReport& k : result.kinds) {
    const ErrorSummary f = SummariseErrors(k.heldout_errors), r = SummariseErrors(k.roofline_heldout_errors);
    const bool has_roofline = k.kind != "elementwise";
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-22s %6d %6d %6d %-6s | %6.1f%% %6.1f%% %7.1f%% | %s | %s\n", k.kind, k.num_parameters,
                  k.train_rows, k.heldout_rows, k.fitted ? "yes" : "NO", 100 * f.median, 100 * f.p95, 100 * f.worst,
                  has_roofline ? absl::StrFormat("%6.1f%% %6.1f%% %7.1f%%", 100 * r.median, 100 * r.p95, 100 * r.worst)
                               : std::string("   (not modelled)       "),
                  k.note));
  }
  return out;
}

std::string FormatWorstFitRows(const FitResult& result, int count) {
  struct Entry {
    double error;
    std::string kind;
    const KindFitReport::Row* row;
  };
  std::vector<Entry> all;
  for (const KindFitReport& k : result.kinds) {
    for (size_t i = 0; i < k.heldout.size(); ++i) all.push_back({k.heldout_errors[i], k.kind, &k.heldout[i]});
  }
  std::stable_sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.error > b.error; });
  std::string out = absl::StrFormat("%d worst held-out rows of the fit:\n", std::min<int>(count, all.size()));
  for (int i = 0; i < count && i < static_cast<int>(all.size()); ++i) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %6.1f%%  %-16s %-60s measured %10.1f us, predicted %10.1f us  (%s)\n",
                                    100 * all[i].error, all[i].kind, all[i].row->shape, all[i].row->measured_s * 1e6,
                                    all[i].row->predicted_s * 1e6, all[i].row->where));
  }
  return out;
}

}  // namespace kvsim
