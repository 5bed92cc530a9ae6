#include "traces/jsonl_export.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "traces/request.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

class JsonlWriter final : public TraceWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path, const TraceWriterOptions& options) {
    if (options.block_tokens < 0) {
      return absl::InvalidArgumentError(absl::StrCat("block_tokens: expected >= 0, got ", options.block_tokens));
    }
    const std::string tmp = TempPathFor(path);
    std::FILE* file = std::fopen(tmp.c_str(), "wb");
    if (file == nullptr) {
      return absl::InternalError(absl::StrCat(tmp, ": cannot create: ", std::strerror(errno)));
    }
    std::unique_ptr<JsonlWriter> writer(new JsonlWriter(path, tmp, file, options.block_tokens));
    std::string line = absl::StrCat("{\"kvsim_trace\": ", kJsonlTraceVersion, ", \"source_format\": ");
    AppendJsonString(options.source_format, &line);
    absl::StrAppend(&line, ", \"block_tokens\": ", options.block_tokens, "}\n");
    KVSIM_RETURN_IF_ERROR(writer->Put(line));
    return std::unique_ptr<TraceWriter>(std::move(writer));
  }

  ~JsonlWriter() override {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(tmp_.c_str());
    }
  }

  absl::Status Write(const Request& r) override {
    if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": writer closed"));
    if ((r.block_tokens != 0 && r.block_tokens != block_tokens_) || (r.block_tokens == 0 && !r.block_hashes.empty())) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": record ", records_,
                                                     ": block_tokens: expected 0 (no hashes) or the trace's ",
                                                     block_tokens_, ", got ", r.block_tokens));
    }
    if (r.input_tokens <= 0) {  // the reader refuses it (as replay does)
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": record ", records_, ": input_tokens: expected > 0, got ", r.input_tokens));
    }
    if (absl::Status counts = CheckBlockTokenCounts(r); !counts.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": record ", records_, ": ", counts.message()));
    }
    line_.clear();
    absl::StrAppend(&line_, "{\"request_id\": ", r.request_id, ", \"arrival_ns\": ", r.arrival_ns,
                    ", \"session_id\": ", r.session_id, ", \"parent_id\": ", r.parent_id, ", \"turn\": ", r.turn,
                    ", \"input_tokens\": ", r.input_tokens, ", \"output_tokens\": ", r.output_tokens,
                    ", \"block_tokens\": ", r.block_tokens, ", \"block_hashes\": [");
    for (size_t k = 0; k < r.block_hashes.size(); ++k) {
      if (k > 0) line_ += ", ";
      absl::StrAppend(&line_, r.block_hashes[k]);
    }
    if (!r.block_token_counts.empty()) {  // variable blocks only, so uniform traces export as before
      line_ += "], \"block_token_counts\": [";
      for (size_t k = 0; k < r.block_token_counts.size(); ++k) {
        if (k > 0) line_ += ", ";
        absl::StrAppend(&line_, r.block_token_counts[k]);
      }
    }
    absl::StrAppend(&line_, "], \"type\": \"", proto::RequestType_Name(r.type),
                    "\", \"failed\": ", r.failed ? "true" : "false", ", \"model\": ");
    AppendJsonString(r.model, &line_);
    line_ += ", \"tool_calls\": [";
    for (size_t k = 0; k < r.tool_calls.size(); ++k) {
      line_ += k > 0 ? ", {\"name\": " : "{\"name\": ";
      AppendJsonString(r.tool_calls[k].name, &line_);
      absl::StrAppend(&line_, ", \"duration_ns\": ", r.tool_calls[k].duration_ns, "}");
    }
    line_ += "]}\n";
    ++records_;
    return Put(line_);
  }

  absl::Status Close() override {
    if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed twice"));
    std::FILE* file = file_;
    file_ = nullptr;
    return CommitTempFile(file, tmp_, path_);
  }

 private:
  JsonlWriter(std::string path, std::string tmp, std::FILE* file, int32_t block_tokens)
      : path_(std::move(path)), tmp_(std::move(tmp)), file_(file), block_tokens_(block_tokens) {}

  absl::Status Put(absl::string_view bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
      return absl::InternalError(absl::StrCat(tmp_, ": cannot write: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  std::string path_;
  std::string tmp_;
  std::FILE* file_;
  int32_t block_tokens_;
  uint64_t records_ = 0;
  std::string line_;
};

}  // namespace

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppend(out, "\\u00", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenJsonlTraceWriter(const std::string& path,
                                                                  const TraceWriterOptions& options) {
  return JsonlWriter::Open(path, options);
}

}  // namespace kvsim
