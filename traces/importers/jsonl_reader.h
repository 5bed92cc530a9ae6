// File: traces/importers/jsonl_reader.h
//
// The reader of kvsim's own JSON-lines trace format ("jsonl"; the format and its writer:
// traces/jsonl_export.h). Registers the format (detected by the {"kvsim_trace": N} header line).
// Errors name the file, the line and the field; records are re-sorted by arrival like every importer's.
// Every request_id must be new: a repeat is an error naming the earliest line that repeats an id, found
// when the file ends (the check holds a bounded buffer and spills to a temporary file, so memory does
// not grow with the trace: traces/text/request_id_check.h). Requests whose parent_id no earlier line
// defines are counted in a warning, likewise known at the end.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenJsonlTrace("t.jsonl", {}));
#ifndef KVSIM_TRACES_IMPORTERS_JSONL_READER_H_
#define KVSIM_TRACES_IMPORTERS_JSONL_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenJsonlTrace(const std::string& path, const TraceOptions& options);

// True when `head` starts (after blank lines) with the header object.
bool LooksLikeKvsimJsonl(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_JSONL_READER_H_
