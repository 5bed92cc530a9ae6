// `kvsim decompose BASE OTHER`: the difference of two replays' mean TTFT split into the parts of
// sim/serving/ttft_decomposition.h (queueing, reload, prefill linear, prefill attention, co-batched
// compute, chunk wait), read from the results each `kvsim replay --out` wrote.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/wire_format_lite.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/results.pb.h"
#include "sim/serving/ttft_decomposition.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// A replay's results: `path` is a folder holding results.pb or the file itself. The file is streamed and
// only its ttft_breakdown (field 11 of kvsim.proto.Results) parsed: the per-request records and the time
// series (fields 3, 4, 10: about 130 bytes per request) are skipped, so memory does not grow with the
// replay's length.
absl::StatusOr<proto::TtftBreakdown> LoadBreakdown(const std::string& path) {
  const std::string file = std::filesystem::is_directory(path) ? path + "/results.pb" : path;
  KVSIM_ASSIGN_OR_RETURN(std::FILE* stream, OpenRegularFile(file));
  const absl::Status not_results =
      absl::InvalidArgumentError(absl::StrCat(file, ": not a results.pb (proto kvsim.proto.Results) as `kvsim replay --out` writes"));
  proto::Results results;  // only ttft_breakdown is set
  bool parsed = true;
  {
    google::protobuf::io::FileInputStream raw(fileno(stream));
    constexpr int kTtftBreakdownField = proto::Results::kTtftBreakdownFieldNumber;
    using google::protobuf::internal::WireFormatLite;
    while (parsed) {
      // A coded stream per top-level field: one stream stops at 2 GiB, a long replay's file does not.
      // (Its destructor hands what it read ahead back to `raw`.)
      google::protobuf::io::CodedInputStream input(&raw);
      const uint32_t tag = input.ReadTag();
      if (tag == 0) {
        parsed = input.ConsumedEntireMessage();  // the end of the file, not a zero tag
        break;
      }
      if (WireFormatLite::GetTagFieldNumber(tag) == kTtftBreakdownField &&
          WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t length = 0;
        parsed = input.ReadVarint32(&length) && length <= static_cast<uint32_t>(INT32_MAX);
        if (!parsed) break;
        const auto limit = input.PushLimit(static_cast<int>(length));
        parsed = results.mutable_ttft_breakdown()->MergeFromCodedStream(&input) && input.ConsumedEntireMessage();
        input.PopLimit(limit);
      } else {
        parsed = WireFormatLite::SkipField(&input, tag);
      }
    }
    parsed = parsed && raw.GetErrno() == 0;
  }
  std::fclose(stream);
  if (!parsed) return not_results;
  if (!results.has_ttft_breakdown()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": has no ttft_breakdown (written by an older kvsim); rerun `kvsim replay --out`"));
  }
  if (results.ttft_breakdown().requests() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": no finished request, so no mean TTFT to decompose"));
  }
  return results.ttft_breakdown();
}

struct Row {
  const char* name;
  double a, b;
  bool part;  // one of the six times that sum to the TTFT
};

std::vector<Row> Rows(const TtftParts& a, const TtftParts& b) {
  return {{"queueing_ms", a.queueing_ms, b.queueing_ms, true},
          {"reload_ms", a.reload_ms, b.reload_ms, true},
          {"prefill_linear_ms", a.prefill_linear_ms, b.prefill_linear_ms, true},
          {"prefill_attention_ms", a.prefill_attention_ms, b.prefill_attention_ms, true},
          {"co_batched_ms", a.co_batched_ms, b.co_batched_ms, true},
          {"chunk_wait_ms", a.chunk_wait_ms, b.chunk_wait_ms, true},
          {"ttft_ms", a.ttft_ms, b.ttft_ms, false},
          {"reused_tokens", a.reused_tokens, b.reused_tokens, false},
          {"recomputed_tokens", a.recomputed_tokens, b.recomputed_tokens, false}};
}

// The part's share of the TTFT difference; NaN (printed empty) for counts or when the TTFTs are equal.
double Share(const Row& row, double ttft_difference) {
  if (!row.part || ttft_difference == 0) return std::nan("");
  return (row.a - row.b) / ttft_difference;
}

std::string Csv(const std::vector<Row>& rows, double ttft_difference) {
  std::string out = "part,base,other,base_minus_other,share_of_difference\n";
  for (const Row& row : rows) {
    const double share = Share(row, ttft_difference);
    absl::StrAppendFormat(&out, "%s,%.9g,%.9g,%.9g,%s\n", row.name, row.a, row.b, row.a - row.b,
                          std::isnan(share) ? "" : absl::StrFormat("%.9g", share));
  }
  return out;
}

Json ToJson(const std::vector<Row>& rows, const TtftParts& a, const TtftParts& b, double ttft_difference) {
  Json json = Json::object();
  json["base_requests"] = a.requests;
  json["other_requests"] = b.requests;
  json["ttft_ratio"] = b.ttft_ms > 0 ? a.ttft_ms / b.ttft_ms : 0.0;
  Json parts = Json::array();
  for (const Row& row : rows) {
    Json item = Json::object();
    item["part"] = row.name;
    item["base"] = row.a;
    item["other"] = row.b;
    item["base_minus_other"] = row.a - row.b;
    const double share = Share(row, ttft_difference);
    if (!std::isnan(share)) item["share_of_difference"] = share;
    parts.push_back(std::move(item));
  }
  json["parts"] = std::move(parts);
  return json;
}

absl::Status RunDecompose(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 2) {
    return absl::InvalidArgumentError("expected BASE OTHER (each a `kvsim replay --out` folder or its results.pb)");
  }
  KVSIM_ASSIGN_OR_RETURN(proto::TtftBreakdown base, LoadBreakdown(args[0]));
  KVSIM_ASSIGN_OR_RETURN(proto::TtftBreakdown other, LoadBreakdown(args[1]));
  const TtftParts a = FromProto(base);
  const TtftParts b = FromProto(other);
  const double difference = a.ttft_ms - b.ttft_ms;
  const std::vector<Row> rows = Rows(a, b);
  const Json json = ToJson(rows, a, b, difference);
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  if (!out_dir.empty()) {
    KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
    KVSIM_RETURN_IF_ERROR(WriteFilesAtomically(
        {{out_dir + "/decomposition.csv", Csv(rows, difference)}, {out_dir + "/decomposition.json", DumpJson(json)}}));
  }
  if (absl::GetFlag(FLAGS_json)) {
    out << DumpJson(json);
    return absl::OkStatus();
  }
  out << absl::StrFormat("mean TTFT: base %.3f ms (%d requests), other %.3f ms (%d requests), base/other %.3fx\n",
                         a.ttft_ms, a.requests, b.ttft_ms, b.requests, b.ttft_ms > 0 ? a.ttft_ms / b.ttft_ms : 0.0);
  out << absl::StrFormat("%-22s %12s %12s %12s %8s\n", "mean per request", "base", "other", "base-other", "share");
  for (const Row& row : rows) {
    const double share = Share(row, difference);
    out << absl::StrFormat("%-22s %12.3f %12.3f %12.3f %8s\n", row.name, row.a, row.b, row.a - row.b,
                           std::isnan(share) ? "" : absl::StrFormat("%.1f%%", 100 * share));
  }
  if (!out_dir.empty()) out << "  written to " << out_dir << "/decomposition.{csv,json}\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    decompose,
    {
        .name = "decompose",
        .summary = "split the mean-TTFT difference of two replays into queueing, reload, prefill, chunking",
        .usage = "kvsim decompose BASE OTHER [--out=DIR] [--json]",
        .details = "BASE and OTHER are `kvsim replay --out` folders (or their results.pb). Prints each run's mean\n"
                   "TTFT split into queueing, reload, prefill_linear, prefill_attention (grows with the position of\n"
                   "recomputed tokens), co_batched and chunk_wait (sim/serving/ttft_decomposition.h), the\n"
                   "difference base - other of each part, which sum to the difference of the mean TTFTs, and each\n"
                   "part's share of it; also mean reused and recomputed prompt tokens per request. --out=DIR writes\n"
                   "DIR/decomposition.csv and DIR/decomposition.json.",
        .flags = {"out", "json"},
        .run = RunDecompose,
    });

}  // namespace kvsim
