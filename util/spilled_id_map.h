// File: util/spilled_id_map.h
//
// SpilledIdMap<V>: a map from 64-bit ids to values of a trivially copyable type V, in memory that does not
// grow with the number of ids. The entries set most recently are held in a hash map; when it holds
// `memory_entries` of them they are sorted by id and written as one run to an anonymous temporary file
// (std::tmpfile: removed by the system when closed, on any path) and the hash map starts again. Find
// looks in the hash map, then in the runs from the newest to the oldest (only those whose id range covers
// the id: each run keeps in memory the first id of every block of 256 of its entries, so a probe reads one
// block with pread and searches it), so it returns the value of the latest Set of the id: exactly what one
// unbounded hash map would return.
//
// For readers that must remember something about every id of a stream (the session of each chat of a
// trace) but look up mostly recent ones: a lookup that the hash map answers touches no disk; one that it
// does not costs one page-cache read per run that could hold the id.
//
// Memory: the hash map, about 1.3 x memory_entries x (8 + sizeof(V)) bytes plus its control bytes, the
// same again while a run is sorted and written, and per run (one per memory_entries ids set) 64 bytes plus
// its block index, 8 bytes per 256 entries (1/32 byte per id spilled: 32 MiB at a billion ids).
// Disk: 8 + sizeof(V) bytes per entry spilled.
//
// Example:
//   SpilledIdMap<int64_t> session_of;
//   session_of.Set(chat_id, session);
//   int64_t session;
//   KVSIM_ASSIGN_OR_RETURN(bool found, session_of.Find(parent_id, &session));
//
// Thread-safety: none; one owner.
#ifndef KVSIM_UTIL_SPILLED_ID_MAP_H_
#define KVSIM_UTIL_SPILLED_ID_MAP_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {

template <typename V>
class SpilledIdMap {
  static_assert(std::is_trivially_copyable<V>::value, "SpilledIdMap writes values as bytes");

 public:
  // Default entries held before a spill: 2^20.
  static constexpr int64_t kDefaultMemoryEntries = int64_t{1} << 20;

  // REQUIRES: memory_entries >= 1.
  explicit SpilledIdMap(int64_t memory_entries = kDefaultMemoryEntries) : memory_entries_(memory_entries) {
    KVSIM_CHECK(memory_entries >= 1) << "SpilledIdMap of " << memory_entries << " entries";
  }
  ~SpilledIdMap() {
    if (file_ != nullptr) std::fclose(file_);
  }
  SpilledIdMap(const SpilledIdMap&) = delete;
  SpilledIdMap& operator=(const SpilledIdMap&) = delete;

  // Maps `id` to `value` (replacing what an earlier Set gave it). Internal if a run cannot be written; the
  // map is then unusable (every later call returns that error).
  absl::Status Set(uint64_t id, const V& value) {
    KVSIM_RETURN_IF_ERROR(status_);
    memory_[id] = value;
    if (static_cast<int64_t>(memory_.size()) >= memory_entries_) Spill();
    return status_;
  }

  // True and *value set if `id` was Set (its latest value); false if never. Internal if the temporary file
  // cannot be read.
  absl::StatusOr<bool> Find(uint64_t id, V* value) {
    KVSIM_RETURN_IF_ERROR(status_);
    if (auto it = memory_.find(id); it != memory_.end()) {
      *value = it->second;
      return true;
    }
    for (size_t r = runs_.size(); r-- > 0;) {
      const Run& run = runs_[r];
      if (id < run.min_id || id > run.max_id) continue;
      // The block that can hold `id`: the last whose first id is <= id (run.min_id <= id, so one is).
      const auto& firsts = run.block_first_ids;
      const size_t block = static_cast<size_t>(std::upper_bound(firsts.begin(), firsts.end(), id) - firsts.begin()) - 1;
      const int64_t begin = static_cast<int64_t>(block) * kBlockEntries;
      const int64_t count = std::min(kBlockEntries, run.count - begin);
      KVSIM_RETURN_IF_ERROR(ReadEntries(run.offset + begin, count));
      const auto it = std::lower_bound(block_.begin(), block_.begin() + count, id,
                                       [](const Entry& e, uint64_t key) { return e.id < key; });
      if (it != block_.begin() + count && it->id == id) {
        *value = it->value;
        return true;
      }
    }
    return false;
  }

  // Entries held in memory now, and runs spilled so far.
  int64_t held_entries() const { return static_cast<int64_t>(memory_.size()); }
  int64_t spilled_runs() const { return static_cast<int64_t>(runs_.size()); }

 private:
  struct Entry {
    uint64_t id;
    V value;
  };
  // Entries of a run read at a time: the run's index keeps the first id of each block of this many.
  static constexpr int64_t kBlockEntries = 256;
  struct Run {
    int64_t offset;  // in entries, in file_
    int64_t count;
    uint64_t min_id, max_id;
    std::vector<uint64_t> block_first_ids;  // of entries 0, kBlockEntries, 2 kBlockEntries, ...
  };

  void Spill() {
    std::vector<Entry> entries;
    entries.reserve(memory_.size());
    for (const auto& [id, value] : memory_) entries.push_back(Entry{id, value});
    memory_.clear();
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
    if (file_ == nullptr) file_ = std::tmpfile();
    if (file_ == nullptr || std::fseek(file_, 0, SEEK_END) != 0 ||
        std::fwrite(entries.data(), sizeof(Entry), entries.size(), file_) != entries.size() ||
        std::fflush(file_) != 0) {
      status_ = absl::InternalError("id map: cannot write the temporary spill file (std::tmpfile, in TMPDIR)");
      return;
    }
    Run run{file_entries_, static_cast<int64_t>(entries.size()), entries.front().id, entries.back().id, {}};
    for (size_t i = 0; i < entries.size(); i += kBlockEntries) run.block_first_ids.push_back(entries[i].id);
    runs_.push_back(std::move(run));
    file_entries_ += static_cast<int64_t>(entries.size());
  }

  // Reads `count` (<= kBlockEntries) entries from entry `index` of the file into block_.
  absl::Status ReadEntries(int64_t index, int64_t count) {
    block_.resize(static_cast<size_t>(kBlockEntries));
    const off_t at = static_cast<off_t>(index) * static_cast<off_t>(sizeof(Entry));
    const ssize_t bytes = static_cast<ssize_t>(count * static_cast<int64_t>(sizeof(Entry)));
    if (::pread(fileno(file_), block_.data(), static_cast<size_t>(bytes), at) != bytes) {
      return absl::InternalError("id map: cannot read the temporary spill file");
    }
    return absl::OkStatus();
  }

  const int64_t memory_entries_;
  absl::flat_hash_map<uint64_t, V> memory_;
  std::vector<Run> runs_;
  std::vector<Entry> block_;  // scratch of Find
  std::FILE* file_ = nullptr;
  int64_t file_entries_ = 0;
  absl::Status status_;
};

}  // namespace kvsim

#endif  // KVSIM_UTIL_SPILLED_ID_MAP_H_
