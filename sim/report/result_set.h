// File: sim/report/result_set.h
//
// ResultSet: one result set kvsim wrote, read back for `kvsim report` and `kvsim compare`. A path is
// recognised by what it holds:
//   replay   a folder with summary.json (sim/serving/results_writer.cc), plus requests.csv and
//            timeseries.csv where present; or a summary.json file alone
//   cache    a folder with cache.csv (`kvsim cache --out`), or such a CSV (header has `accesses`)
//   mrc      a CSV with header policy,capacity_blocks,hit_ratio,... and no `accesses` (`kvsim mrc --out`)
//   sweep    a folder with results.csv and points/ (`kvsim sweep`), or a CSV with a `point` column, or its
//            JSON array of rows
//   quality  results.json of `kvsim quality` (has "areas"), or its folder
//   eval     results.json of `kvsim eval` (has "query_window"), or its folder
//   svg      an .svg file (e.g. `kvsim costmodel validate --out=plot.svg`), included as it is
// JSON is read with nlohmann-json; integer counts are accepted as JSON numbers or as decimal strings
// (proto3 JSON writes int64 as strings).
//
// Thread-safety: value types; the loader is stateless.
#ifndef KVSIM_SIM_REPORT_RESULT_SET_H_
#define KVSIM_SIM_REPORT_RESULT_SET_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kvsim {

using Json = nlohmann::ordered_json;

// A CSV file held as text cells; header order kept (names may repeat: Column finds the first one at or
// after `from`).
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  int Column(absl::string_view name, int from = 0) const;  // -1 if absent
  // The cell as a number; NaN when the column is absent or the cell empty or not a number.
  double Number(size_t row, int column) const;
};

// Reads `path` as CSV (RFC 4180, traces/text/csv_reader.h); errors name the file and line.
absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path);

// Parses `path` as JSON; InvalidArgument naming the file and byte offset when it is not.
absl::StatusOr<Json> ReadJsonFile(const std::string& path);

// The number at `key` of `object`: a JSON number, or a string holding a decimal number (int64 counts in
// proto3 JSON); nullopt when absent, null or another type. `key` may be a dotted path ("ttft_ms.p50").
std::optional<double> JsonNumberAt(const Json& object, absl::string_view key);

enum class ResultKind { kReplay, kCache, kMrc, kSweep, kQuality, kEval, kSvg };
const char* ResultKindName(ResultKind kind);

// Per-request latencies of a replay (finished requests only), in ms.
struct RequestLatencies {
  std::vector<double> ttft_ms;
  std::vector<double> tpot_ms;  // requests with at least 2 output tokens
  std::vector<double> e2e_ms;
  std::vector<double> itl_ms;  // inter-token latencies where the results hold them (an `itl_ns` column)
};

// One point of a capacity curve: hit ratio of `policy` at `capacity_blocks`.
struct CapacityPoint {
  std::string policy;
  double capacity_blocks = 0;
  double hit_ratio = 0;
};

struct ResultSet {
  std::string label;  // the folder or file name, unless given
  std::string path;
  ResultKind kind = ResultKind::kReplay;
  Json json;                   // replay: summary.json; quality, eval: results.json
  RequestLatencies latencies;  // replay with requests.csv
  bool has_requests = false;
  CsvTable series;                      // replay: timeseries.csv (empty header when absent)
  CsvTable table;                       // sweep: its rows
  std::vector<CapacityPoint> capacity;  // cache, mrc, and the cache points of a sweep
  std::string svg;                      // svg
};

// What of a replay folder to read: everything, or summary.json alone (what `compare` needs; requests.csv
// and timeseries.csv grow with the trace, about 100 and 80 bytes per request, and are then not read).
enum class ReplayDetail { kAll, kSummaryOnly };

// Loads the result set at `path` (a folder or a file, see above). InvalidArgument naming the path when
// it is none of the kinds, or a file in it is malformed; NotFound when it does not exist.
absl::StatusOr<ResultSet> LoadResultSet(const std::string& path, ReplayDetail detail = ReplayDetail::kAll);

}  // namespace kvsim

#endif  // KVSIM_SIM_REPORT_RESULT_SET_H_
