// File: traces/trace_convert.h
//
// ConvertTrace: streams every record of one trace (any readable format) into a new trace file (native
// or kvsim JSONL). This is `kvsim import`. Memory stays flat in the trace's length: one reader frame, or
// a text importer's reorder window of lines (plus, for kvsim JSONL, its request-id check's bounded buffer,
// traces/text/request_id_check.h), and one writer frame; the output appears only if the whole conversion
// succeeds (the writers write atomically).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(ConvertSummary summary,
//                          ConvertTrace("trace.jsonl", {}, "trace.kvt", "native", {}));
//   // summary.num_requests == 3993, summary.source_format == "mooncake"
#ifndef KVSIM_TRACES_TRACE_CONVERT_H_
#define KVSIM_TRACES_TRACE_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace kvsim {

struct ConvertSummary {
  std::string source_format;  // the importer that read the input
  int32_t block_tokens = 0;
  int64_t num_requests = 0;
  std::vector<std::string> warnings;  // the reader's
};

// `writer_options.block_tokens` and `.source_format` are taken from the reader (other fields as given).
// `out_format`: "native" or "jsonl"; "" = by the output's extension (".jsonl" -> jsonl, else native).
absl::StatusOr<ConvertSummary> ConvertTrace(const std::string& in, const TraceOptions& read_options,
                                            const std::string& out, const std::string& out_format,
                                            TraceWriterOptions writer_options);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_CONVERT_H_
