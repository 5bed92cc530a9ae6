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

// Points of an empirical CDF drawn per curve.
inline constexpr int kMaxCdfPoints = 400;

// The empirical CDF of a latency over a replay's finished requests, in ms: `count` values; at most
// kMaxCdfPoints points, x ascending (the values of ranks round(i * (count - 1) / (points - 1))), y the
// fraction of values at or below the rank. Computed as requests.csv is read, through a SortedSpill, so a
// long replay's values are not held.
struct LatencyCdf {
  int64_t count = 0;
  std::vector<double> x, y;
};

// Per-request latencies of a replay (finished requests only).
struct RequestLatencies {
  LatencyCdf ttft;
  LatencyCdf tpot;  // requests with at least 2 output tokens
  LatencyCdf e2e;
  LatencyCdf itl;  // inter-token latencies where the results hold them (an `itl_ns` column)
};

// A replay's time series summed over replicas: replicas sample at their own iteration times; each
// replica's last sample in every interval of run.timeseries_interval_ns (100 ms when absent) counts for
// that interval and, while the replica is idle (no samples), for the following ones; the interval's value
// is the sum over replicas. At most about 1,500 intervals are kept (every k-th of the intervals with
// samples). Read from timeseries.csv in two streaming passes (its rows in time order, as replay writes
// them).
struct ReplicaSums {
  std::vector<double> time_s, occupancy, queued, batch;
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
  ReplicaSums series;                   // replay: from timeseries.csv (empty when absent)
  CsvTable table;                       // sweep: its rows
  std::vector<CapacityPoint> capacity;  // cache, mrc, and the cache points of a sweep
  std::string svg;                      // svg
};

// What of a replay folder to read: everything, or summary.json alone (what `compare` needs: requests.csv
// and timeseries.csv are then not read). Either way memory does not grow with the replay's length.
enum class ReplayDetail { kAll, kSummaryOnly };

// Loads the result set at `path` (a folder or a file, see above). InvalidArgument naming the path when
// it is none of the kinds, or a file in it is malformed; NotFound when it does not exist.
absl::StatusOr<ResultSet> LoadResultSet(const std::string& path, ReplayDetail detail = ReplayDetail::kAll);

}  // namespace kvsim

#endif  // KVSIM_SIM_REPORT_RESULT_SET_H_
