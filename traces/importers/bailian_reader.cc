#include "traces/importers/bailian_reader.h"

#include <cmath>

#include "absl/container/btree_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "traces/text/import_reader.h"
#include "traces/text/jsonl_source.h"
#include "traces/text/request_id_check.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/spilled_id_map.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {
namespace {

// The documented types map to their RequestType; any other string (newer traces may add types) is
// REQUEST_TYPE_OTHER, its name counted in `others`. A value that is not a string is an error.
absl::Status ParseType(simdjson::dom::element value, proto::RequestType* type,
                       absl::btree_map<std::string, int64_t>* others) {
  std::string_view name;
  if (value.get_string().get(name) != simdjson::SUCCESS) {
    return JsonFieldError("type", "a string such as \"text\", \"image\", \"file\" or \"search\"", value);
  }
  if (name == "text")
    *type = proto::REQUEST_TYPE_TEXT;
  else if (name == "image")
    *type = proto::REQUEST_TYPE_IMAGE;
  else if (name == "file")
    *type = proto::REQUEST_TYPE_FILE;
  else if (name == "search")
    *type = proto::REQUEST_TYPE_SEARCH;
  else {
    *type = proto::REQUEST_TYPE_OTHER;
    ++(*others)[std::string(name)];
  }
  return absl::OkStatus();
}

class BailianSource final : public JsonlSource {
 public:
  using JsonlSource::JsonlSource;

  bool has_request_ids() const override { return true; }
  std::vector<std::string> warnings() const override {
    std::vector<std::string> out;
    if (orphans_ > 0) {
      out.push_back(
          absl::StrCat(path(), ": ", orphans_, " chats name a parent_chat_id not seen earlier; each starts a session"));
    }
    if (!other_types_.empty()) {
      int64_t total = 0;
      std::vector<std::string> names;
      for (const auto& [name, count] : other_types_) {
        total += count;
        if (names.size() < 8) names.push_back(absl::StrCat("\"", name, "\" ", count));
      }
      out.push_back(absl::StrCat(path(), ": ", total, " chats have a type other than text, image, file, search (",
                                 absl::StrJoin(names, ", "), other_types_.size() > 8 ? ", ..." : "",
                                 "); kept as REQUEST_TYPE_OTHER"));
    }
    return out;
  }

 protected:
  absl::Status ParseObject(simdjson::dom::object object, Request* r) override {
    bool has_chat = false, has_parent = false, has_time = false, has_input = false, has_output = false,
         has_hashes = false;
    int64_t chat = 0, parent = 0, turn = 0;
    double seconds = 0;
    for (auto [key, value] : object) {
      if (key == "chat_id") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "chat_id", 0, INT64_MAX, &chat));
        has_chat = true;
      } else if (key == "parent_chat_id") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "parent_chat_id", -1, INT64_MAX, &parent));
        has_parent = true;
      } else if (key == "timestamp") {
        KVSIM_RETURN_IF_ERROR(JsonNumber(value, "timestamp", &seconds));
        if (!(std::fabs(seconds) < static_cast<double>(kMaxAbsTimestampNs) / 1e9)) {
          return JsonFieldError("timestamp", "seconds within +-4.6e9", value);
        }
        has_time = true;
      } else if (key == "input_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "input_length", 1, kMaxTraceTokens, &r->input_tokens));
        has_input = true;
      } else if (key == "output_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "output_length", 0, kMaxTraceTokens, &r->output_tokens));
        has_output = true;
      } else if (key == "type") {
        KVSIM_RETURN_IF_ERROR(ParseType(value, &r->type, &other_types_));
      } else if (key == "turn") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "turn", 0, INT32_MAX, &turn));
      } else if (key == "hash_ids") {
        KVSIM_RETURN_IF_ERROR(JsonIdArray(value, "hash_ids", &r->block_hashes));
        has_hashes = true;
      }
    }
    if (!has_chat) return JsonMissingField("chat_id", "an integer >= 0");
    if (!has_parent) return JsonMissingField("parent_chat_id", "a chat_id or -1");
    if (!has_time) return JsonMissingField("timestamp", "seconds");
    if (!has_input) return JsonMissingField("input_length", "prompt tokens");
    if (!has_output) return JsonMissingField("output_length", "generated tokens");
    if (!has_hashes) return JsonMissingField("hash_ids", "ids of the prompt's 16-token blocks");
    const int64_t expected = NumBlocks(r->input_tokens, kBailianBlockTokens);
    if (static_cast<int64_t>(r->block_hashes.size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat("hash_ids: expected ceil(input_length / 16) = ", expected,
                                                     " ids for input_length ", r->input_tokens, ", got ",
                                                     r->block_hashes.size()));
    }
    int64_t session = chat;
    if (parent >= 0) {
      KVSIM_ASSIGN_OR_RETURN(const bool known, session_of_.Find(static_cast<uint64_t>(parent), &session));
      if (!known) {
        session = parent;
        ++orphans_;
      }
    }
    KVSIM_RETURN_IF_ERROR(session_of_.Set(static_cast<uint64_t>(chat), session));
    ids_.Add(line_number(), static_cast<uint64_t>(chat), -1);  // a repeated chat_id: found in AtEnd
    r->request_id = static_cast<uint64_t>(chat);
    r->parent_id = parent;
    r->session_id = session;
    r->turn = static_cast<int32_t>(turn);
    r->block_tokens = kBailianBlockTokens;
    r->arrival_ns = SecondsToNs(seconds);
    return absl::OkStatus();
  }

  absl::Status AtEnd() override { return ids_.Finish(path(), "chat_id"); }

 private:
  // chat_id -> session (the first turn's chat_id), and the check that every chat_id is new: both in memory
  // that does not grow with the trace (spilled to temporary files).
  SpilledIdMap<int64_t> session_of_;
  RequestIdCheck ids_;
  int64_t orphans_ = 0;
  absl::btree_map<std::string, int64_t> other_types_;  // unknown type names and their counts
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenBailianTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  return MakeImportReader(std::make_unique<BailianSource>(std::move(lines)),
                          TraceInfo{path, "bailian", kBailianBlockTokens}, options);
}

bool LooksLikeBailian(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  return absl::StartsWith(line, "{") && HasJsonKey(line, "chat_id") && HasJsonKey(line, "parent_chat_id");
}

KVSIM_REGISTER_TRACE_FORMAT(
    bailian, {
                 .name = "bailian",
                 .description = "Qwen-Bailian JSONL: chat_id, parent_chat_id, timestamp (s), hash_ids (16-token)",
                 .detect_order = 15,
                 .detect = LooksLikeBailian,
                 .open = OpenBailianTrace,
             });

}  // namespace kvsim
