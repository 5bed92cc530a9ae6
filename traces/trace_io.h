// File: traces/trace_io.h
//
// Opening traces by format name or by content: OpenTrace() (declared in traces/trace_reader.h) and
// OpenTraceWriter() (traces/trace_writer.h) are implemented here, over the registry of formats in
// traces/trace_format.h. Depending on //traces:trace_io links every importer in.
//
// Detection reads the file's first 64 KiB and asks each registered format's detector in a fixed order
// (most specific first); the first that recognises the content wins. --trace_format overrides it.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::string format, DetectTraceFormat("trace.jsonl"));  // "mooncake"
//   KVSIM_ASSIGN_OR_RETURN(auto reader, OpenTrace("trace.jsonl", {}));
#ifndef KVSIM_TRACES_TRACE_IO_H_
#define KVSIM_TRACES_TRACE_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace kvsim {

// The name of the format `path`'s content is in. NotFound if missing; InvalidArgument naming the known
// formats if the file is empty or matches none.
absl::StatusOr<std::string> DetectTraceFormat(const std::string& path);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_IO_H_
