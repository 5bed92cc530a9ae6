// File: sim/serving/timeline.h
//
// TimelineRecorder: an EngineObserver that writes the run as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each replica is a process with three tracks: iterations
// (complete events with batch size and tokens), transfers (tier transfer time started with each
// iteration) and evictions (instant events with the count); each request is an async slice from arrival
// to completion on its replica, with its TTFT point as an instant. Timestamps are microseconds with
// nanosecond decimals, written from integers (no rounding).
//
// Beyond `max_events` events the recorder stops and says so in a metadata event, so a huge replay still
// writes a bounded file (the first events of the run). With a path, events stream to `path.tmp.<pid>`
// through a 1 MiB buffer and Finish() renames it over `path` (atomic, memory independent of the run's
// length); without one the document is kept in memory (Json()).
//
// Example:
//   TimelineRecorder timeline(/*max_events=*/250000, "out/timeline.json");
//   engine->AddObserver(&timeline);
//   KVSIM_RETURN_IF_ERROR(engine->Run(reader.get()));
//   KVSIM_RETURN_IF_ERROR(timeline.Finish());
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_TIMELINE_H_
#define KVSIM_SIM_SERVING_TIMELINE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/serving/observer.h"

namespace kvsim {

class TimelineRecorder final : public EngineObserver {
 public:
  // `path` empty: in memory.
  explicit TimelineRecorder(int64_t max_events, std::string path = "");
  ~TimelineRecorder() override;

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
  int64_t num_events() const { return num_events_; }
  bool truncated() const { return truncated_; }

 private:
  // Starts an event object; false once the cap is reached.
  bool Begin();
  void Flush();

  const int64_t max_events_;
  const std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool write_failed_ = false;
  std::string json_;
  int64_t num_events_ = 0;
  bool truncated_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_TIMELINE_H_
