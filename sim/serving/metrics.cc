#include "sim/serving/metrics.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"
#include "util/percentile.h"

namespace kvsim {
proto::Distribution Distribute(std::vector<double>* values) {
  proto::Distribution d;
  if (values->empty()) return d;
  std::sort(values->begin(), values->end());
  const size_t n = values->size();
  double sum = 0;
  for (double v : *values) sum += v;
  d.set_mean(sum / static_cast<double>(n));
  d.set_p50(NearestRank(*values, 0.50));
  d.set_p90(NearestRank(*values, 0.90));
  d.set_p99(NearestRank(*values, 0.99));
  d.set_max(values->back());
  return d;
}

namespace {

double Ratio(double num, double den) { return den > 0 ? num / den : 0; }

}  // namespace

MetricsCollector::MetricsCollector(int64_t interval_ns, bool record_token_gaps)
    : interval_ns_(interval_ns), record_token_gaps_(record_token_gaps) {
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
  proto::TimeSeriesPoint& point = series_.emplace_back();
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
}

void MetricsCollector::OnRequestFinished(SimTime now_ns, const RequestState& s) {
  outcomes_.push_back(Outcome{s.request.request_id,
                              s.replica,
                              !s.rejected,
                              s.preemptions,
                              s.arrival_ns,
                              s.first_scheduled_ns,
                              s.first_token_ns,
                              s.last_token_ns,
                              s.finish_ns,
                              s.request.input_tokens,
                              s.generated_tokens,
                              s.prefix_potential_tokens,
                              s.prefix_potential_blocks,
                              s.segment_potential_tokens,
                              s.reused_tokens,
                              s.reused_blocks,
                              s.recomputed_tokens,
                              s.reloaded_tokens,
                              s.swapped_tokens,
                              static_cast<int64_t>(s.request.block_hashes.size()),
                              record_token_gaps_ ? s.token_gaps_ns : std::vector<int64_t>{}});
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

void MetricsCollector::FillRequest(const Outcome& o, proto::RequestResult* r) const {
  r->set_request_id(o.request_id);
  r->set_replica(o.replica);
  r->set_arrival_ns(o.arrival_ns);
  r->set_finished(o.finished);
  r->set_input_tokens(o.input_tokens);
  r->set_output_tokens(o.output_tokens);
  r->set_first_token_ns(o.first_token_ns);
  r->set_finish_ns(o.finish_ns);
  if (!o.finished) return;
  r->set_queueing_ns(o.first_scheduled_ns - o.arrival_ns);
  r->set_ttft_ns(o.first_token_ns - o.arrival_ns);
  r->set_e2e_ns(o.finish_ns - o.arrival_ns);
  if (o.output_tokens > 1) r->set_tpot_ns((o.last_token_ns - o.first_token_ns) / (o.output_tokens - 1));
  r->mutable_token_gaps_ns()->Add(o.token_gaps_ns.begin(), o.token_gaps_ns.end());
  r->set_prefix_reused_tokens(o.prefix_potential_tokens);
  r->set_prefix_reused_blocks(o.prefix_potential_blocks);
  r->set_segment_reused_tokens(o.segment_potential_tokens);
  r->set_reused_tokens(o.reused_tokens);
  r->set_reused_blocks(o.reused_blocks);
  r->set_recomputed_tokens(o.recomputed_tokens);
  r->set_reloaded_tokens(o.reloaded_tokens);
  r->set_swapped_tokens(o.swapped_tokens);
  r->set_preemptions(o.preemptions);
}

proto::Results MetricsCollector::BuildResults(const proto::SloConfig& slo) const {
  proto::Results results;
  proto::Summary& s = *results.mutable_summary();
  std::vector<double> ttft, tpot, e2e, queueing;
  int64_t good = 0, input = 0, output = 0, prefix = 0, prefix_blocks = 0, prompt_blocks = 0, segment = 0;
  int64_t reused = 0, recomputed = 0, reloaded = 0, preemptions = 0;
  results.mutable_requests()->Reserve(static_cast<int>(outcomes_.size()));
  for (const Outcome& o : outcomes_) {
    FillRequest(o, results.add_requests());
    if (!o.finished) {
      s.set_rejected_requests(s.rejected_requests() + 1);
      continue;
    }
    const double ttft_ms = NsToMs(o.first_token_ns - o.arrival_ns);
    ttft.push_back(ttft_ms);
    e2e.push_back(NsToMs(o.finish_ns - o.arrival_ns));
    queueing.push_back(NsToMs(o.first_scheduled_ns - o.arrival_ns));
    double tpot_ms = 0;
    if (o.output_tokens > 1) {
      tpot_ms = NsToMs(o.last_token_ns - o.first_token_ns) / static_cast<double>(o.output_tokens - 1);
      tpot.push_back(tpot_ms);
    }
    const double e2e_ms = NsToMs(o.finish_ns - o.arrival_ns);
    if ((slo.ttft_ms() <= 0 || ttft_ms <= slo.ttft_ms()) && (slo.tpot_ms() <= 0 || tpot_ms <= slo.tpot_ms()) &&
        (slo.e2e_ms() <= 0 || e2e_ms <= slo.e2e_ms())) {
      ++good;
    }
    input += o.input_tokens;
    output += o.output_tokens;
    prefix += o.prefix_potential_tokens;
    prefix_blocks += o.prefix_potential_blocks;
    segment += o.segment_potential_tokens;
    reused += o.reused_tokens;
    recomputed += o.recomputed_tokens;
    reloaded += o.reloaded_tokens;
    preemptions += o.preemptions;
    prompt_blocks += o.prompt_blocks;
  }
  const int64_t finished = static_cast<int64_t>(ttft.size());
  s.set_num_requests(static_cast<int64_t>(outcomes_.size()));
  s.set_finished_requests(finished);
  const double duration_s = first_arrival_ns_ < 0 ? 0 : NsToS(end_ns_ - first_arrival_ns_);
  s.set_duration_s(duration_s);
  s.set_throughput_requests_per_s(Ratio(finished, duration_s));
  s.set_throughput_output_tokens_per_s(Ratio(output, duration_s));
  s.set_goodput_requests_per_s(Ratio(good, duration_s));
  s.set_goodput_fraction(Ratio(good, finished));
  s.set_slo_set(slo.ttft_ms() > 0 || slo.tpot_ms() > 0 || slo.e2e_ms() > 0);
  *s.mutable_ttft_ms() = Distribute(&ttft);
  *s.mutable_tpot_ms() = Distribute(&tpot);
  *s.mutable_e2e_ms() = Distribute(&e2e);
  *s.mutable_queueing_ms() = Distribute(&queueing);
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
  for (const proto::TimeSeriesPoint& point : series_) *results.add_series() = point;
  return results;
}

}  // namespace kvsim
