// File: traces/trace_reader.h
//
// TraceReader: streams the records of a trace into a caller-owned Request, one at a time, so memory does
// not grow with the trace's length. Readers carry their own status (LevelDB's iterator shape): Next()
// returns false at the end *or* at the first error, and status() tells which, naming the file, the line
// or record and what was expected.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(path, {}));
//   Request request;
//   while (reader->Next(&request)) Replay(request);
//   KVSIM_RETURN_IF_ERROR(reader->status());
//
// Readers report exactly what the source has: a trace without block hashes yields requests with empty
// `block_hashes` (the consumer calls AssignFreshBlockHashes with its configured block size).
//
// Thread-safety: a reader is used by one thread at a time.
#ifndef KVSIM_TRACES_TRACE_READER_H_
#define KVSIM_TRACES_TRACE_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "traces/request.h"

namespace kvsim {

// What a reader knows about its trace before the first record.
struct TraceInfo {
  std::string path;
  std::string format;        // importer name: "mooncake", "bailian", "azure", "burstgpt", "vidur", "native", ...
  int32_t block_tokens = 0;  // tokens per hash block; 0 = the trace has no block hashes
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;

  // Fills `*request` (cleared first) with the next record and returns true. Returns false at the end of
  // the trace or at the first error; after false, status() is OK only at a clean end.
  virtual bool Next(Request* request) = 0;

  // OK, or the first error: "<path>:<line or record>: <field>: <what was expected>".
  virtual absl::Status status() const = 0;

  virtual const TraceInfo& info() const = 0;

  // Warnings counted so far (e.g. "non-monotonic timestamps re-sorted: 3"), one line each.
  virtual std::vector<std::string> warnings() const { return {}; }
};

// Options of OpenTrace. Every field has a safe default.
struct TraceOptions {
  std::string format;         // importer name; empty = detect from the file's content
  bool chain_hashes = false;  // hash-per-block JSONL: chain content hashes into prefix ids
  // True when the caller set chain_hashes on purpose; false = the format's default (off for "hashed",
  // on for "chunk_hash").
  bool chain_hashes_given = false;
  // Nanoseconds per timestamp unit for formats whose unit varies ("chunk_hash": 1 = ns, 1000 = us,
  // 1e6 = ms, 1e9 = s); 0 = the format's rule (chunk_hash detects it, see its header). >= 0.
  int64_t timestamp_unit_ns = 0;
  // Tokens per hash block for formats whose records do not say (hash-per-block JSONL without
  // "block_size"); 0 = the format's own. >= 0.
  int32_t block_tokens = 0;
  // Text importers re-sort records by timestamp within a window of this many records (memory grows with
  // it, not with the trace); a record displaced further is an error. >= 1. See traces/text/import_reader.h.
  int64_t reorder_window = 4096;
};

// Opens `path` with the named importer (or the detected one). InvalidArgument naming the known formats
// when the name is unknown or the content matches none; NotFound when the file is missing.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTrace(const std::string& path, const TraceOptions& options);

// Opens a fresh reader of a trace at its first record: for commands that read a trace more than once (a
// streaming reader cannot rewind).
using TraceReopener = std::function<absl::StatusOr<std::unique_ptr<TraceReader>>()>;

// A reader over requests held in memory; for tests and generated workloads.
class VectorTraceReader final : public TraceReader {
 public:
  VectorTraceReader(std::vector<Request> requests, TraceInfo info)
      : requests_(std::move(requests)), info_(std::move(info)) {}

  bool Next(Request* request) override {
    if (next_ >= requests_.size()) return false;
    *request = requests_[next_++];
    return true;
  }
  absl::Status status() const override { return absl::OkStatus(); }
  const TraceInfo& info() const override { return info_; }

 private:
  std::vector<Request> requests_;
  TraceInfo info_;
  size_t next_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_READER_H_
