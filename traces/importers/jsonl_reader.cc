#include "traces/importers/jsonl_reader.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "traces/jsonl_export.h"
#include "traces/request.h"
#include "traces/text/import_reader.h"
#include "traces/text/jsonl_source.h"
#include "traces/text/request_id_check.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status JsonString(simdjson::dom::element value, absl::string_view field, std::string* out) {
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return JsonFieldError(field, "a string", value);
  out->assign(text.data(), text.size());
  return absl::OkStatus();
}

absl::Status JsonUint64(simdjson::dom::element value, absl::string_view field, uint64_t* out) {
  if (value.get_uint64().get(*out) != simdjson::SUCCESS) {
    return JsonFieldError(field, "an unsigned 64-bit integer", value);
  }
  return absl::OkStatus();
}

class KvsimJsonlSource final : public JsonlSource {
 public:
  KvsimJsonlSource(std::unique_ptr<LineReader> lines, int32_t block_tokens)
      : JsonlSource(std::move(lines)), block_tokens_(block_tokens) {
    SkipHeaderLine();  // OpenJsonlTrace has read it
  }

  bool has_request_ids() const override { return true; }
  bool times_are_relative() const override { return true; }
  std::vector<std::string> warnings() const override {  // known once the file has ended
    if (ids_.orphans() == 0) return {};
    return {absl::StrCat(path(), ": ", ids_.orphans(), " requests name a parent_id not seen earlier in the trace")};
  }

 protected:
  absl::Status ParseObject(simdjson::dom::object object, Request* r) override {
    constexpr int64_t kMax = INT64_MAX;
    bool has_id = false, has_arrival = false, has_input = false, has_output = false;
    int64_t v;
    for (auto [key, value] : object) {
      if (key == "request_id") {
        KVSIM_RETURN_IF_ERROR(JsonUint64(value, "request_id", &r->request_id));
        has_id = true;
      } else if (key == "arrival_ns") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "arrival_ns", 0, kMax, &r->arrival_ns));  // since the trace start
        has_arrival = true;
      } else if (key == "session_id") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "session_id", -1, kMax, &r->session_id));
      } else if (key == "parent_id") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "parent_id", -1, kMax, &r->parent_id));
      } else if (key == "turn") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "turn", INT32_MIN, INT32_MAX, &v));
        r->turn = static_cast<int32_t>(v);
      } else if (key == "input_tokens") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "input_tokens", 1, kMaxRequestTokens, &r->input_tokens));
        has_input = true;
      } else if (key == "output_tokens") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "output_tokens", 0, kMaxRequestTokens, &r->output_tokens));
        has_output = true;
      } else if (key == "block_tokens") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "block_tokens", 0, INT32_MAX, &v));
        if (v != 0 && v != block_tokens_) {
          return JsonFieldError("block_tokens", absl::StrCat("0 or the header's ", block_tokens_), value);
        }
        r->block_tokens = static_cast<int32_t>(v);
      } else if (key == "block_hashes") {
        simdjson::dom::array array;
        if (value.get_array().get(array) != simdjson::SUCCESS) {
          return JsonFieldError("block_hashes", "an array of unsigned 64-bit ids", value);
        }
        r->block_hashes.clear();
        for (simdjson::dom::element id : array) {
          uint64_t h;
          KVSIM_RETURN_IF_ERROR(JsonUint64(id, "block_hashes[]", &h));
          r->block_hashes.push_back(h);
        }
      } else if (key == "block_token_counts") {
        simdjson::dom::array array;
        if (value.get_array().get(array) != simdjson::SUCCESS) {
          return JsonFieldError("block_token_counts", "an array of token counts", value);
        }
        r->block_token_counts.clear();
        for (simdjson::dom::element count : array) {
          KVSIM_RETURN_IF_ERROR(JsonInt(count, "block_token_counts[]", 1, INT32_MAX, &v));
          r->block_token_counts.push_back(static_cast<int32_t>(v));
        }
      } else if (key == "type") {
        std::string name;
        KVSIM_RETURN_IF_ERROR(JsonString(value, "type", &name));
        if (!proto::RequestType_Parse(name, &r->type)) {
          return JsonFieldError("type", "a RequestType name such as \"REQUEST_TYPE_TEXT\"", value);
        }
      } else if (key == "failed") {
        if (value.get_bool().get(r->failed) != simdjson::SUCCESS) {
          return JsonFieldError("failed", "true or false", value);
        }
      } else if (key == "model") {
        KVSIM_RETURN_IF_ERROR(JsonString(value, "model", &r->model));
      } else if (key == "tool_calls") {
        KVSIM_RETURN_IF_ERROR(ParseToolCalls(value, r));
      }
    }
    if (!has_id) return JsonMissingField("request_id", "an unsigned 64-bit integer");
    if (!has_arrival) return JsonMissingField("arrival_ns", "ns since the trace start");
    if (!has_input) return JsonMissingField("input_tokens", "prompt tokens");
    if (!has_output) return JsonMissingField("output_tokens", "generated tokens");
    if (r->block_tokens == 0 && !r->block_hashes.empty()) {
      return absl::InvalidArgumentError("block_hashes: given with block_tokens 0");
    }
    ids_.Add(line_number(), r->request_id, r->parent_id);  // repeats and orphans: found in AtEnd
    if (!r->block_token_counts.empty()) {  // variable blocks: one count per id, summing to the prompt
      KVSIM_RETURN_IF_ERROR(CheckBlockTokenCounts(*r));
    } else if (!r->block_hashes.empty()) {  // one id per block of the prompt, the last one partial
      const int64_t expected = NumBlocks(r->input_tokens, r->block_tokens);
      if (static_cast<int64_t>(r->block_hashes.size()) != expected) {
        return absl::InvalidArgumentError(absl::StrCat("block_hashes: ", r->block_hashes.size(), " ids for ",
                                                       r->input_tokens, " input tokens; expected ", expected,
                                                       " (blocks of ", r->block_tokens, " tokens)"));
      }
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status ParseToolCalls(simdjson::dom::element value, Request* r) {
    simdjson::dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) {
      return JsonFieldError("tool_calls", "an array of {\"name\", \"duration_ns\"} objects", value);
    }
    size_t index = 0;
    for (simdjson::dom::element call : array) {
      simdjson::dom::object object;
      if (call.get_object().get(object) != simdjson::SUCCESS) {
        return JsonFieldError("tool_calls[]", "an object", call);
      }
      KVSIM_RETURN_IF_ERROR(JsonUniqueKeys(object, absl::StrCat("tool_calls[", index++, "]: ")));
      ToolCall& out = r->tool_calls.emplace_back();
      for (auto [key, field] : object) {
        if (key == "name") {
          KVSIM_RETURN_IF_ERROR(JsonString(field, "tool_calls[].name", &out.name));
        } else if (key == "duration_ns") {
          KVSIM_RETURN_IF_ERROR(JsonInt(field, "tool_calls[].duration_ns", 0, INT64_MAX, &out.duration_ns));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status AtEnd() override { return ids_.Finish(path()); }

  int32_t block_tokens_;
  RequestIdCheck ids_;  // every request id must be new; counts parents not seen before their child
};

// Reads the header line: {"kvsim_trace": 1, "source_format": ..., "block_tokens": N}.
absl::StatusOr<int32_t> ReadHeader(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  absl::string_view line;
  do {
    if (!lines->Next(&line)) {
      KVSIM_RETURN_IF_ERROR(lines->status());
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":1: expected the header line {\"kvsim_trace\": 1, ...}, found an empty file"));
    }
  } while (absl::StripAsciiWhitespace(line).empty());
  const std::string where = absl::StrCat(path, ":", lines->line_number(), ": ");
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(line.data(), line.size(), false).get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(where, "expected the header object {\"kvsim_trace\": 1, ...}"));
  }
  if (absl::Status unique = JsonUniqueKeys(object); !unique.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, unique.message()));
  }
  int64_t version = 0, block_tokens = 0;
  simdjson::dom::element value;
  if (object["kvsim_trace"].get(value) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(where, "kvsim_trace: missing (expected the header line first)"));
  }
  absl::Status status = JsonInt(value, "kvsim_trace", kJsonlTraceVersion, kJsonlTraceVersion, &version);
  if (status.ok() && object["block_tokens"].get(value) == simdjson::SUCCESS) {
    status = JsonInt(value, "block_tokens", 0, INT32_MAX, &block_tokens);
  }
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
  return static_cast<int32_t>(block_tokens);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenJsonlTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(int32_t block_tokens, ReadHeader(path));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  auto source = std::make_unique<KvsimJsonlSource>(std::move(lines), block_tokens);
  return MakeImportReader(std::move(source), TraceInfo{path, "jsonl", block_tokens}, options);
}

bool LooksLikeKvsimJsonl(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  return absl::StartsWith(line, "{") && HasJsonKey(line, "kvsim_trace");
}

KVSIM_REGISTER_TRACE_FORMAT(
    jsonl, {
               .name = "jsonl",
               .description = "kvsim JSONL export: a {\"kvsim_trace\": 1} header line, then every Request field",
               .detect_order = 10,
               .detect = LooksLikeKvsimJsonl,
               .open = OpenJsonlTrace,
           });

}  // namespace kvsim
