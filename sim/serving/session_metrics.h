// File: sim/serving/session_metrics.h
//
// SessionMetrics: an EngineObserver that groups finished (and rejected) requests by session_id into jobs
// and reports per-job results and their summary. A job's completion time is the last finish of its
// requests minus the first arrival (closed loop: issue) of any; its queueing is the sum of its requests'
// queueing (first scheduled - arrival): the time its calls waited for KV blocks, the token budget or a
// sequence slot. Percentiles are nearest-rank over finished jobs (every request finished, none rejected).
// Requests with session_id -1 are not jobs.
//
// Example:
//   SessionMetrics sessions;
//   engine->AddObserver(&sessions);
//   ... after Run: sessions.Fill(config.workload().closed_loop_sessions(), &results);
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_SESSION_METRICS_H_
#define KVSIM_SIM_SERVING_SESSION_METRICS_H_

#include <cstdint>
#include <map>

#include "proto/results.pb.h"
#include "sim/serving/observer.h"

namespace kvsim {

class SessionMetrics final : public EngineObserver {
 public:
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;

  // Sets results->sessions (by session_id) and results->summary.sessions; leaves both unset when no
  // request had a session.
  void Fill(bool closed_loop, proto::Results* results) const;

 private:
  std::map<int64_t, proto::SessionResult> jobs_;  // ordered: deterministic output
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SESSION_METRICS_H_
