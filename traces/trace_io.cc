#include "traces/trace_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "traces/jsonl_export.h"
#include "traces/native_format.h"
#include "traces/peer_export.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::StatusOr<std::string> ReadHead(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(errno));
    if (errno == ENOENT) return absl::NotFoundError(message);
    if (errno == EACCES || errno == EPERM) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  std::string head(kTraceDetectBytes, '\0');
  const size_t got = std::fread(head.data(), 1, head.size(), file);
  const bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": read error"));
  head.resize(got);
  return head;
}

}  // namespace

absl::StatusOr<std::string> DetectTraceFormat(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string head, ReadHead(path));
  if (head.find_first_not_of(" \t\r\n") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the file is empty; expected a trace in one of: ", TraceFormatNames()));
  }
  for (const TraceFormat* format : TraceFormats()) {
    if (format->detect(head)) return format->name;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": content matches no known trace format (", TraceFormatNames(),
                                                 "); name one with --trace_format"));
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTrace(const std::string& path, const TraceOptions& options) {
  if (options.reorder_window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reorder window: expected at least 1 record, got ", options.reorder_window));
  }
  std::string name = options.format;
  if (name.empty()) {
    KVSIM_ASSIGN_OR_RETURN(name, DetectTraceFormat(path));
  }
  const TraceFormat* format = FindTraceFormat(name);
  if (format == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown trace format '", name, "'; known formats: ", TraceFormatNames()));
  }
  return format->open(path, options);
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path, const std::string& format,
                                                             const TraceWriterOptions& options) {
  if (format == "native") return OpenNativeTraceWriter(path, options);
  if (format == "jsonl") return OpenJsonlTraceWriter(path, options);
  if (format == "vidur") return OpenVidurTraceWriter(path, options);
  if (format == "mooncake") return OpenMooncakeTraceWriter(path, options);
  if (format == "oracle_general") return OpenOracleGeneralTraceWriter(path, options);
  return absl::InvalidArgumentError(absl::StrCat("unknown trace writer format '", format,
                                                 "'; known: native, jsonl, vidur, mooncake, oracle_general"));
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path, const std::string& format,
                                                             int32_t block_tokens) {
  TraceWriterOptions options;
  options.block_tokens = block_tokens;
  return OpenTraceWriter(path, format, options);
}

}  // namespace kvsim
