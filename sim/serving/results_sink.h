// File: sim/serving/results_sink.h
//
// ResultsSink: where a run's per-request records and time-series points go as they are produced, so that
// nothing per request has to stay in memory until the run ends (MetricsCollector hands them over;
// ResultsFileStream in sim/serving/results_writer.h writes them to the results files). Records arrive in
// completion order, points in the order their iterations start: the order of Results.requests and
// Results.series. After the run, each session's record arrives in session_id order (SessionMetrics): the
// order of Results.sessions.
//
// Thread-safety: none; called on the engine's thread.
#ifndef KVSIM_SIM_SERVING_RESULTS_SINK_H_
#define KVSIM_SIM_SERVING_RESULTS_SINK_H_

#include "proto/results.pb.h"

namespace kvsim {

class ResultsSink {
 public:
  virtual ~ResultsSink() = default;
  // A request finished or was rejected. `request` is valid during the call only.
  virtual void AddRequest(const proto::RequestResult& request) = 0;
  // A replica's sample of the time series. `point` is valid during the call only.
  virtual void AddPoint(const proto::TimeSeriesPoint& point) = 0;
  // A session's record, after every request and point. `session` is valid during the call only.
  virtual void AddSession(const proto::SessionResult& session) = 0;
};

// A sink that keeps nothing: for runs that need the summary only (`kvsim replay` without --out).
class DiscardResults final : public ResultsSink {
 public:
  void AddRequest(const proto::RequestResult&) override {}
  void AddPoint(const proto::TimeSeriesPoint&) override {}
  void AddSession(const proto::SessionResult&) override {}
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_RESULTS_SINK_H_
