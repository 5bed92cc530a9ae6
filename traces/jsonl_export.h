// File: traces/jsonl_export.h
//
// kvsim's own JSON-lines trace format ("jsonl"): the lossless text form of a Request stream, for export,
// inspection with other tools, and hand-written test traces. The first line is a header object, then one
// object per record with every Request field:
//   {"kvsim_trace":1,"source_format":"mooncake","block_tokens":512}
//   {"request_id":0,"arrival_ns":0,"session_id":-1,"parent_id":-1,"turn":0,
//    "input_tokens":40160,"output_tokens":6,"block_tokens":512,"block_hashes":[0,1,...],
//    "type":"REQUEST_TYPE_UNSPECIFIED","failed":false,"model":"","tool_calls":[]}
// (each record on one line, written compactly by util/json_text.h; the reader takes any JSON spacing). Reading:
// request_id, arrival_ns, input_tokens and output_tokens are required; other fields default as in Request. arrival_ns
// is kept as written (already relative); ids are the file's; records are re-sorted by arrival like every importer
// (traces/text/import_reader.h). block_tokens must be 0 or the header's; block_hashes require block_tokens > 0. Hash
// ids and request ids are unsigned 64-bit. Strings must be valid UTF-8 (JSON's rule). Records with variable blocks also
// carry "block_token_counts": [...] after "block_hashes" (one count > 0 per id, summing to
// input_tokens; the key is absent for uniform blocks). The writer refuses what the reader would
// (input_tokens <= 0, counts that do not fit), naming the record, so an export always reads back.
//
// The writer is here; the reader is an importer like the others (traces/importers/jsonl_reader.h).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto writer, OpenJsonlTraceWriter("out.jsonl", {.block_tokens = 512}));
#ifndef KVSIM_TRACES_JSONL_EXPORT_H_
#define KVSIM_TRACES_JSONL_EXPORT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace kvsim {

// The version in the header line this writer writes and traces/importers/jsonl_reader.h reads.
inline constexpr int64_t kJsonlTraceVersion = 1;

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenJsonlTraceWriter(const std::string& path,
                                                                  const TraceWriterOptions& options);

}  // namespace kvsim

#endif  // KVSIM_TRACES_JSONL_EXPORT_H_
