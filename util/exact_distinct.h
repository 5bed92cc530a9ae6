// File: util/exact_distinct.h
//
// ExactDistinctCounter: the exact number of distinct 64-bit values in a stream, in bounded memory (where
// DistinctCounter, util/stream_sketch.h, estimates it past a limit). Up to `set_values` distinct values
// are held in a hash set; when it holds that many they move to a SortedRecordSpill (sorted runs in an
// anonymous temporary file) and the set starts again. Count() merges the runs with what the set holds and
// counts each value once. With fewer than `set_values` distinct values nothing touches the disk.
//
// Memory: the set (at most about 18 bytes per value of set_values, table slack included) plus the spill's
// run of set_values x 8 bytes; disk: 8 bytes per value of each full set.
//
// Example:
//   ExactDistinctCounter distinct;
//   for (BlockId b : request.block_hashes) distinct.Add(b);
//   KVSIM_ASSIGN_OR_RETURN(int64_t n, distinct.Count());
//
// Thread-safety: none; one owner.
#ifndef KVSIM_UTIL_EXACT_DISTINCT_H_
#define KVSIM_UTIL_EXACT_DISTINCT_H_

#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "util/check.h"
#include "util/sorted_spill.h"

namespace kvsim {

class ExactDistinctCounter {
 public:
  static constexpr int64_t kDefaultSetValues = int64_t{1} << 20;

  // REQUIRES: set_values >= 1.
  explicit ExactDistinctCounter(int64_t set_values = kDefaultSetValues)
      : set_values_(set_values), spill_(set_values) {
    KVSIM_CHECK(set_values >= 1) << "ExactDistinctCounter of " << set_values << " values";
  }

  void Add(uint64_t value) {
    set_.insert(value);
    if (static_cast<int64_t>(set_.size()) >= set_values_) {
      for (uint64_t v : set_) spill_.Add(v);
      set_.clear();
    }
  }

  // The distinct values added so far. Internal if the spill file could not be written or read.
  absl::StatusOr<int64_t> Count() {
    if (spill_.size() == 0) return static_cast<int64_t>(set_.size());
    for (uint64_t v : set_) spill_.Add(v);
    set_.clear();
    int64_t distinct = 0;
    bool first = true;
    uint64_t last = 0;
    absl::Status status = spill_.Visit([&](const uint64_t& v) {
      if (first || v != last) ++distinct;
      first = false;
      last = v;
    });
    if (!status.ok()) return status;
    return distinct;
  }

 private:
  const int64_t set_values_;
  absl::flat_hash_set<uint64_t> set_;
  SortedRecordSpill<uint64_t> spill_;
};

}  // namespace kvsim

#endif  // KVSIM_UTIL_EXACT_DISTINCT_H_
