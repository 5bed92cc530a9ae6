// File: traces/text/request_id_check.h
//
// RequestIdCheck: checks, in memory that does not grow with the trace, that every request id of a text
// trace is new and counts the requests whose parent_id names no request on an earlier (or the same) line.
// A set of the ids seen so far would grow with the trace (about 20-30 bytes per request); instead each
// record adds one entry (id, line) and, if it has a parent, one entry (parent_id, line), to a
// SortedRecordSpill (util/sorted_spill.h: up to `memory_entries` entries held, then sorted and written as
// one run to an anonymous temporary file, removed by the system when closed, on any path). Finish() visits
// the entries merged in order (by id, then line) and walks each id's entries in line order, which decides
// exactly what the set would have: an id's second definition is a repeat, a parent entry before any
// definition of its id is an orphan.
//
// So a repeated id is found when the trace ends, not at its line: Finish() names the earliest line that
// repeats an id, which is the line the set would have stopped at.
//
// Memory: memory_entries x 16 bytes while adding (default 4 MiB); in Finish, the spill's read buffers
// (at most SortedRecordSpill::kMergeValues entries in all) plus about 80 bytes per run (one run per
// memory_entries entries added). Disk: 16 bytes per spilled entry.
//
// Example:
//   RequestIdCheck ids;
//   for each record: ids.Add(line, request.request_id, request.parent_id);
//   KVSIM_RETURN_IF_ERROR(ids.Finish(path));  // "<path>:<line>: request_id: expected an id not used ..."
//   if (ids.orphans() > 0) ...
//
// Thread-safety: none.
#ifndef KVSIM_TRACES_TEXT_REQUEST_ID_CHECK_H_
#define KVSIM_TRACES_TEXT_REQUEST_ID_CHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "util/sorted_spill.h"

namespace kvsim {

class RequestIdCheck {
 public:
  // Default entries held before a spill: 2^18 (4 MiB).
  static constexpr int64_t kDefaultMemoryEntries = int64_t{1} << 18;

  // REQUIRES: memory_entries >= 1.
  explicit RequestIdCheck(int64_t memory_entries = kDefaultMemoryEntries) : entries_(memory_entries) {}
  RequestIdCheck(const RequestIdCheck&) = delete;
  RequestIdCheck& operator=(const RequestIdCheck&) = delete;

  // Records a request on `line` (>= 1; lines increase from call to call); parent_id < 0 = none. A failure
  // to spill is remembered and returned by Finish.
  void Add(int64_t line, uint64_t request_id, int64_t parent_id);

  // OK, or InvalidArgument "<path>:<line>: <field>: expected an id not used before, got <id> again" for
  // the earliest line whose id an earlier line had (`field`: the format's name of the id); Internal if the
  // temporary file could not be created, written or read back. Sets orphans(). Call once, after the last
  // Add.
  absl::Status Finish(const std::string& path, absl::string_view field = "request_id");

  // Requests whose parent_id no earlier or same line defines; valid after Finish.
  int64_t orphans() const { return orphans_; }
  // Entries held in memory now (at most memory_entries), and runs spilled so far.
  int64_t held_entries() const { return entries_.held(); }
  int64_t spilled_runs() const { return entries_.spilled_runs(); }

 private:
  // Sorted by (id, line_kind): an id's entries in line order, a definition before a parent reference on
  // the same line (a request naming itself as parent is not an orphan).
  struct Entry {
    uint64_t id;
    uint64_t line_kind;  // line * 2, + 1 for a parent reference
    bool operator<(const Entry& o) const { return id != o.id ? id < o.id : line_kind < o.line_kind; }
  };

  SortedRecordSpill<Entry> entries_;
  int64_t orphans_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_REQUEST_ID_CHECK_H_
