#include "sim/serving/metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "util/check.h"
#include "util/percentile.h"
#include "util/radix_sort.h"
#include "util/status_macros.h"

namespace kvsim {
SortedDistribution::SortedDistribution(int64_t count) : count_(count) {}

void SortedDistribution::Add(double value) {
  KVSIM_CHECK(seen_ < count_) << "more values than announced (" << count_ << ")";
  const size_t n = static_cast<size_t>(count_), i = static_cast<size_t>(seen_);
  if (i == NearestRankIndex(n, 0.50)) distribution_.set_p50(value);
  if (i == NearestRankIndex(n, 0.90)) distribution_.set_p90(value);
  if (i == NearestRankIndex(n, 0.99)) distribution_.set_p99(value);
  if (i + 1 == n) distribution_.set_max(value);
  sum_ += value;
  ++seen_;
}

proto::Distribution SortedDistribution::Finish() const {
  KVSIM_CHECK(seen_ == count_) << seen_ << " of " << count_ << " values added";
  proto::Distribution d = distribution_;
  if (count_ > 0) d.set_mean(sum_ / static_cast<double>(count_));
  return d;
}

proto::Distribution Distribute(std::vector<double>* values) {
  SortDoubles(values);
  SortedDistribution distribution(static_cast<int64_t>(values->size()));
  for (double v : *values) distribution.Add(v);
  return distribution.Finish();
}

absl::StatusOr<proto::Distribution> DistributeSpill(SortedSpill* spill) {
  SortedDistribution distribution(spill->size());
  KVSIM_RETURN_IF_ERROR(spill->Visit([&distribution](double v) { distribution.Add(v); }));
  return distribution.Finish();
}

namespace {

double Ratio(double num, double den) { return den > 0 ? num / den : 0; }

}  // namespace

MetricsCollector::MetricsCollector(int64_t interval_ns, const MetricsOptions& options)
    : interval_ns_(interval_ns),
      options_(options),
      ttft_ms_(options.sorted_run_values),
      tpot_ms_(options.sorted_run_values),
      e2e_ms_(options.sorted_run_values),
      queueing_ms_(options.sorted_run_values) {
  KVSIM_CHECK(interval_ns > 0);
}

void MetricsCollector::OnArrival(SimTime now_ns, const RequestState& state) {
  if (first_arrival_ns_ < 0) first_arrival_ns_ = now_ns;
}

void MetricsCollector::OnIteration(const IterationRecord& record) {
  ++iterations_;
  batch_size_sum_ += record.batch_size;
  max_batch_size_ = std::max(max_batch_size_, record.batch_size);
  busy_ns_ += record.duration_ns;
  occupancy_ns_ += static_cast<double>(record.gpu_blocks_used) / record.gpu_capacity_blocks *
                   static_cast<double>(record.duration_ns);
  max_gpu_blocks_used_ = std::max(max_gpu_blocks_used_, record.gpu_blocks_used);
  if (record.replica >= static_cast<int32_t>(next_sample_ns_.size())) {
    next_sample_ns_.resize(record.replica + 1, 0);
  }
  if (record.start_ns < next_sample_ns_[record.replica]) return;
  next_sample_ns_[record.replica] = (record.start_ns / interval_ns_ + 1) * interval_ns_;
  proto::TimeSeriesPoint& point = options_.sink != nullptr ? point_ : *results_.add_series();
  point.set_time_ns(record.start_ns);
  point.set_replica(record.replica);
  point.set_gpu_blocks_used(record.gpu_blocks_used);
  point.set_batch_size(record.batch_size);
  point.set_batched_tokens(record.prefill_tokens + record.decode_tokens);
  point.set_queued_requests(record.queued_requests);
  point.set_running_requests(record.running_requests);
  point.set_gpu_blocks_pinned(record.gpu_blocks_pinned);
  point.set_host_blocks_used(record.host_blocks_used);
  point.set_iteration_ns(record.duration_ns);
  if (options_.sink != nullptr) options_.sink->AddPoint(point);
}

void MetricsCollector::OnRequestFinished(SimTime now_ns, const RequestState& s) {
  ++num_requests_;
  proto::RequestResult* request = &request_;
  if (options_.sink == nullptr) {
    request = results_.add_requests();
  } else {
    request_.Clear();
  }
  FillRequestResult(s, options_.record_token_gaps, request);
  if (options_.sink != nullptr) options_.sink->AddRequest(request_);
  if (s.rejected) {
    ++rejected_;
    return;
  }
  const proto::SloConfig& slo = options_.slo;
  const double ttft_ms = NsToMs(s.first_token_ns - s.arrival_ns);
  ttft_ms_.Add(ttft_ms);
  e2e_ms_.Add(NsToMs(s.finish_ns - s.arrival_ns));
  queueing_ms_.Add(NsToMs(s.first_scheduled_ns - s.arrival_ns));
  double tpot_ms = 0;
  if (s.generated_tokens > 1) {
    tpot_ms = NsToMs(s.last_token_ns - s.first_token_ns) / static_cast<double>(s.generated_tokens - 1);
    tpot_ms_.Add(tpot_ms);
  }
  const double e2e_ms = NsToMs(s.finish_ns - s.arrival_ns);
  if ((slo.ttft_ms() <= 0 || ttft_ms <= slo.ttft_ms()) && (slo.tpot_ms() <= 0 || tpot_ms <= slo.tpot_ms()) &&
      (slo.e2e_ms() <= 0 || e2e_ms <= slo.e2e_ms())) {
    ++good_;
  }
  input_tokens_ += s.request.input_tokens;
  output_tokens_ += s.generated_tokens;
  prefix_tokens_ += s.prefix_potential_tokens;
  prefix_blocks_ += s.prefix_potential_blocks;
  segment_tokens_ += s.segment_potential_tokens;
  reused_tokens_ += s.reused_tokens;
  recomputed_tokens_ += s.recomputed_tokens;
  reloaded_tokens_ += s.reloaded_tokens;
  preemptions_ += s.preemptions;
  KVSIM_CHECK(options_.block_tokens > 0 || !s.request.block_hashes.empty())
      << "MetricsOptions.block_tokens is needed for request " << s.request.request_id << ", which has no hashes";
  prompt_blocks_ += PromptBlocks(s.request, options_.block_tokens);
}

void MetricsCollector::OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {
  end_ns_ = end_ns;
  num_replicas_ = static_cast<int32_t>(replicas.size());
  tiers_.clear();
  for (const BlockManager* blocks : replicas) {
    block_bytes_ = blocks->block_bytes();
    const std::vector<TierStats>& stats = blocks->tier_stats();
    if (tiers_.size() < stats.size()) tiers_.resize(stats.size());
    for (size_t i = 0; i < stats.size(); ++i) {
      proto::TierSummary& t = tiers_[i];
      t.set_name(stats[i].name);
      t.set_capacity_blocks(stats[i].capacity_blocks);
      t.set_max_used_blocks(std::max(t.max_used_blocks(), stats[i].max_used_blocks));
      t.set_evicted_blocks(t.evicted_blocks() + stats[i].evicted_blocks);
      t.set_dropped_blocks(t.dropped_blocks() + stats[i].dropped_blocks);
      t.set_demoted_in_blocks(t.demoted_in_blocks() + stats[i].demoted_in_blocks);
      t.set_reloaded_blocks(t.reloaded_blocks() + stats[i].reloaded_blocks);
      t.set_swapped_out_blocks(t.swapped_out_blocks() + stats[i].swapped_out_blocks);
      t.set_swapped_in_blocks(t.swapped_in_blocks() + stats[i].swapped_in_blocks);
      t.set_transfer_bytes(t.transfer_bytes() + stats[i].transfer_bytes);
    }
  }
}

void FillRequestResult(const RequestState& s, bool record_token_gaps, proto::RequestResult* r) {
  const bool finished = !s.rejected;
  r->set_request_id(s.request.request_id);
  r->set_replica(s.replica);
  r->set_arrival_ns(s.arrival_ns);
  r->set_finished(finished);
  r->set_input_tokens(s.request.input_tokens);
  r->set_output_tokens(s.generated_tokens);
  r->set_first_token_ns(s.first_token_ns);
  r->set_finish_ns(s.finish_ns);
  if (!finished) return;
  r->set_queueing_ns(s.first_scheduled_ns - s.arrival_ns);
  r->set_ttft_ns(s.first_token_ns - s.arrival_ns);
  r->set_e2e_ns(s.finish_ns - s.arrival_ns);
  if (s.generated_tokens > 1) r->set_tpot_ns((s.last_token_ns - s.first_token_ns) / (s.generated_tokens - 1));
  if (record_token_gaps) r->mutable_token_gaps_ns()->Add(s.token_gaps_ns.begin(), s.token_gaps_ns.end());
  r->set_prefix_reused_tokens(s.prefix_potential_tokens);
  r->set_prefix_reused_blocks(s.prefix_potential_blocks);
  r->set_segment_reused_tokens(s.segment_potential_tokens);
  r->set_reused_tokens(s.reused_tokens);
  r->set_reused_blocks(s.reused_blocks);
  r->set_recomputed_tokens(s.recomputed_tokens);
  r->set_reloaded_tokens(s.reloaded_tokens);
  r->set_swapped_tokens(s.swapped_tokens);
  r->set_preemptions(s.preemptions);
}

absl::StatusOr<proto::Results> MetricsCollector::TakeResults() {
  proto::Results results = std::move(results_);
  results_.Clear();
  proto::Summary& s = *results.mutable_summary();
  const proto::SloConfig& slo = options_.slo;
  const int64_t finished = num_requests_ - rejected_;
  const int64_t good = good_, input = input_tokens_, output = output_tokens_, prefix = prefix_tokens_;
  const int64_t prefix_blocks = prefix_blocks_, prompt_blocks = prompt_blocks_, segment = segment_tokens_;
  const int64_t reused = reused_tokens_, recomputed = recomputed_tokens_, reloaded = reloaded_tokens_;
  const int64_t preemptions = preemptions_;
  s.set_rejected_requests(rejected_);
  s.set_num_requests(num_requests_);
  s.set_finished_requests(finished);
  const double duration_s = first_arrival_ns_ < 0 ? 0 : NsToS(end_ns_ - first_arrival_ns_);
  s.set_duration_s(duration_s);
  s.set_throughput_requests_per_s(Ratio(finished, duration_s));
  s.set_throughput_output_tokens_per_s(Ratio(output, duration_s));
  s.set_goodput_requests_per_s(Ratio(good, duration_s));
  s.set_goodput_fraction(Ratio(good, finished));
  s.set_slo_set(slo.ttft_ms() > 0 || slo.tpot_ms() > 0 || slo.e2e_ms() > 0);
  KVSIM_ASSIGN_OR_RETURN(*s.mutable_ttft_ms(), DistributeSpill(&ttft_ms_));
  KVSIM_ASSIGN_OR_RETURN(*s.mutable_tpot_ms(), DistributeSpill(&tpot_ms_));
  KVSIM_ASSIGN_OR_RETURN(*s.mutable_e2e_ms(), DistributeSpill(&e2e_ms_));
  KVSIM_ASSIGN_OR_RETURN(*s.mutable_queueing_ms(), DistributeSpill(&queueing_ms_));
  s.set_prefix_hit_ratio(Ratio(prefix, input));
  s.set_segment_hit_ratio(Ratio(segment, input));
  s.set_reuse_hit_ratio(Ratio(reused, input));
  s.set_prefix_hit_ratio_blocks(Ratio(prefix_blocks, prompt_blocks));
  s.set_input_tokens(input);
  s.set_output_tokens(output);
  s.set_reused_tokens(reused);
  s.set_recomputed_tokens(recomputed);
  s.set_reloaded_tokens(reloaded);
  s.set_preemptions(preemptions);
  s.set_num_iterations(iterations_);
  s.set_mean_batch_size(Ratio(batch_size_sum_, iterations_));
  s.set_max_batch_size(max_batch_size_);
  s.set_max_gpu_blocks_used(max_gpu_blocks_used_);
  s.set_mean_gpu_occupancy(Ratio(occupancy_ns_, busy_ns_));
  s.set_busy_fraction(Ratio(busy_ns_, num_replicas_ * (end_ns_ - std::max<int64_t>(0, first_arrival_ns_))));
  int64_t reloaded_blocks = 0, demoted_blocks = 0, swapped_blocks = 0;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    *s.add_tiers() = tiers_[i];
    if (i == 0) {
      s.set_evicted_blocks(tiers_[i].evicted_blocks());
      s.set_gpu_capacity_blocks(tiers_[i].capacity_blocks());
      continue;
    }
    reloaded_blocks += tiers_[i].reloaded_blocks();
    demoted_blocks += tiers_[i].demoted_in_blocks();
    swapped_blocks += tiers_[i].swapped_out_blocks() + tiers_[i].swapped_in_blocks();
  }
  s.set_reloaded_bytes(reloaded_blocks * block_bytes_);
  s.set_demoted_bytes(demoted_blocks * block_bytes_);
  s.set_swapped_bytes(swapped_blocks * block_bytes_);
  return results;
}

}  // namespace kvsim
