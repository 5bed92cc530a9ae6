// File: sim/serving/sorted_spill.h
//
// SortedSpill: a multiset of doubles, added one at a time, later read back in ascending order, in bounded
// memory. Up to `run_values` values are held in memory; when that many are held they are sorted and
// written as one run to an anonymous temporary file (std::tmpfile: removed by the system when the file is
// closed, so no error path or crash leaves it behind). Visit() merges the runs and what is still in memory
// (a k-way merge through a heap), calling the visitor with every value in ascending order. Equal values are
// indistinguishable, so the sequence is exactly that of std::sort over all the values.
//
// Memory: run_values x 8 bytes while adding; while visiting, that plus read buffers of kReadValues x 8
// bytes (64 KiB) per spilled run (one run per run_values values added) up to kMergeValues x 8 bytes
// (8 MiB) in all, the buffers shrinking (to kMinReadValues) as runs add up, plus about 80 bytes per run.
// Disk: 8 bytes per spilled value.
//
// Example:
//   SortedSpill latencies(/*run_values=*/1 << 20);
//   for (...) latencies.Add(ms);
//   KVSIM_RETURN_IF_ERROR(latencies.Visit([&](double v) { ... ascending ... }));
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_SORTED_SPILL_H_
#define KVSIM_SIM_SERVING_SORTED_SPILL_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace kvsim {

class SortedSpill {
 public:
  // Values read back per spilled run at a time during Visit.
  static constexpr int64_t kReadValues = 8192;
  // Values of all the runs' read buffers together, and the least one buffer holds.
  static constexpr int64_t kMergeValues = int64_t{1} << 20;
  static constexpr int64_t kMinReadValues = 256;
  // Default in-memory run: 2^20 values (8 MiB).
  static constexpr int64_t kDefaultRunValues = int64_t{1} << 20;

  // REQUIRES: run_values >= 1.
  explicit SortedSpill(int64_t run_values = kDefaultRunValues);
  ~SortedSpill();
  SortedSpill(const SortedSpill&) = delete;
  SortedSpill& operator=(const SortedSpill&) = delete;

  // Adds a value. A failure to spill is remembered and returned by Visit.
  void Add(double value);
  // Values added so far.
  int64_t size() const { return size_; }
  // Runs written to the temporary file so far.
  int64_t spilled_runs() const { return static_cast<int64_t>(runs_.size()); }

  // Calls `visit` with every value added, in ascending order. Internal if the temporary file could not be
  // created or written (nothing is visited then) or read back (the visit stops there: discard what it
  // saw). May be called more than once; values added after a Visit are visited by the next one.
  absl::Status Visit(const std::function<void(double)>& visit);

 private:
  struct Run {
    int64_t offset;  // in values, in file_
    int64_t count;
  };
  void SpillRun();

  const int64_t run_values_;
  std::vector<double> values_;  // not yet spilled
  std::vector<Run> runs_;
  std::FILE* file_ = nullptr;
  int64_t file_values_ = 0;
  int64_t size_ = 0;
  bool failed_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SORTED_SPILL_H_
