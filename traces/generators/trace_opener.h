// File: traces/generators/trace_opener.h
//
// TraceOpener: how a generator opens the traces a workload spec names (replayed arrivals, resampled
// lengths). Injected rather than calling OpenTrace() directly, so the generator library does not depend
// on the importers and tests can supply in-memory traces.
//
// Example:
//   TraceOpener open = [](const std::string& path) { return OpenTrace(path, TraceOptions{}); };
#ifndef KVSIM_TRACES_GENERATORS_TRACE_OPENER_H_
#define KVSIM_TRACES_GENERATORS_TRACE_OPENER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Opens the trace at `path`; errors name the file. An empty TraceOpener means "no traces available".
using TraceOpener = std::function<absl::StatusOr<std::unique_ptr<TraceReader>>(const std::string& path)>;

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_TRACE_OPENER_H_
