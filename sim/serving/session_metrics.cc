#include "sim/serving/session_metrics.h"

#include <algorithm>
#include <vector>

#include "sim/serving/metrics.h"

namespace kvsim {

void SessionMetrics::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.request.session_id < 0) return;
  auto [it, inserted] = jobs_.try_emplace(state.request.session_id);
  proto::SessionResult& job = it->second;
  if (inserted) {
    job.set_session_id(state.request.session_id);
    job.set_finished(true);
    job.set_first_arrival_ns(state.arrival_ns);
    job.set_last_finish_ns(now_ns);
  }
  job.set_num_requests(job.num_requests() + 1);
  job.set_first_arrival_ns(std::min(job.first_arrival_ns(), state.arrival_ns));
  job.set_last_finish_ns(std::max(job.last_finish_ns(), now_ns));
  job.set_completion_ns(job.last_finish_ns() - job.first_arrival_ns());
  if (state.rejected) {
    job.set_finished(false);
  } else {
    job.set_queueing_ns(job.queueing_ns() + (state.first_scheduled_ns - state.arrival_ns));
  }
}

void SessionMetrics::Fill(bool closed_loop, proto::Results* results) const {
  if (jobs_.empty()) return;
  std::vector<double> completion_ms, queueing_ms;
  int64_t requests = 0;
  for (const auto& [id, job] : jobs_) {
    *results->add_sessions() = job;
    requests += job.num_requests();
    if (!job.finished()) continue;
    completion_ms.push_back(job.completion_ns() / 1e6);
    queueing_ms.push_back(job.queueing_ns() / 1e6);
  }
  proto::SessionSummary& summary = *results->mutable_summary()->mutable_sessions();
  summary.set_num_jobs(static_cast<int64_t>(jobs_.size()));
  summary.set_finished_jobs(static_cast<int64_t>(completion_ms.size()));
  summary.set_mean_requests_per_job(static_cast<double>(requests) / static_cast<double>(jobs_.size()));
  *summary.mutable_job_completion_ms() = Distribute(&completion_ms);
  *summary.mutable_job_queueing_ms() = Distribute(&queueing_ms);
  summary.set_closed_loop(closed_loop);
}

}  // namespace kvsim
