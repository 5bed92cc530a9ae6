// File: traces/text/import_reader.h
//
// ImportReader: the part every text importer shares. A format-specific RecordSource parses records in file
// order with their timestamps as the source gives them (in ns, any origin); ImportReader turns them into
// the Request stream the simulator expects:
//
//  * Order. Records come out sorted by timestamp, stably (equal timestamps keep file order). A streaming
//    reader cannot sort an unbounded file, so it sorts within a bounded reorder window: it holds the next
//    `reorder_window` records and always emits the earliest. A record that is earlier than one already
//    emitted (displaced by more than the window) is an error naming its line and the window size. Memory
//    is bounded by the window, never by the trace's length. Each record whose timestamp is earlier than its
//    predecessor's in the file counts as one warning ("non-monotonic timestamps re-sorted: N").
//  * Time origin. arrival_ns = timestamp - the earliest timestamp (that of the first record emitted), so
//    the first arrival is 0 and every arrival is >= 0.
//  * Ids. A source without request ids gets the 0-based record index in file order (before sorting), so
//    an id always points back to the source record.
//
// Example:
//   return MakeImportReader(std::move(source), {path, "mooncake", 512}, options);
//
// Thread-safety: one thread at a time.
#ifndef KVSIM_TRACES_TEXT_IMPORT_READER_H_
#define KVSIM_TRACES_TEXT_IMPORT_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "traces/request.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Records held at most by ImportReader for re-sorting, unless the caller asks for another window.
inline constexpr size_t kDefaultReorderWindow = 4096;

// Parses one trace format, record by record, in file order.
class RecordSource {
 public:
  virtual ~RecordSource() = default;

  // Fills `*request` (cleared first) with the next record and returns true, or returns false at the end
  // or at the first error (then status() is not OK). `request->arrival_ns` holds the source's timestamp
  // in ns from the source's own origin (may be negative or out of order); if the source has no ids,
  // `request->request_id` is left for ImportReader to fill.
  // REQUIRES: not called again after it returned false.
  virtual bool Next(Request* request) = 0;

  // OK or the first error, "<path>:<line>: <field>: <what was expected>".
  virtual absl::Status status() const = 0;

  // True if the source gives each record its own id (then ImportReader leaves request_id alone).
  virtual bool has_request_ids() const { return false; }

  // True if the source's timestamps are already kvsim arrival times (ns since the trace start): then
  // ImportReader keeps them as they are instead of moving the origin to the earliest record.
  virtual bool times_are_relative() const { return false; }

  // "<path>:<line>" of the record last returned, for ImportReader's own errors.
  virtual std::string position() const = 0;

  // Format-specific warnings ("N rows with 0 response tokens marked failed"), one line each.
  virtual std::vector<std::string> warnings() const { return {}; }
};

class ImportReader final : public TraceReader {
 public:
  // REQUIRES: reorder_window >= 1.
  ImportReader(std::unique_ptr<RecordSource> source, TraceInfo info, size_t reorder_window = kDefaultReorderWindow);

  bool Next(Request* request) override;
  absl::Status status() const override { return status_; }
  const TraceInfo& info() const override { return info_; }
  std::vector<std::string> warnings() const override;

  // Records that were earlier than their predecessor in the file.
  int64_t num_out_of_order() const { return num_out_of_order_; }

 private:
  struct Pending {
    int64_t timestamp_ns;
    uint64_t sequence;  // file order, breaks ties
    size_t slot;        // index into slots_
  };
  // Reads records until the window is full or the source ends. False on error.
  bool Fill();

  std::unique_ptr<RecordSource> source_;
  TraceInfo info_;
  size_t window_;
  std::vector<Request> slots_;  // window storage; slots swap with the caller's Request
  std::vector<size_t> free_slots_;
  std::vector<Pending> heap_;  // min-heap on (timestamp_ns, sequence)
  bool source_done_ = false;
  uint64_t num_read_ = 0;
  bool have_previous_ = false;
  int64_t previous_timestamp_ns_ = 0;  // of the record before in file order
  bool have_emitted_ = false;
  int64_t last_emitted_ns_ = 0;
  int64_t origin_ns_ = 0;
  int64_t num_out_of_order_ = 0;
  absl::Status status_;
};

// An ImportReader with options.reorder_window; InvalidArgument if the window is < 1.
absl::StatusOr<std::unique_ptr<TraceReader>> MakeImportReader(std::unique_ptr<RecordSource> source, TraceInfo info,
                                                              const TraceOptions& options);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEXT_IMPORT_READER_H_
