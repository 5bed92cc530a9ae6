#include "traces/trace_convert.h"

#include "absl/strings/match.h"
#include "util/status_macros.h"

namespace kvsim {

absl::StatusOr<ConvertSummary> ConvertTrace(const std::string& in, const TraceOptions& read_options,
                                            const std::string& out, const std::string& out_format,
                                            TraceWriterOptions writer_options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(in, read_options));
  ConvertSummary summary;
  summary.source_format = reader->info().format;
  summary.block_tokens = reader->info().block_tokens;
  writer_options.block_tokens = summary.block_tokens;
  writer_options.source_format = summary.source_format;
  const std::string format = !out_format.empty() ? out_format : (absl::EndsWith(out, ".jsonl") ? "jsonl" : "native");
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, OpenTraceWriter(out, format, writer_options));
  Request request;
  while (reader->Next(&request)) {
    KVSIM_RETURN_IF_ERROR(writer->Write(request));
    ++summary.num_requests;
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  KVSIM_RETURN_IF_ERROR(writer->Close());
  summary.warnings = reader->warnings();
  return summary;
}

}  // namespace kvsim
