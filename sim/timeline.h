// File: sim/timeline.h
//
// TimelineRecorder: an EngineObserver that writes the run as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each replica is a process with three tracks: iterations
// (complete events with batch size and tokens), transfers (tier transfer time started with each
// iteration) and evictions (instant events with the count); each request is an async slice from arrival
// to completion on its replica, with its TTFT point as an instant. Timestamps are microseconds with
// nanosecond decimals, written from integers (no rounding).
//
// Beyond `max_events` events the recorder stops and says so in a metadata event, so a huge replay still
// writes a bounded file.
//
// Example:
//   TimelineRecorder timeline(/*max_events=*/1000000);
//   engine->AddObserver(&timeline);
//   ... KVSIM_RETURN_IF_ERROR(WriteFileAtomically(dir + "/timeline.json", timeline.Json()));
//
// Thread-safety: none.
#ifndef KVSIM_SIM_TIMELINE_H_
#define KVSIM_SIM_TIMELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/observer.h"

namespace kvsim {

class TimelineRecorder final : public EngineObserver {
 public:
  explicit TimelineRecorder(int64_t max_events);

  void OnIteration(const IterationRecord& record) override;
  void OnPreemption(SimTime now_ns, const RequestState& state) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;
  void OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) override;

  // The complete JSON document. REQUIRES: OnRunEnd was called.
  const std::string& Json() const { return json_; }
  int64_t num_events() const { return num_events_; }
  bool truncated() const { return truncated_; }

 private:
  // Starts an event object; false once the cap is reached.
  bool Begin();

  const int64_t max_events_;
  std::string json_;
  int64_t num_events_ = 0;
  bool truncated_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_TIMELINE_H_
