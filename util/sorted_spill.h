// File: util/sorted_spill.h
//
// SortedRecordSpill<T>: a multiset of fixed-size records, added one at a time, later read back in
// ascending order (T's operator<), in bounded memory. Up to `run_values` records are held in memory; when
// that many are held they are sorted and written as one run to an anonymous temporary file (std::tmpfile:
// removed by the system when the file is closed, so no error path or crash leaves it behind). Visit()
// merges the runs and what is still in memory (a k-way merge through a heap), calling the visitor with
// every record in ascending order. Records that compare equal are visited in an unspecified order, so give
// T a total order (SortedSpill sorts its doubles with SortDoubles, util/radix_sort.h: std::sort's sequence,
// -0.0 before +0.0).
// T must be trivially copyable (records are written and read as bytes).
//
// SortedSpill is SortedRecordSpill<double>: the latency distributions' spill.
//
// Memory: run_values x sizeof(T) bytes while adding (1.25x that for a moment, when the buffer grows to the
// whole run); while visiting, that plus read buffers of kReadValues
// records per spilled run (one run per run_values records added) up to kMergeValues records in all, the
// buffers shrinking (to kMinReadValues) as runs add up, plus about 80 bytes per run. Sorting a run of
// doubles takes 8 bytes of scratch per record for a moment. Disk: sizeof(T) per
// spilled record.
//
// Example:
//   SortedSpill latencies(/*run_values=*/1 << 20);
//   for (...) latencies.Add(ms);
//   KVSIM_RETURN_IF_ERROR(latencies.Visit([&](double v) { ... ascending ... }));
//
// Thread-safety: none.
#ifndef KVSIM_UTIL_SORTED_SPILL_H_
#define KVSIM_UTIL_SORTED_SPILL_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "util/check.h"
#include "util/radix_sort.h"

namespace kvsim {

template <typename T>
class SortedRecordSpill {
  static_assert(std::is_trivially_copyable<T>::value, "SortedRecordSpill writes records as bytes");

 public:
  // Records read back per spilled run at a time during Visit.
  static constexpr int64_t kReadValues = 8192;
  // Records of all the runs' read buffers together, and the least one buffer holds.
  static constexpr int64_t kMergeValues = int64_t{1} << 20;
  static constexpr int64_t kMinReadValues = 256;
  // Default in-memory run: 2^20 records (8 MiB of doubles).
  static constexpr int64_t kDefaultRunValues = int64_t{1} << 20;
  // Records of the first, small buffer of a run (Add).
  static constexpr int64_t kFirstValues = 4096;

  // REQUIRES: run_values >= 1.
  explicit SortedRecordSpill(int64_t run_values = kDefaultRunValues) : run_values_(run_values) {
    KVSIM_CHECK(run_values >= 1) << "SortedSpill run of " << run_values << " values";
  }
  ~SortedRecordSpill() {
    if (file_ != nullptr) std::fclose(file_);
  }
  SortedRecordSpill(const SortedRecordSpill&) = delete;
  SortedRecordSpill& operator=(const SortedRecordSpill&) = delete;

  // Adds a record. A failure to spill is remembered and returned by Visit.
  void Add(const T& value) {
    // The buffer doubles from kFirstValues records up to an eighth of the run, then is reserved whole: a
    // short distribution touches a few pages instead of the run's first huge page (2 MiB zeroed where the
    // heap has transparent huge pages, util/heap_tuning.h), and a long one holds the old and the new buffer
    // together once, at most 1.25x the run (plain doubling: 1.5x).
    if (values_.size() == values_.capacity()) {
      const int64_t held = static_cast<int64_t>(values_.capacity());
      values_.reserve(static_cast<size_t>(
          held < run_values_ / 8 ? std::min(run_values_, std::max(kFirstValues, 2 * held)) : run_values_));
    }
    values_.push_back(value);
    ++size_;
    if (static_cast<int64_t>(values_.size()) >= run_values_) SpillRun();
  }
  // Records added so far.
  int64_t size() const { return size_; }
  // Records held in memory now (at most run_values).
  int64_t held() const { return static_cast<int64_t>(values_.size()); }
  // Runs written to the temporary file so far.
  int64_t spilled_runs() const { return static_cast<int64_t>(runs_.size()); }

  // Calls `visit` with every record added, in ascending order. Internal if the temporary file could not be
  // created or written (nothing is visited then) or read back (the visit stops there: discard what it
  // saw). May be called more than once; records added after a Visit are visited by the next one.
  absl::Status Visit(const std::function<void(const T&)>& visit);

 private:
  struct Run {
    int64_t offset;  // in records, in file_
    int64_t count;
  };
  void SpillRun();
  // Sorts values_ ascending.
  void SortRun() {
    if constexpr (std::is_same<T, double>::value) {
      SortDoubles(&values_);
    } else {
      std::sort(values_.begin(), values_.end());
    }
  }

  const int64_t run_values_;
  std::vector<T> values_;  // not yet spilled
  std::vector<Run> runs_;
  std::FILE* file_ = nullptr;
  int64_t file_values_ = 0;
  int64_t size_ = 0;
  bool failed_ = false;
};

using SortedSpill = SortedRecordSpill<double>;

template <typename T>
void SortedRecordSpill<T>::SpillRun() {
  SortRun();
  if (!failed_ && file_ == nullptr) {
    file_ = std::tmpfile();
    failed_ = file_ == nullptr;
  }
  if (!failed_) {
    // Runs are appended; a Visit in between may have moved the position.
    failed_ = std::fseek(file_, 0, SEEK_END) != 0 ||
              std::fwrite(values_.data(), sizeof(T), values_.size(), file_) != values_.size();
  }
  runs_.push_back(Run{file_values_, static_cast<int64_t>(values_.size())});
  file_values_ += static_cast<int64_t>(values_.size());
  values_.clear();
}

template <typename T>
absl::Status SortedRecordSpill<T>::Visit(const std::function<void(const T&)>& visit) {
  if (failed_ || (file_ != nullptr && std::fflush(file_) != 0)) {
    return absl::InternalError("sorted values: cannot write the temporary spill file (std::tmpfile, in TMPDIR)");
  }
  SortRun();
  if (runs_.empty()) {
    for (const T& v : values_) visit(v);
    return absl::OkStatus();
  }
  // Source 0..runs-1: the spilled runs, each read kReadValues at a time; source `runs`: values_.
  struct Source {
    std::vector<T> buffer;
    size_t next = 0;
    int64_t file_next = 0;  // next record in the file to read
    int64_t file_end = 0;
  };
  std::vector<Source> sources(runs_.size() + 1);
  // Many runs (a long trace's token gaps): smaller reads, so the buffers stay within kMergeValues.
  const int64_t read_values =
      std::max(kMinReadValues, std::min(kReadValues, kMergeValues / static_cast<int64_t>(runs_.size())));
  const auto refill = [&](Source& s) -> bool {
    s.buffer.resize(static_cast<size_t>(std::min(read_values, s.file_end - s.file_next)));
    s.next = 0;
    if (s.buffer.empty()) return true;
    if (std::fseek(file_, static_cast<long>(s.file_next * sizeof(T)), SEEK_SET) != 0 ||
        std::fread(s.buffer.data(), sizeof(T), s.buffer.size(), file_) != s.buffer.size()) {
      return false;
    }
    s.file_next += static_cast<int64_t>(s.buffer.size());
    return true;
  };
  for (size_t i = 0; i < runs_.size(); ++i) {
    sources[i].file_next = runs_[i].offset;
    sources[i].file_end = runs_[i].offset + runs_[i].count;
  }
  // Min-heap of (record, source).
  using Head = std::pair<T, size_t>;
  const auto later = [](const Head& a, const Head& b) {
    return b.first < a.first || (!(a.first < b.first) && b.second < a.second);
  };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (!refill(sources[i])) return absl::InternalError("sorted values: cannot read the temporary spill file");
    if (!sources[i].buffer.empty()) heap.emplace(sources[i].buffer[0], i);
  }
  if (!values_.empty()) heap.emplace(values_[0], runs_.size());
  while (!heap.empty()) {
    const Head head = heap.top();
    heap.pop();
    visit(head.first);
    const size_t i = head.second;
    Source& s = sources[i];
    const std::vector<T>& buffer = i == runs_.size() ? values_ : s.buffer;
    if (++s.next < buffer.size()) {
      heap.emplace(buffer[s.next], i);
    } else if (i < runs_.size() && s.file_next < s.file_end) {
      if (!refill(s)) return absl::InternalError("sorted values: cannot read the temporary spill file");
      heap.emplace(s.buffer[0], i);
    }
  }
  return absl::OkStatus();
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_SORTED_SPILL_H_
