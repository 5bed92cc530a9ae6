#include "traces/jsonl_export.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "traces/request.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

class JsonlWriter final : public TraceWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path, const TraceWriterOptions& options) {
    if (options.block_tokens < 0) {
      return absl::InvalidArgumentError(absl::StrCat("block_tokens: expected >= 0, got ", options.block_tokens));
    }
    std::unique_ptr<JsonlWriter> writer(new JsonlWriter(options.block_tokens));
    KVSIM_RETURN_IF_ERROR(writer->file_.Open(path));
    Json header = Json::object();
    header["kvsim_trace"] = kJsonlTraceVersion;
    header["source_format"] = options.source_format;
    header["block_tokens"] = options.block_tokens;
    const std::string line = DumpJsonLine(header) + "\n";
    KVSIM_RETURN_IF_ERROR(writer->Put(line));
    return std::unique_ptr<TraceWriter>(std::move(writer));
  }

  absl::Status Write(const Request& r) override {
    if (!file_.is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path(), ": writer closed"));
    if ((r.block_tokens != 0 && r.block_tokens != block_tokens_) || (r.block_tokens == 0 && !r.block_hashes.empty())) {
      return absl::InvalidArgumentError(absl::StrCat(file_.path(), ": record ", records_,
                                                     ": block_tokens: expected 0 (no hashes) or the trace's ",
                                                     block_tokens_, ", got ", r.block_tokens));
    }
    if (r.input_tokens <= 0) {  // the reader refuses it (as replay does)
      return absl::InvalidArgumentError(
          absl::StrCat(file_.path(), ": record ", records_, ": input_tokens: expected > 0, got ", r.input_tokens));
    }
    if (absl::Status counts = CheckBlockTokenCounts(r); !counts.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(file_.path(), ": record ", records_, ": ", counts.message()));
    }
    Json record = Json::object();
    record["request_id"] = r.request_id;
    record["arrival_ns"] = r.arrival_ns;
    record["session_id"] = r.session_id;
    record["parent_id"] = r.parent_id;
    record["turn"] = r.turn;
    record["input_tokens"] = r.input_tokens;
    record["output_tokens"] = r.output_tokens;
    record["block_tokens"] = r.block_tokens;
    record["block_hashes"] = r.block_hashes;
    if (!r.block_token_counts.empty()) {  // variable blocks only, so uniform traces export as before
      record["block_token_counts"] = r.block_token_counts;
    }
    record["type"] = proto::RequestType_Name(r.type);
    record["failed"] = r.failed;
    record["model"] = r.model;
    Json tool_calls = Json::array();
    for (const auto& call : r.tool_calls) {
      Json c = Json::object();
      c["name"] = call.name;
      c["duration_ns"] = call.duration_ns;
      tool_calls.push_back(std::move(c));
    }
    record["tool_calls"] = std::move(tool_calls);
    line_ = DumpJsonLine(record);
    line_ += '\n';
    ++records_;
    return Put(line_);
  }

  absl::Status Close() override { return file_.Commit(); }

 private:
  explicit JsonlWriter(int32_t block_tokens) : block_tokens_(block_tokens) {}

  absl::Status Put(absl::string_view bytes) { return file_.Put(bytes); }

  StreamedFile file_;
  int32_t block_tokens_;
  uint64_t records_ = 0;
  std::string line_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenJsonlTraceWriter(const std::string& path,
                                                                  const TraceWriterOptions& options) {
  return JsonlWriter::Open(path, options);
}

}  // namespace kvsim
