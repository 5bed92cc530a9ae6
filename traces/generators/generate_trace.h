// File: traces/generators/generate_trace.h
//
// GenerateTraceFile: what `kvsim gen` does, as a library call with its I/O injected: generates the
// workload of a spec and writes it through a TraceWriter (native or JSONL, chosen by the output path's
// extension), returning a summary for the user. The trace appears at the path only if everything
// succeeded (TraceWriter::Close moves it into place).
//
// Example (tools/gen_command.cc):
//   KVSIM_ASSIGN_OR_RETURN(GenerateSummary summary,
//       GenerateTraceFile(spec, seed, "out.kvt", OpenTraceFromPath, OpenTraceWriter));
//   out << FormatGenerateSummary(summary);
//
// Thread-safety: a plain function; the openers are called from the calling thread.
#ifndef KVSIM_TRACES_GENERATORS_GENERATE_TRACE_H_
#define KVSIM_TRACES_GENERATORS_GENERATE_TRACE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/workload.pb.h"
#include "traces/generators/trace_opener.h"
#include "traces/trace_writer.h"

namespace kvsim {

// Has the signature of OpenTraceWriter() (traces/trace_writer.h).
using TraceWriterOpener = std::function<absl::StatusOr<std::unique_ptr<TraceWriter>>(
    const std::string& path, const std::string& format, int32_t block_tokens)>;

struct GenerateSummary {
  std::string path;
  std::string format;  // "native" or "jsonl"
  uint64_t seed = 0;
  int32_t block_tokens = 0;
  int64_t num_requests = 0;
  int64_t num_sessions = 0;  // chat and agent sessions (single-turn requests are not sessions)
  int64_t num_tool_calls = 0;
  int64_t last_arrival_ns = 0;
  int64_t input_tokens = 0;  // sums over all requests
  int64_t output_tokens = 0;
  int64_t block_references = 0;  // total block ids emitted
};

// "jsonl" if `path` ends in ".jsonl", else "native".
std::string TraceFormatForPath(const std::string& path);

// Generates `spec` with `seed` into `path`. Errors: the spec's (InvalidArgument naming the field, after
// "SPEC_SOURCE: " when `spec_source`, the spec's file, is given), the traces' it reads, or the writer's.
// `progress`, if set, is called after each request written with (requests written, spec.num_requests;
// 0 = not known), e.g. util/progress.h's Progress::Callback(); the trace does not depend on it.
absl::StatusOr<GenerateSummary> GenerateTraceFile(const proto::WorkloadSpec& spec, uint64_t seed,
                                                  const std::string& path, const TraceOpener& open_trace,
                                                  const TraceWriterOpener& open_writer,
                                                  const std::function<void(int64_t, int64_t)>& progress = {},
                                                  absl::string_view spec_source = {});

// A few lines for the user: what was written and its totals.
std::string FormatGenerateSummary(const GenerateSummary& summary);

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_GENERATE_TRACE_H_
