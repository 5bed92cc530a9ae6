#include "traces/generators/generate_trace.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "traces/generators/workload_generator.h"
#include "util/status_macros.h"

namespace kvsim {

std::string TraceFormatForPath(const std::string& path) { return absl::EndsWith(path, ".jsonl") ? "jsonl" : "native"; }

absl::StatusOr<GenerateSummary> GenerateTraceFile(const proto::WorkloadSpec& spec, uint64_t seed,
                                                  const std::string& path, const TraceOpener& open_trace,
                                                  const TraceWriterOpener& open_writer,
                                                  const std::function<void(int64_t, int64_t)>& progress,
                                                  absl::string_view spec_source) {
  absl::StatusOr<std::unique_ptr<WorkloadGenerator>> created = WorkloadGenerator::Create(spec, seed, open_trace);
  if (!created.ok()) {
    if (spec_source.empty() || created.status().code() != absl::StatusCode::kInvalidArgument) return created.status();
    return absl::InvalidArgumentError(absl::StrCat(spec_source, ": ", created.status().message()));
  }
  std::unique_ptr<WorkloadGenerator> generator = *std::move(created);
  GenerateSummary summary;
  summary.path = path;
  summary.format = TraceFormatForPath(path);
  summary.seed = seed;
  summary.block_tokens = generator->info().block_tokens;
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, open_writer(path, summary.format, summary.block_tokens));
  Request request;
  while (generator->Next(&request)) {
    KVSIM_RETURN_IF_ERROR(writer->Write(request));
    ++summary.num_requests;
    summary.num_sessions += request.session_id >= 0 && request.turn == 1;
    summary.num_tool_calls += static_cast<int64_t>(request.tool_calls.size());
    summary.last_arrival_ns = request.arrival_ns;
    summary.input_tokens += request.input_tokens;
    summary.output_tokens += request.output_tokens;
    summary.block_references += static_cast<int64_t>(request.block_hashes.size());
    if (progress) progress(summary.num_requests, spec.num_requests());
  }
  KVSIM_RETURN_IF_ERROR(generator->status());
  KVSIM_RETURN_IF_ERROR(writer->Close());
  return summary;
}

std::string FormatGenerateSummary(const GenerateSummary& s) {
  const double n = s.num_requests > 0 ? static_cast<double>(s.num_requests) : 1;
  return absl::StrFormat(
      "wrote %d requests to %s (%s, %d-token blocks, seed %d)\n"
      "sessions: %d, tool calls: %d, last arrival: %.3f s\n"
      "input tokens: %d (mean %.1f), output tokens: %d (mean %.1f), block references: %d\n",
      s.num_requests, s.path, s.format, s.block_tokens, s.seed, s.num_sessions, s.num_tool_calls,
      s.last_arrival_ns * 1e-9, s.input_tokens, s.input_tokens / n, s.output_tokens, s.output_tokens / n,
      s.block_references);
}

}  // namespace kvsim
