#include "traces/importers/mooncake_reader.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "traces/text/import_reader.h"
#include "traces/text/jsonl_source.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

class MooncakeSource final : public JsonlSource {
 public:
  using JsonlSource::JsonlSource;

 protected:
  absl::Status ParseObject(simdjson::dom::object object, Request* request) override {
    bool has_timestamp = false, has_input = false, has_output = false, has_hashes = false;
    int64_t timestamp_ms = 0;
    for (auto [key, value] : object) {
      if (key == "timestamp") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "timestamp", -kMaxAbsTimestampNs / 1'000'000,
                                      kMaxAbsTimestampNs / 1'000'000, &timestamp_ms));
        has_timestamp = true;
      } else if (key == "input_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "input_length", 1, kMaxTraceTokens, &request->input_tokens));
        has_input = true;
      } else if (key == "output_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "output_length", 0, kMaxTraceTokens, &request->output_tokens));
        has_output = true;
      } else if (key == "hash_ids") {
        KVSIM_RETURN_IF_ERROR(JsonIdArray(value, "hash_ids", &request->block_hashes));
        has_hashes = true;
      }
    }
    if (!has_timestamp) return JsonMissingField("timestamp", "integer ms since the trace start");
    if (!has_input) return JsonMissingField("input_length", "prompt tokens");
    if (!has_output) return JsonMissingField("output_length", "generated tokens");
    if (!has_hashes) return JsonMissingField("hash_ids", "ids of the prompt's 512-token blocks");
    const int64_t expected = NumBlocks(request->input_tokens, kMooncakeBlockTokens);
    if (static_cast<int64_t>(request->block_hashes.size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat("hash_ids: expected ceil(input_length / 512) = ", expected,
                                                     " ids for input_length ", request->input_tokens, ", got ",
                                                     request->block_hashes.size()));
    }
    request->block_tokens = kMooncakeBlockTokens;
    request->arrival_ns = timestamp_ms * 1'000'000;
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenMooncakeTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  return MakeImportReader(std::make_unique<MooncakeSource>(std::move(lines)),
                          TraceInfo{path, "mooncake", kMooncakeBlockTokens}, options);
}

bool LooksLikeMooncake(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  return absl::StartsWith(line, "{") && HasJsonKey(line, "timestamp") && HasJsonKey(line, "input_length") &&
         HasJsonKey(line, "output_length") && HasJsonKey(line, "hash_ids") && !HasJsonKey(line, "chat_id");
}

KVSIM_REGISTER_TRACE_FORMAT(
    mooncake, {
                  .name = "mooncake",
                  .description = "Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids (512-token)",
                  .detect_order = 20,
                  .detect = LooksLikeMooncake,
                  .open = OpenMooncakeTrace,
              });

}  // namespace kvsim
