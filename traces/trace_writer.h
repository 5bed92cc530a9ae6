// File: traces/trace_writer.h
//
// TraceWriter: writes requests to a trace file (the native binary format, or JSONL for export). The file
// appears at `path` only when Close() succeeds (temporary file + rename): a failed or abandoned write
// never leaves a half-written trace.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer,
//                          OpenTraceWriter("out.kvt", "native", /*block_tokens=*/512));
//   for (const Request& r : requests) KVSIM_RETURN_IF_ERROR(writer->Write(r));
//   KVSIM_RETURN_IF_ERROR(writer->Close());
#ifndef KVSIM_TRACES_TRACE_WRITER_H_
#define KVSIM_TRACES_TRACE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "traces/request.h"

namespace kvsim {

class TraceWriter {
 public:
  virtual ~TraceWriter() = default;

  // Appends one request. REQUIRES: Close() not yet called.
  virtual absl::Status Write(const Request& request) = 0;

  // Finishes the file and moves it into place. Calling it twice is an error.
  virtual absl::Status Close() = 0;
};

// Options of OpenTraceWriter. Every field has a safe default.
struct TraceWriterOptions {
  int32_t block_tokens = 0;   // tokens per hash block of the requests written (0 = no hashes)
  std::string source_format;  // native: recorded in the header (the importer that read the source)
  bool compress = true;       // native: zstd-compress each frame
  int zstd_level = 3;         // native: zstd level, 1 (fastest) .. 19
  // native: Huffman-code the literals of zstd frames. Off by default: on Mooncake-like traces that makes
  // files ~7% larger but frames decompress ~2x faster. Readers accept either.
  bool zstd_compress_literals = false;
  int64_t frame_bytes = 64 * 1024;  // native: encoded bytes per independently decodable frame, >= 64
  // oracle_general: block size in tokens given to requests without hashes (as cache replay's
  // --block_tokens does), > 0. See traces/peer_export.h.
  int32_t fresh_block_tokens = 16;
};

// `format`: "native" (binary, see traces/native_format.h), "jsonl" (one JSON object per record with
// every field; traces/jsonl_export.h), or a peer's format: "vidur", "mooncake", "oracle_general"
// (traces/peer_export.h). `block_tokens`: tokens per hash block of the requests written
// (0 = no hashes). InvalidArgument for an unknown format.
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path, const std::string& format,
                                                             int32_t block_tokens);
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path, const std::string& format,
                                                             const TraceWriterOptions& options);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_WRITER_H_
