// File: sim/serving/session_metrics.h
//
// SessionMetrics: an EngineObserver that groups finished (and rejected) requests by session_id into jobs
// and reports per-job results and their summary. A job's completion time is the last finish of its
// requests minus the first arrival (closed loop: issue) of any; its queueing is the sum of its requests'
// queueing (first scheduled - arrival): the time its calls waited for KV blocks, the token budget or a
// sequence slot. Percentiles are nearest-rank over finished jobs (every request finished, none rejected).
// Requests with session_id -1 are not jobs.
//
// Memory is bounded: at most `memory_records` jobs' records are held; when more would be, they are
// written, sorted by session_id, as one run to an anonymous temporary file (std::tmpfile, removed by the
// system when closed) and the next requests start new records. A session whose requests finish on both
// sides of a spill has a partial record in each run; Fill merges the runs and what is held (a k-way
// merge by session_id) and combines the partial records of each session (requests and queueing summed,
// first arrival the least, last finish the greatest, finished only if every part is), which is exactly
// the record of holding every job at once. The job distributions go through SortedSpill likewise, so the
// results are the same bits for any `memory_records`. Memory: memory_records x about 100 bytes while
// the run goes, plus kReadRecords x 48 bytes per spilled run in Fill; disk: 48 bytes per spilled record.
//
// Example:
//   SessionMetrics sessions({.sink = stream});  // or {} to keep the sessions in the Results
//   engine->AddObserver(&sessions);
//   ... after Run: KVSIM_RETURN_IF_ERROR(sessions.Fill(config.workload().closed_loop_sessions(), &results));
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_SESSION_METRICS_H_
#define KVSIM_SIM_SERVING_SESSION_METRICS_H_

#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"
#include "sim/serving/results_sink.h"

namespace kvsim {

struct SessionMetricsOptions {
  // Default: 2^16 jobs held (about 6 MiB).
  static constexpr int64_t kDefaultMemoryRecords = int64_t{1} << 16;
  // Jobs' records held in memory before they spill to a temporary file; >= 1.
  int64_t memory_records = kDefaultMemoryRecords;
  // Not owned; nullptr = Fill puts the sessions into the Results.
  ResultsSink* sink = nullptr;
};

class SessionMetrics final : public EngineObserver {
 public:
  // Records read back per spilled run at a time in Fill.
  static constexpr int64_t kReadRecords = 1024;

  // REQUIRES: options.memory_records >= 1.
  explicit SessionMetrics(const SessionMetricsOptions& options = {});
  ~SessionMetrics() override;
  SessionMetrics(const SessionMetrics&) = delete;
  SessionMetrics& operator=(const SessionMetrics&) = delete;

  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;

  // Sets results->summary.sessions and every job's record in session_id order: into results->sessions,
  // or, with a sink, to sink->AddSession (results->sessions untouched). Leaves all unset when no request
  // had a session. Internal if the temporary file could not be created, written or read back (then the
  // results hold no session figures). Call once.
  absl::Status Fill(bool closed_loop, proto::Results* results);

  // Runs written to the temporary file so far.
  int64_t spilled_runs() const { return static_cast<int64_t>(runs_.size()); }

 private:
  // A job's record as it is spilled: the fields that combine, as 64-bit integers.
  struct Record {
    int64_t session_id = 0;
    int64_t num_requests = 0;
    int64_t finished = 1;  // 1: every request so far finished
    int64_t first_arrival_ns = 0;
    int64_t last_finish_ns = 0;
    int64_t queueing_ns = 0;
  };
  struct Run {
    int64_t offset;  // in records, in file_
    int64_t count;
  };
  // Adds `part` (a record of the same session) into *into.
  static void Combine(const Record& part, Record* into);
  static proto::SessionResult ToProto(const Record& job);
  void SpillRun();

  const SessionMetricsOptions options_;
  // Not yet spilled; ordered by session_id. A B-tree: one lookup per finished request, a few cache
  // lines where a red-black tree of 2^16 records chases ~16 nodes.
  absl::btree_map<int64_t, Record> jobs_;
  std::vector<Run> runs_;
  std::FILE* file_ = nullptr;
  int64_t file_records_ = 0;
  bool failed_ = false;
  int64_t requests_ = 0;  // with a session, finished or rejected
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SESSION_METRICS_H_
