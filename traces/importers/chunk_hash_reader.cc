#include "traces/importers/chunk_hash_reader.h"

#include <cmath>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "traces/importers/hashed_reader.h"
#include "traces/text/import_reader.h"
#include "traces/text/jsonl_source.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// An integer timestamp, or a string holding one.
absl::Status Timestamp(simdjson::dom::element value, int64_t* out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    if (ParseInt64(absl::string_view(text.data(), text.size()), out)) return absl::OkStatus();
  } else if (value.get_int64().get(*out) == simdjson::SUCCESS) {
    return absl::OkStatus();
  }
  return JsonFieldError("timestamp", "an integer or a string of one", value);
}

// Ids as integers (signed ids keep their bit pattern) or strings of decimal integers.
absl::Status Ids(simdjson::dom::element value, std::vector<uint64_t>* out) {
  simdjson::dom::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    return JsonFieldError("hash_ids", "an array of ids", value);
  }
  out->clear();
  size_t k = 0;
  for (simdjson::dom::element id : array) {
    uint64_t u;
    int64_t v;
    std::string_view text;
    if (id.get_uint64().get(u) == simdjson::SUCCESS) {
      out->push_back(u);
    } else if (id.get_int64().get(v) == simdjson::SUCCESS) {
      out->push_back(static_cast<uint64_t>(v));
    } else if (id.get_string().get(text) == simdjson::SUCCESS &&
               absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &u)) {
      out->push_back(u);
    } else if (id.get_string().get(text) == simdjson::SUCCESS &&
               absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &v)) {
      out->push_back(static_cast<uint64_t>(v));
    } else {
      return JsonFieldError(absl::StrCat("hash_ids[", k, "]"), "an integer id or a string of one", id);
    }
    ++k;
  }
  return absl::OkStatus();
}

// The fields of one record before chaining, as the opener's scan and the source both need them.
struct RawRecord {
  int64_t timestamp = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::vector<uint64_t> ids;
};

absl::Status ParseRecord(simdjson::dom::object object, RawRecord* r) {
  bool has_time = false, has_input = false, has_output = false, has_hashes = false;
  for (auto [key, value] : object) {
    if (key == "timestamp") {
      KVSIM_RETURN_IF_ERROR(Timestamp(value, &r->timestamp));
      has_time = true;
    } else if (key == "input_length") {
      KVSIM_RETURN_IF_ERROR(JsonInt(value, "input_length", 1, kMaxTraceTokens, &r->input_tokens));
      has_input = true;
    } else if (key == "output_length") {
      KVSIM_RETURN_IF_ERROR(JsonInt(value, "output_length", 0, kMaxTraceTokens, &r->output_tokens));
      has_output = true;
    } else if (key == "hash_ids") {
      KVSIM_RETURN_IF_ERROR(Ids(value, &r->ids));
      has_hashes = true;
    }
  }
  if (!has_time) return JsonMissingField("timestamp", "an integer or a string of one");
  if (!has_input) return JsonMissingField("input_length", "prompt tokens, >= 1");
  if (!has_output) return JsonMissingField("output_length", "generated tokens");
  if (!has_hashes) return JsonMissingField("hash_ids", "one content hash per chunk");
  const int64_t n = static_cast<int64_t>(r->ids.size());
  if (n == 0 || n > r->input_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("hash_ids: expected 1 .. input_length (", r->input_tokens,
                                                   ") ids, each covering at least one token, got ", n));
  }
  return absl::OkStatus();
}

class ChunkHashSource final : public JsonlSource {
 public:
  ChunkHashSource(std::unique_ptr<LineReader> lines, bool chain, int64_t unit_ns)
      : JsonlSource(std::move(lines)), chain_(chain), unit_ns_(unit_ns) {}

  std::vector<std::string> warnings() const override {
    if (chain_) return {};
    return {absl::StrCat(path(),
                         ": chunk ids kept as content hashes (not prefix-chained): prefix reuse may match "
                         "different prefixes; --chain_hashes (the default) turns them into prefix ids")};
  }

 protected:
  absl::Status ParseObject(simdjson::dom::object object, Request* r) override {
    raw_.ids.swap(r->block_hashes);  // reuse the request's capacity
    absl::Status status = ParseRecord(object, &raw_);
    raw_.ids.swap(r->block_hashes);
    KVSIM_RETURN_IF_ERROR(status);
    const int64_t limit = kMaxAbsTimestampNs / unit_ns_;
    if (raw_.timestamp > limit || raw_.timestamp < -limit) {
      return absl::InvalidArgumentError(absl::StrCat("timestamp: expected at most ", limit, " in magnitude (units of ",
                                                     unit_ns_, " ns), got ", raw_.timestamp));
    }
    r->arrival_ns = raw_.timestamp * unit_ns_;
    r->input_tokens = raw_.input_tokens;
    r->output_tokens = raw_.output_tokens;
    SplitChunkTokens(r->input_tokens, static_cast<int64_t>(r->block_hashes.size()), &r->block_token_counts);
    if (chain_) {
      uint64_t previous = 0;
      for (uint64_t& h : r->block_hashes) h = previous = ChainBlockHash(previous, h);
    }
    r->block_tokens = nominal_block_tokens_;
    return absl::OkStatus();
  }

 public:
  void set_nominal_block_tokens(int32_t tokens) { nominal_block_tokens_ = tokens; }

 private:
  bool chain_;
  int64_t unit_ns_;
  int32_t nominal_block_tokens_ = 1;
  RawRecord raw_;
};

// What the opener learns from the first records: the first timestamp and the mean tokens per id.
struct Scan {
  bool have_first = false;
  int64_t first_timestamp = 0;
  int64_t tokens = 0;
  int64_t ids = 0;
};

Scan ScanHead(const std::string& path) {
  Scan scan;
  auto lines = LineReader::Open(path, 1 << 20);
  if (!lines.ok()) return scan;
  simdjson::dom::parser parser;
  absl::string_view line;
  RawRecord record;
  int records = 0;
  while (records < kChunkHashScanRecords && (*lines)->Next(&line)) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    simdjson::dom::object object;
    // A bad line ends the scan; the source reports it with its line number.
    if (parser.parse(line.data(), line.size(), true).get(object) != simdjson::SUCCESS) break;
    if (!ParseRecord(object, &record).ok()) break;
    if (!scan.have_first) {
      scan.have_first = true;
      scan.first_timestamp = record.timestamp;
    }
    scan.tokens += record.input_tokens;
    scan.ids += static_cast<int64_t>(record.ids.size());
    ++records;
  }
  return scan;
}

// The value text after "key": on `line`, or empty.
absl::string_view JsonValueAfter(absl::string_view line, absl::string_view key) {
  const size_t at = line.find(absl::StrCat("\"", key, "\""));
  if (at == absl::string_view::npos) return {};
  const size_t colon = line.find(':', at);
  if (colon == absl::string_view::npos) return {};
  return absl::StripLeadingAsciiWhitespace(line.substr(colon + 1));
}

}  // namespace

void SplitChunkTokens(int64_t input_tokens, int64_t num_ids, std::vector<int32_t>* counts) {
  const int64_t each = input_tokens / num_ids;
  counts->assign(num_ids, static_cast<int32_t>(each));
  counts->back() = static_cast<int32_t>(input_tokens - (num_ids - 1) * each);
}

int64_t DetectTimestampUnitNs(int64_t t) {
  const double magnitude = std::fabs(static_cast<double>(t));
  if (magnitude >= 1e17) return 1;
  if (magnitude >= 1e14) return 1'000;
  if (magnitude >= 1e11) return 1'000'000;
  if (magnitude >= 1e8) return 1'000'000'000;
  return 1'000'000;  // relative times: ms, as Mooncake's
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenChunkHashTrace(const std::string& path, const TraceOptions& options) {
  if (options.block_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_tokens: expected >= 0, got ", options.block_tokens));
  }
  if (options.timestamp_unit_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("timestamp_unit_ns: expected >= 0, got ", options.timestamp_unit_ns));
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  const Scan scan = ScanHead(path);
  int64_t unit_ns = options.timestamp_unit_ns;
  if (unit_ns == 0) unit_ns = scan.have_first ? DetectTimestampUnitNs(scan.first_timestamp) : 1;
  int32_t nominal = options.block_tokens;
  if (nominal == 0) {
    nominal = scan.ids > 0 ? static_cast<int32_t>(std::max<int64_t>(
                                 1, std::llround(static_cast<double>(scan.tokens) / static_cast<double>(scan.ids))))
                           : 1;
  }
  const bool chain = options.chain_hashes_given ? options.chain_hashes : true;
  auto source = std::make_unique<ChunkHashSource>(std::move(lines), chain, unit_ns);
  source->set_nominal_block_tokens(nominal);
  return MakeImportReader(std::move(source), TraceInfo{path, "chunk_hash", nominal}, options);
}

bool LooksLikeChunkHash(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  if (!absl::StartsWith(line, "{") || !HasJsonKey(line, "timestamp") || !HasJsonKey(line, "input_length") ||
      !HasJsonKey(line, "output_length") || !HasJsonKey(line, "hash_ids") || HasJsonKey(line, "block_size") ||
      HasJsonKey(line, "chat_id")) {
    return false;
  }
  if (absl::StartsWith(JsonValueAfter(line, "timestamp"), "\"")) return true;
  // Integer timestamps: a chunk trace unless the id count fits Mooncake's 512-token blocks.
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  int64_t input = 0;
  simdjson::dom::array ids;
  if (parser.parse(line.data(), line.size(), true).get(object) != simdjson::SUCCESS ||
      object["input_length"].get_int64().get(input) != simdjson::SUCCESS ||
      object["hash_ids"].get_array().get(ids) != simdjson::SUCCESS || input < 0) {
    return false;  // a cut or malformed first line: leave it to the other formats' errors
  }
  return static_cast<int64_t>(ids.size()) != NumBlocks(input, 512);
}

KVSIM_REGISTER_TRACE_FORMAT(
    chunk_hash, {
                    .name = "chunk_hash",
                    .description = "hash-per-chunk JSONL (LMBench trace replayer): content hash per variable-size "
                                   "chunk, string or integer timestamps (chained by default)",
                    .detect_order = 17,
                    .detect = LooksLikeChunkHash,
                    .open = OpenChunkHashTrace,
                });

}  // namespace kvsim
