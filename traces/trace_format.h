// File: traces/trace_format.h
//
// The registry of trace formats (importers and the native format). Each format registers itself with one
// line at the bottom of its .cc (its cc_library has alwayslink = True, so the registration survives the
// linker), giving a name, a content detector and an opener. OpenTrace() (traces/trace_io.h) picks the
// format by name or, when none is named, asks the detectors in ascending `detect_order` (ties by name).
//
// Example (at the bottom of traces/importers/mooncake_reader.cc):
//   KVSIM_REGISTER_TRACE_FORMAT(mooncake, {
//       .name = "mooncake", .description = "Mooncake JSONL (timestamp ms, 512-token hash_ids)",
//       .detect_order = 20, .detect = LooksLikeMooncake, .open = OpenMooncakeTrace});
//
// Thread-safety: registration happens during static initialisation; afterwards the registry is read-only.
#ifndef KVSIM_TRACES_TRACE_FORMAT_H_
#define KVSIM_TRACES_TRACE_FORMAT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"
#include "util/registry.h"

namespace kvsim {

// Bytes of the file's beginning handed to the detectors (less if the file is shorter).
inline constexpr size_t kTraceDetectBytes = 64 * 1024;

struct TraceFormat {
  std::string name;         // as given to --trace_format, e.g. "mooncake"
  std::string description;  // one line for help texts
  int detect_order = 100;   // detectors run in ascending order; more specific formats go first
  // True when `head` (the file's first kTraceDetectBytes bytes, maybe cut mid-line) is in this format.
  // REQUIRES: pure; never reads the file itself.
  std::function<bool(absl::string_view head)> detect;
  // Opens `path` in this format. NotFound if missing; InvalidArgument (with file and line) if the content
  // does not fit the format. REQUIRES: thread-compatible; each call returns an independent reader.
  std::function<absl::StatusOr<std::unique_ptr<TraceReader>>(const std::string& path, const TraceOptions& options)>
      open;
};

// The registry of trace formats by name (util/registry.h).
Registry<TraceFormat>& TraceFormatRegistry();

// Adds `format` to the registry. Returns true so it can initialise a static bool. A duplicate name is an
// internal invariant violation (KVSIM_CHECK).
bool RegisterTraceFormat(TraceFormat format);

// The registered format named `name`, or nullptr.
const TraceFormat* FindTraceFormat(absl::string_view name);

// Every registered format, in detection order (detect_order, then name).
std::vector<const TraceFormat*> TraceFormats();

// "azure, bailian, ..." (sorted by name), for error messages.
std::string TraceFormatNames();

}  // namespace kvsim

#define KVSIM_REGISTER_TRACE_FORMAT(id, ...) \
  static const bool kvsim_trace_format_registered_##id = ::kvsim::RegisterTraceFormat(__VA_ARGS__)

#endif  // KVSIM_TRACES_TRACE_FORMAT_H_
