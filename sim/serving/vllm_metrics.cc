#include "sim/serving/vllm_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/serving/metrics.h"
#include "util/percentile.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {
namespace {

constexpr double kNsPerMsD = 1e6;

// vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
std::string PercentileWord(double p) {
  if (p == std::floor(p)) return absl::StrCat(static_cast<int64_t>(p));
  return absl::StrFormat("%g", p);
}

// The mean, median, std and percentiles of the values in `spill`, as numpy gives them of the sorted
// values: mean and variance summed in ascending order, percentiles interpolated linearly
// (util/percentile.h). `spill` is read twice: the variance needs the mean.
absl::Status AddMetric(const std::string& name, SortedSpill* spill, const std::vector<double>& percentiles,
                       Json* out) {
  const size_t n = static_cast<size_t>(spill->size());
  const bool empty = n == 0;
  std::vector<double> fractions = {0.5};  // the median, then the percentiles
  for (double p : percentiles) fractions.push_back(p / 100);
  std::vector<LinearRank> ranks;
  if (!empty) {
    for (double fraction : fractions) ranks.push_back(LinearPercentileRank(n, fraction));
  }
  std::vector<double> lo_values(ranks.size()), hi_values(ranks.size());
  double mean = 0, var = 0;
  size_t i = 0;
  KVSIM_RETURN_IF_ERROR(spill->Visit([&](double v) {
    mean += v;
    for (size_t k = 0; k < ranks.size(); ++k) {
      if (ranks[k].lo == i) lo_values[k] = v;
      if (ranks[k].hi == i) hi_values[k] = v;
    }
    ++i;
  }));
  if (!empty) mean /= static_cast<double>(n);
  if (!empty) KVSIM_RETURN_IF_ERROR(spill->Visit([&](double v) { var += (v - mean) * (v - mean); }));
  if (!empty) var /= static_cast<double>(n);
  const auto quantile = [&](size_t k) {
    return empty ? Json(nullptr) : Json(ranks[k].Interpolate(lo_values[k], hi_values[k]));
  };
  (*out)["mean_" + name + "_ms"] = empty ? Json(nullptr) : Json(mean);
  (*out)["median_" + name + "_ms"] = quantile(0);
  (*out)["std_" + name + "_ms"] = empty ? Json(nullptr) : Json(std::sqrt(var));
  for (size_t k = 1; k < fractions.size(); ++k) {
    (*out)["p" + PercentileWord(percentiles[k - 1]) + "_" + name + "_ms"] = quantile(k);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckVllmMetricsOptions(const VllmMetricsOptions& options) {
  for (double p : options.percentiles) {
    if (!(p > 0 && p <= 100)) return absl::InvalidArgumentError(absl::StrCat("percentile ", p, ": expected (0, 100]"));
  }
  if (options.warmup_requests < 0 || !(options.warmup_s >= 0)) {
    return absl::InvalidArgumentError("warm-up requests and seconds must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> VllmBenchmarkJson(const proto::Results& results, const proto::SloConfig& slo,
                                       const VllmMetricsOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<VllmMetricsCollector> collector, VllmMetricsCollector::Create(slo, options));
  // Requests by arrival (ties by id): the order the collector needs the arrivals in.
  std::vector<const proto::RequestResult*> by_arrival;
  for (const proto::RequestResult& r : results.requests()) by_arrival.push_back(&r);
  std::sort(by_arrival.begin(), by_arrival.end(), [](const auto* a, const auto* b) {
    return a->arrival_ns() != b->arrival_ns() ? a->arrival_ns() < b->arrival_ns() : a->request_id() < b->request_id();
  });
  for (const proto::RequestResult* r : by_arrival) collector->AddArrival(r->arrival_ns(), r->request_id());
  for (const proto::RequestResult* r : by_arrival) collector->AddRequest(*r);
  return collector->Finish();
}

absl::StatusOr<std::unique_ptr<VllmMetricsCollector>> VllmMetricsCollector::Create(const proto::SloConfig& slo,
                                                                                  const VllmMetricsOptions& options,
                                                                                  int64_t memory_values) {
  KVSIM_RETURN_IF_ERROR(CheckVllmMetricsOptions(options));
  if (memory_values < 1) {
    return absl::InvalidArgumentError(absl::StrCat("vLLM metrics: memory values must be >= 1, got ", memory_values));
  }
  return std::unique_ptr<VllmMetricsCollector>(new VllmMetricsCollector(slo, options, memory_values));
}

VllmMetricsCollector::VllmMetricsCollector(const proto::SloConfig& slo, const VllmMetricsOptions& options,
                                           int64_t memory_values)
    : slo_(slo),
      options_(options),
      slo_set_(slo.ttft_ms() > 0 || slo.tpot_ms() > 0 || slo.e2e_ms() > 0),
      warmup_ns_(SecondsToNs(options.warmup_s)),
      ttft_ms_(memory_values),
      tpot_ms_(memory_values),
      itl_ms_(memory_values),
      e2el_ms_(memory_values),
      rank_key_known_(options.warmup_requests == 0) {}

void VllmMetricsCollector::AddArrival(int64_t arrival_ns, uint64_t request_id) {
  if (!any_arrival_) {
    any_arrival_ = true;
    first_arrival_ns_ = arrival_ns;
    group_time_ns_ = arrival_ns;
  } else if (arrival_ns != group_time_ns_) {
    CloseGroup();
    group_time_ns_ = arrival_ns;
  }
  ++arrivals_in_group_;
  if (!rank_key_known_) group_ids_.push_back(request_id);
}

void VllmMetricsCollector::CloseGroup() {
  if (!rank_key_known_ && arrivals_before_group_ + arrivals_in_group_ > options_.warmup_requests) {
    // Rank warmup_requests falls in this group: its key is the group's id of that rank.
    std::sort(group_ids_.begin(), group_ids_.end());
    rank_key_ = Key{group_time_ns_, group_ids_[options_.warmup_requests - arrivals_before_group_]};
    rank_key_known_ = true;
    std::vector<proto::RequestResult> pending;
    pending.swap(pending_);
    for (const proto::RequestResult& r : pending) Count(r, Key{r.arrival_ns(), r.request_id()} < rank_key_);
  }
  arrivals_before_group_ += arrivals_in_group_;
  arrivals_in_group_ = 0;
  group_ids_.clear();
}

void VllmMetricsCollector::AddRequest(const proto::RequestResult& r) {
  if (!rank_key_known_) {
    pending_.push_back(r);
    return;
  }
  Count(r, options_.warmup_requests > 0 && Key{r.arrival_ns(), r.request_id()} < rank_key_);
}

void VllmMetricsCollector::OnArrival(SimTime now_ns, const RequestState& state) {
  AddArrival(state.arrival_ns, state.request.request_id);
}

void VllmMetricsCollector::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  request_.Clear();
  FillRequestResult(state, /*record_token_gaps=*/true, &request_);
  AddRequest(request_);
}

void VllmMetricsCollector::Count(const proto::RequestResult& r, bool first_by_rank) {
  if (first_by_rank || r.arrival_ns() - first_arrival_ns_ < warmup_ns_) {
    ++excluded_;
    return;
  }
  if (!r.finished()) return;
  ++completed_;
  input_ += r.input_tokens();
  output_ += r.output_tokens();
  start_ns_ = std::min(start_ns_, r.arrival_ns());
  end_ns_ = std::max(end_ns_, r.arrival_ns() + r.e2e_ns());
  const double ttft_ms = r.ttft_ns() / kNsPerMsD, e2el_ms = r.e2e_ns() / kNsPerMsD;
  ttft_ms_.Add(ttft_ms);
  e2el_ms_.Add(e2el_ms);
  double tpot_ms = 0;
  if (r.output_tokens() > 1) {
    tpot_ms = (e2el_ms - ttft_ms) / static_cast<double>(r.output_tokens() - 1);
    tpot_ms_.Add(tpot_ms);
    decode_ns_ += r.e2e_ns() - r.ttft_ns();
    gaps_ += r.output_tokens() - 1;
    if (r.token_gaps_ns_size() != r.output_tokens() - 1) {
      all_gaps_ = false;
    } else if (all_gaps_) {  // once a request lacks them, only the mean is given: stop spilling
      for (int64_t gap_ns : r.token_gaps_ns()) itl_ms_.Add(gap_ns / kNsPerMsD);
    }
  }
  if ((slo_.ttft_ms() <= 0 || ttft_ms <= slo_.ttft_ms()) && (slo_.tpot_ms() <= 0 || tpot_ms <= slo_.tpot_ms()) &&
      (slo_.e2e_ms() <= 0 || e2el_ms <= slo_.e2e_ms())) {
    ++good_;
  }
}

absl::StatusOr<Json> VllmMetricsCollector::Finish() {
  if (finished_) return absl::FailedPreconditionError("vLLM metrics: Finish called twice");
  finished_ = true;
  if (any_arrival_) CloseGroup();
  // Still unknown: there are at most warmup_requests requests, all of them warm-up.
  for (const proto::RequestResult& r : pending_) Count(r, /*first_by_rank=*/true);
  pending_.clear();
  const double duration_s = completed_ > 0 ? (end_ns_ - start_ns_) / 1e9 : 0;
  auto per_s = [&](double x) { return duration_s > 0 ? Json(x / duration_s) : Json(nullptr); };
  Json out = Json::object();
  out["backend"] = "kvsim";
  out["duration"] = duration_s;
  out["completed"] = completed_;
  out["warmup_excluded"] = excluded_;
  out["total_input_tokens"] = input_;
  out["total_output_tokens"] = output_;
  out["request_throughput"] = per_s(completed_);
  out["request_goodput"] = slo_set_ ? per_s(good_) : Json(nullptr);
  out["input_throughput"] = per_s(input_);
  out["output_throughput"] = per_s(output_);
  out["total_token_throughput"] = per_s(input_ + output_);
  KVSIM_RETURN_IF_ERROR(AddMetric("ttft", &ttft_ms_, options_.percentiles, &out));
  KVSIM_RETURN_IF_ERROR(AddMetric("tpot", &tpot_ms_, options_.percentiles, &out));
  // ITL: the statistics of every token gap when each request recorded its gaps; else the exact mean
  // (total decode time / gaps) and null for the rest.
  if (all_gaps_) {
    KVSIM_RETURN_IF_ERROR(AddMetric("itl", &itl_ms_, options_.percentiles, &out));
  } else {
    SortedSpill none(1);
    KVSIM_RETURN_IF_ERROR(AddMetric("itl", &none, options_.percentiles, &out));
    out["mean_itl_ms"] = gaps_ > 0 ? Json(decode_ns_ / kNsPerMsD / static_cast<double>(gaps_)) : Json(nullptr);
  }
  KVSIM_RETURN_IF_ERROR(AddMetric("e2el", &e2el_ms_, options_.percentiles, &out));
  return out;
}

}  // namespace kvsim
