// File: sim/serving/timeline.h
//
// TimelineRecorder: an EngineObserver that writes the run as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each replica is a process with four tracks: iterations
// (complete events with batch size and tokens), transfers (one complete event per lower tier an iteration
// moved blocks to or from, with its bytes and direction), evictions and preemptions (instant events), and
// requests (an async slice from arrival to completion, with its TTFT point as an instant); and three
// counter tracks ("C" events, written only when the value changes): GPU KV blocks used and requests
// waiting, as the replica starts each iteration, and the running batch size (0 while the replica idles).
// Timestamps are microseconds, ns / 1000 as a double, which prints the exact three-decimal value for any
// time under 10^15 ns (11 days). Every event is built as a JSON object (util/json_text.h) and written
// compactly, one per line.
//
// Beyond `max_events` events the recorder stops (the run's first events are kept) and says so in a
// metadata event; dropped_events() and truncated_at_ns() say how many were left out and the simulated
// time at which it stopped. A window [window_start_ns, window_end_ns) keeps only the events that overlap
// it: an iteration overlapping it is kept with its transfers, evictions and counter values (at its start,
// maybe before the window), a request slice overlapping it whole (its end maybe after the window).
// With a path, events stream to `path.tmp.<pid>` through a 1 MiB buffer and Finish() renames it over
// `path` (atomic, memory independent of the run's length); without one the document is kept in memory
// (Json()).
//
// Example:
//   TimelineRecorder timeline({.max_events = 250000}, "out/timeline.json");
//   engine->AddObserver(&timeline);
//   KVSIM_RETURN_IF_ERROR(engine->Run(reader.get()));
//   KVSIM_RETURN_IF_ERROR(timeline.Finish());
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_TIMELINE_H_
#define KVSIM_SIM_SERVING_TIMELINE_H_

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/serving/observer.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {

struct TimelineOptions {
  int64_t max_events = 250000;  // events written before the timeline is truncated; >= 0
  // Simulated time kept: events overlapping [window_start_ns, window_end_ns). REQUIRES: start <= end.
  SimTime window_start_ns = std::numeric_limits<SimTime>::min();
  SimTime window_end_ns = std::numeric_limits<SimTime>::max();
};

class TimelineRecorder final : public EngineObserver {
 public:
  // `path` empty: in memory.
  explicit TimelineRecorder(const TimelineOptions& options, std::string path = "");
  // Destroyed without Finish(): the temporary file is removed (StreamedFile).

  void OnIteration(const IterationRecord& record) override;
  void OnPreemption(SimTime now_ns, const RequestState& state) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;
  void OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) override;

  // With a path: writes the rest and renames the file into place; errors name the file. In memory: OK.
  // REQUIRES: OnRunEnd was called.
  absl::Status Finish();
  // The complete JSON document when in memory. REQUIRES: OnRunEnd was called.
  const std::string& Json() const { return json_; }
  // Moves the in-memory document out (the recorder is then empty).
  std::string TakeJson() { return std::move(json_); }
  // Events written (not counting the metadata events OnRunEnd adds).
  int64_t num_events() const { return num_events_; }
  bool truncated() const { return dropped_events_ > 0; }
  // Events within the window left out because of the cap (count).
  int64_t dropped_events() const { return dropped_events_; }
  // The engine's simulated time when the first event was dropped; REQUIRES: truncated().
  SimTime truncated_at_ns() const { return truncated_at_ns_; }

 private:
  struct ReplicaCounters {  // the values last written to the counter tracks; -1 = none yet
    int64_t gpu_blocks_used = -1;
    int64_t queued_requests = -1;
    int64_t batch_size = -1;
    SimTime last_iteration_end_ns = -1;
  };

  bool InWindow(SimTime start_ns, SimTime end_ns) const;
  // True if one more event fits under the cap; else counts it as dropped at `now_ns` and returns false.
  bool Accept(SimTime now_ns);
  // Appends `event` (after Accept returned true).
  void Write(const ::kvsim::Json& event);
  // `*counter` (one of the counter templates) with `value` at `ts_ns`.
  void Counter(::kvsim::Json* counter, int32_t replica, int64_t value, SimTime ts_ns, SimTime now_ns);
  void Flush();

  const TimelineOptions options_;
  const std::string path_;
  StreamedFile file_;          // open while streaming to path_
  absl::Status write_status_;  // the first failure to create or write the file
  std::string json_;
  int64_t num_events_ = 0;
  int64_t dropped_events_ = 0;
  SimTime truncated_at_ns_ = 0;
  std::vector<ReplicaCounters> counters_;  // by replica
  // One object per kind of event, keys set once; each event overwrites the values, so writing an event
  // allocates no keys (a timeline has up to millions of events).
  ::kvsim::Json iteration_, transfer_, evict_, preempt_, blocks_counter_, waiting_counter_, batch_counter_,
      request_begin_, request_first_token_, request_end_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_TIMELINE_H_
