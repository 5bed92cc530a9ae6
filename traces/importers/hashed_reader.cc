#include "traces/importers/hashed_reader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "traces/text/import_reader.h"
#include "traces/text/jsonl_source.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/mix64.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// An integer, or a string holding one.
absl::Status IntOrString(simdjson::dom::element value, absl::string_view field, int64_t* out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    if (ParseInt64(absl::string_view(text.data(), text.size()), out)) return absl::OkStatus();
  } else if (value.get_int64().get(*out) == simdjson::SUCCESS) {
    return absl::OkStatus();
  }
  return JsonFieldError(field, "an integer or a string of one", value);
}

class HashedSource final : public JsonlSource {
 public:
  HashedSource(std::unique_ptr<LineReader> lines, const TraceOptions& options)
      : JsonlSource(std::move(lines)), chain_(options.chain_hashes), block_tokens_(options.block_tokens) {}

  std::vector<std::string> warnings() const override {
    if (chain_) return {};
    return {absl::StrCat(path(),
                         ": block ids kept as content hashes (not prefix-chained); "
                         "--chain_hashes turns them into prefix ids")};
  }

 protected:
  absl::Status ParseObject(simdjson::dom::object object, Request* r) override {
    bool has_time = false, has_input = false, has_output = false, has_hashes = false;
    int64_t block_size = 0;
    for (auto [key, value] : object) {
      if (key == "timestamp") {
        KVSIM_RETURN_IF_ERROR(IntOrString(value, "timestamp", &r->arrival_ns));
        if (r->arrival_ns > kMaxAbsTimestampNs || r->arrival_ns < -kMaxAbsTimestampNs) {
          return JsonFieldError("timestamp", "epoch ns within +-2^62", value);
        }
        has_time = true;
      } else if (key == "input_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "input_length", 1, kMaxTraceTokens, &r->input_tokens));
        has_input = true;
      } else if (key == "output_length") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "output_length", 0, kMaxTraceTokens, &r->output_tokens));
        has_output = true;
      } else if (key == "block_size") {
        KVSIM_RETURN_IF_ERROR(JsonInt(value, "block_size", 1, INT32_MAX, &block_size));
        if (block_tokens_ != 0 && block_size != block_tokens_) {
          return JsonFieldError("block_size", absl::StrCat("the trace's block size ", block_tokens_), value);
        }
      } else if (key == "hash_ids") {
        simdjson::dom::array array;
        if (value.get_array().get(array) != simdjson::SUCCESS) {
          return JsonFieldError("hash_ids", "an array of ids", value);
        }
        r->block_hashes.clear();
        size_t k = 0;
        for (simdjson::dom::element id : array) {
          int64_t v;
          uint64_t u;
          if (id.get_uint64().get(u) == simdjson::SUCCESS) {
            r->block_hashes.push_back(u);
          } else {
            KVSIM_RETURN_IF_ERROR(IntOrString(id, absl::StrCat("hash_ids[", k, "]"), &v));
            r->block_hashes.push_back(static_cast<uint64_t>(v));
          }
          ++k;
        }
        has_hashes = true;
      }
    }
    if (!has_time) return JsonMissingField("timestamp", "epoch ns");
    if (!has_input) return JsonMissingField("input_length", "prompt tokens");
    if (!has_output) return JsonMissingField("output_length", "generated tokens");
    if (!has_hashes) return JsonMissingField("hash_ids", "one content hash per block");
    if (block_size != 0) block_tokens_ = static_cast<int32_t>(block_size);
    if (block_tokens_ == 0) {
      return JsonMissingField("block_size", "tokens per block (or give the block size as an option)");
    }
    const int64_t expected = NumBlocks(r->input_tokens, block_tokens_);
    if (static_cast<int64_t>(r->block_hashes.size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat("hash_ids: expected ceil(input_length / ", block_tokens_,
                                                     ") = ", expected, " ids for input_length ", r->input_tokens,
                                                     ", got ", r->block_hashes.size()));
    }
    if (chain_) {
      uint64_t previous = 0;
      for (uint64_t& h : r->block_hashes) h = previous = ChainBlockHash(previous, h);
    }
    r->block_tokens = block_tokens_;
    return absl::OkStatus();
  }

 private:
  bool chain_;
  int32_t block_tokens_;  // fixed by the first record that names it (or the option)
};

// The block size the file names on its first line, or the option's.
int32_t FirstBlockSize(const std::string& path, const TraceOptions& options) {
  if (options.block_tokens > 0) return options.block_tokens;
  auto lines = LineReader::Open(path, 1 << 16);
  if (!lines.ok()) return 0;
  absl::string_view line;
  while ((*lines)->Next(&line)) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    simdjson::dom::parser parser;
    simdjson::dom::object object;
    int64_t size = 0;
    if (parser.parse(line.data(), line.size(), false).get(object) != simdjson::SUCCESS ||
        object["block_size"].get_int64().get(size) != simdjson::SUCCESS || size <= 0 || size > INT32_MAX) {
      return 0;
    }
    return static_cast<int32_t>(size);
  }
  return 0;
}

}  // namespace

uint64_t ChainBlockHash(uint64_t previous, uint64_t content) { return Mix64(Mix64(previous) ^ content); }

absl::StatusOr<std::unique_ptr<TraceReader>> OpenHashedTrace(const std::string& path, const TraceOptions& options) {
  if (options.block_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_tokens: expected >= 0, got ", options.block_tokens));
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  TraceOptions resolved = options;
  resolved.block_tokens = FirstBlockSize(path, options);  // 0: the first record reports it missing
  return MakeImportReader(std::make_unique<HashedSource>(std::move(lines), resolved),
                          TraceInfo{path, "hashed", resolved.block_tokens}, options);
}

bool LooksLikeHashed(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  if (!absl::StartsWith(line, "{") || !HasJsonKey(line, "hash_ids")) return false;
  if (HasJsonKey(line, "block_size")) return true;
  const size_t key = line.find("\"timestamp\"");
  if (key == absl::string_view::npos) return false;
  const size_t colon = line.find(':', key);
  const size_t value = line.find_first_not_of(" \t", colon + 1);
  return colon != absl::string_view::npos && value != absl::string_view::npos && line[value] == '"';
}

KVSIM_REGISTER_TRACE_FORMAT(
    hashed, {
                .name = "hashed",
                .description = "hash-per-block JSONL: content hash per block, epoch-ns timestamps (--chain_hashes)",
                .detect_order = 18,
                .detect = LooksLikeHashed,
                .open = OpenHashedTrace,
            });

}  // namespace kvsim
