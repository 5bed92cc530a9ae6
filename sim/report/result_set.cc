#include "sim/report/result_set.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "traces/text/csv_reader.h"
#include "util/file.h"
#include "util/sorted_spill.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

bool IsDir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

double ParseNumber(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  double v;
  if (text.empty() || !absl::SimpleAtod(text, &v)) return std::nan("");
  return v;
}

// The CDF points of the values in `spill` (see LatencyCdf).
absl::StatusOr<LatencyCdf> CdfOf(SortedSpill* spill) {
  LatencyCdf cdf;
  const int64_t n = spill->size();
  cdf.count = n;
  if (n == 0) return cdf;
  const int64_t k = std::min<int64_t>(n, kMaxCdfPoints);
  const auto rank = [&](int64_t i) {
    return k == 1 ? n - 1 : static_cast<int64_t>(std::llround(static_cast<double>(i) * (n - 1) / (k - 1)));
  };
  int64_t next = 0, position = 0;
  KVSIM_RETURN_IF_ERROR(spill->Visit([&](double v) {
    for (; next < k && rank(next) == position; ++next) {
      cdf.x.push_back(v);
      cdf.y.push_back(static_cast<double>(position + 1) / static_cast<double>(n));
    }
    ++position;
  }));
  return cdf;
}

// Reads the finished requests' latencies from requests.csv, streaming (it can hold millions of rows):
// each metric's values go through a SortedSpill into its CDF points.
absl::Status ReadRequests(const std::string& path, RequestLatencies* out) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  const int finished = csv->Column("finished"), ttft = csv->Column("ttft_ns"), tpot = csv->Column("tpot_ns"),
            e2e = csv->Column("e2e_ns"), output = csv->Column("output_tokens"), itl = csv->Column("itl_ns");
  for (const auto& [name, column] :
       {std::make_pair("finished", finished), std::make_pair("ttft_ns", ttft), std::make_pair("e2e_ns", e2e)}) {
    if (column < 0) return absl::InvalidArgumentError(absl::StrCat(path, ":1: expected a column ", name));
  }
  std::vector<absl::string_view> f;
  auto number = [&](int column, double* v) -> absl::Status {
    *v = ParseNumber(f[column]);
    if (std::isnan(*v) && !absl::StripAsciiWhitespace(f[column]).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", csv->line_number(), ": ", csv->header()[column],
                                                     ": expected a number, got '", f[column], "'"));
    }
    return absl::OkStatus();
  };
  SortedSpill ttft_ms, tpot_ms, e2e_ms, itl_ms;
  while (csv->Next(&f)) {
    double done, v;
    KVSIM_RETURN_IF_ERROR(number(finished, &done));
    if (done != 1) continue;
    KVSIM_RETURN_IF_ERROR(number(ttft, &v));
    if (!std::isnan(v)) ttft_ms.Add(v / 1e6);
    KVSIM_RETURN_IF_ERROR(number(e2e, &v));
    if (!std::isnan(v)) e2e_ms.Add(v / 1e6);
    if (tpot >= 0) {
      double tokens = 2;
      if (output >= 0) KVSIM_RETURN_IF_ERROR(number(output, &tokens));
      KVSIM_RETURN_IF_ERROR(number(tpot, &v));
      if (!std::isnan(v) && tokens >= 2) tpot_ms.Add(v / 1e6);
    }
    if (itl >= 0) {
      KVSIM_RETURN_IF_ERROR(number(itl, &v));
      if (!std::isnan(v)) itl_ms.Add(v / 1e6);
    }
  }
  KVSIM_RETURN_IF_ERROR(csv->status());
  KVSIM_ASSIGN_OR_RETURN(out->ttft, CdfOf(&ttft_ms));
  KVSIM_ASSIGN_OR_RETURN(out->tpot, CdfOf(&tpot_ms));
  KVSIM_ASSIGN_OR_RETURN(out->e2e, CdfOf(&e2e_ms));
  KVSIM_ASSIGN_OR_RETURN(out->itl, CdfOf(&itl_ms));
  return absl::OkStatus();
}

// Reads timeseries.csv into its sums over replicas (see ReplicaSums): a first pass counts the intervals
// with samples (so every k-th can be kept, k = count / 1500), a second sums them. Rows must come in time
// order (as replay writes them); a decrease is refused with its line.
absl::Status ReadSeries(const std::string& path, const Json& summary, ReplicaSums* out) {
  const double capacity = JsonNumberAt(summary, "summary.gpu_capacity_blocks").value_or(std::nan(""));
  const double replicas = JsonNumberAt(summary, "run.num_replicas").value_or(1);
  double interval_ns = JsonNumberAt(summary, "run.timeseries_interval_ns").value_or(1e8);
  if (!(interval_ns > 0)) interval_ns = 1e8;
  // Calls visit(interval, replica, values) for each row with a time, in file order.
  using Values = std::array<double, 3>;  // gpu_blocks_used, queued_requests, batch_size
  const auto pass = [&](const std::function<void(int64_t, double, const Values&)>& visit) -> absl::Status {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
    const int time = csv->Column("time_ns"), replica = csv->Column("replica"), used = csv->Column("gpu_blocks_used"),
              queued = csv->Column("queued_requests"), batch = csv->Column("batch_size");
    if (time < 0) return absl::OkStatus();
    const auto cell = [](const std::vector<absl::string_view>& f, int column) {
      return column >= 0 && column < static_cast<int>(f.size()) ? ParseNumber(f[column]) : std::nan("");
    };
    std::vector<absl::string_view> f;
    double last_ns = -std::numeric_limits<double>::infinity();
    while (csv->Next(&f)) {
      const double ns = cell(f, time);
      if (std::isnan(ns)) continue;
      if (ns < last_ns) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", csv->line_number(), ": time_ns ", f[time],
                                                       " before the previous row's; expected rows in time order"));
      }
      last_ns = ns;
      visit(static_cast<int64_t>(std::floor(ns / interval_ns)), replica >= 0 ? cell(f, replica) : 0,
            Values{cell(f, used), cell(f, queued), cell(f, batch)});
    }
    return csv->status();
  };
  int64_t intervals = 0;
  bool any = false;
  int64_t current = 0;
  KVSIM_RETURN_IF_ERROR(pass([&](int64_t interval, double, const Values&) {
    if (!any || interval != current) ++intervals;
    any = true;
    current = interval;
  }));
  if (intervals == 0) return absl::OkStatus();
  const int64_t stride = std::max<int64_t>(1, intervals / 1500);
  std::map<double, Values> last, in_interval;  // replica -> last values; this interval's samples
  int64_t i = 0;
  const auto close_interval = [&](int64_t interval) {
    for (const auto& [r, v] : in_interval) last[r] = v;  // a replica with no sample (idle) keeps its last
    in_interval.clear();
    if (i++ % stride != 0) return;
    Values sum = {0, 0, 0};
    for (const auto& [r, v] : last) {
      for (int k = 0; k < 3; ++k) sum[k] += v[k];
    }
    out->time_s.push_back(static_cast<double>(interval) * interval_ns / 1e9);
    out->occupancy.push_back(capacity > 0 ? sum[0] / (capacity * std::max(1.0, replicas)) : std::nan(""));
    out->queued.push_back(sum[1]);
    out->batch.push_back(sum[2]);
  };
  any = false;
  KVSIM_RETURN_IF_ERROR(pass([&](int64_t interval, double replica, const Values& v) {
    if (any && interval != current) close_interval(current);
    any = true;
    current = interval;
    in_interval[replica] = v;
  }));
  close_interval(current);
  return absl::OkStatus();
}

// The capacity curve of a cache.csv or an mrc CSV.
absl::Status CapacityFromTable(const CsvTable& t, std::vector<CapacityPoint>* out) {
  const int policy = t.Column("policy"), capacity = t.Column("capacity_blocks"), hit = t.Column("hit_ratio");
  if (policy < 0 || capacity < 0 || hit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(t.path, ":1: expected columns policy, capacity_blocks and hit_ratio"));
  }
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double c = t.Number(r, capacity), h = t.Number(r, hit);
    if (std::isnan(c) || std::isnan(h)) {
      return absl::InvalidArgumentError(
          absl::StrCat(t.path, ": row ", r + 2, ": capacity_blocks and hit_ratio must be numbers"));
    }
    out->push_back({t.rows[r][policy], c, h});
  }
  return absl::OkStatus();
}

// The first column named `name` after the grid coordinates of a sweep table (its metrics).
int SweepMetricColumn(const CsvTable& t, absl::string_view name) {
  const int point = t.Column("point");
  return t.Column(name, point < 0 ? 0 : point + 1);
}

// A sweep's cache points as a capacity curve, where its grid has policy and capacity_blocks.
void CapacityFromSweep(const CsvTable& t, std::vector<CapacityPoint>* out) {
  const int mode = SweepMetricColumn(t, "mode"), policy = SweepMetricColumn(t, "policy"),
            capacity = SweepMetricColumn(t, "capacity_blocks"), hit = SweepMetricColumn(t, "hit_ratio");
  if (policy < 0 || capacity < 0 || hit < 0) return;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (mode >= 0 && t.rows[r][mode] != "cache") continue;
    const double c = t.Number(r, capacity), h = t.Number(r, hit);
    if (!std::isnan(c) && !std::isnan(h)) out->push_back({t.rows[r][policy], c, h});
  }
}

// A JSON array of flat objects (a sweep's results.json) as a table, keys in their written order.
absl::StatusOr<CsvTable> TableFromJsonRows(const Json& rows, const std::string& path) {
  CsvTable t;
  t.path = path;
  if (!rows.is_array() || rows.empty() || !rows[0].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON array of row objects"));
  }
  for (const auto& [key, value] : rows[0].items()) t.header.push_back(key);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": row ", r, ": expected an object"));
    }
    std::vector<std::string> cells;
    for (const std::string& key : t.header) {
      const auto it = rows[r].find(key);
      if (it == rows[r].end() || it->is_null()) {
        cells.push_back("");
      } else if (it->is_string()) {
        cells.push_back(it->get<std::string>());
      } else {
        cells.push_back(it->dump());
      }
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
}

absl::StatusOr<ResultSet> LoadReplayFolder(const std::string& dir, ReplayDetail detail, ResultSet set) {
  set.kind = ResultKind::kReplay;
  KVSIM_ASSIGN_OR_RETURN(set.json, ReadJsonFile(dir + "/summary.json"));
  if (!set.json.is_object() || !set.json.contains("summary")) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/summary.json: expected an object with \"summary\""));
  }
  if (detail == ReplayDetail::kSummaryOnly) return set;
  if (IsFile(dir + "/requests.csv")) {
    KVSIM_RETURN_IF_ERROR(ReadRequests(dir + "/requests.csv", &set.latencies));
    set.has_requests = true;
  }
  if (IsFile(dir + "/timeseries.csv")) {
    KVSIM_RETURN_IF_ERROR(ReadSeries(dir + "/timeseries.csv", set.json, &set.series));
  }
  return set;
}

absl::StatusOr<ResultSet> LoadCsvFile(const std::string& path, ResultSet set) {
  KVSIM_ASSIGN_OR_RETURN(CsvTable t, ReadCsvTable(path));
  if (t.Column("point") >= 0) {
    set.kind = ResultKind::kSweep;
    CapacityFromSweep(t, &set.capacity);
    set.table = std::move(t);
    return set;
  }
  if (t.Column("policy") >= 0 && t.Column("capacity_blocks") >= 0 && t.Column("hit_ratio") >= 0) {
    set.kind = t.Column("accesses") >= 0 ? ResultKind::kCache : ResultKind::kMrc;
    KVSIM_RETURN_IF_ERROR(CapacityFromTable(t, &set.capacity));
    set.table = std::move(t);
    return set;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ":1: not a kvsim result CSV (expected a sweep's `point` column or policy,capacity_blocks,hit_ratio)"));
}

absl::StatusOr<ResultSet> LoadJsonFile(const std::string& path, ResultSet set) {
  KVSIM_ASSIGN_OR_RETURN(set.json, ReadJsonFile(path));
  const Json& j = set.json;
  if (j.is_object() && j.contains("summary")) {
    set.kind = ResultKind::kReplay;
    return set;
  }
  if (j.is_object() && j.contains("areas") && j.contains("points")) {
    set.kind = ResultKind::kQuality;
    return set;
  }
  if (j.is_object() && j.contains("query_window") && j.contains("points")) {
    set.kind = ResultKind::kEval;
    return set;
  }
  if (j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("point")) {
    set.kind = ResultKind::kSweep;
    KVSIM_ASSIGN_OR_RETURN(set.table, TableFromJsonRows(j, path));
    CapacityFromSweep(set.table, &set.capacity);
    return set;
  }
  if (j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("accesses")) {
    set.kind = ResultKind::kCache;
    KVSIM_ASSIGN_OR_RETURN(CsvTable t, TableFromJsonRows(j, path));
    KVSIM_RETURN_IF_ERROR(CapacityFromTable(t, &set.capacity));
    set.table = std::move(t);
    return set;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": not a kvsim result JSON (expected a replay summary, quality or eval results, or sweep rows)"));
}

}  // namespace

int CsvTable::Column(absl::string_view name, int from) const {
  for (int i = std::max(0, from); i < static_cast<int>(header.size()); ++i) {
    if (header[i] == name) return i;
  }
  return -1;
}

double CsvTable::Number(size_t row, int column) const {
  if (column < 0 || row >= rows.size() || column >= static_cast<int>(rows[row].size())) return std::nan("");
  return ParseNumber(rows[row][column]);
}

absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path) {
  // Sweep tables written before the grid coordinates were prefixed axis.NAME repeat names such as policy
  // (a grid coordinate and a metric); SweepMetricColumn tells them apart by position.
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv,
                         CsvReader::Open(path, size_t{1} << 20, CsvReader::RepeatedColumns::kAllow));
  CsvTable t;
  t.path = path;
  t.header = csv->header();
  std::vector<absl::string_view> fields;
  while (csv->Next(&fields)) t.rows.emplace_back(fields.begin(), fields.end());
  KVSIM_RETURN_IF_ERROR(csv->status());
  return t;
}

absl::StatusOr<Json> ReadJsonFile(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  // Parse errors come back through the callback-free, exception-free interface: a discarded value.
  Json j = Json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  }
  return j;
}

std::optional<double> JsonNumberAt(const Json& object, absl::string_view key) {
  const Json* node = &object;
  for (absl::string_view part : absl::StrSplit(key, '.')) {
    if (!node->is_object()) return std::nullopt;
    const auto it = node->find(std::string(part));
    if (it == node->end()) return std::nullopt;
    node = &*it;
  }
  if (node->is_number()) return node->get<double>();
  if (node->is_string()) {
    const double v = ParseNumber(node->get_ref<const std::string&>());
    if (!std::isnan(v)) return v;
  }
  return std::nullopt;
}

const char* ResultKindName(ResultKind kind) {
  switch (kind) {
    case ResultKind::kReplay:
      return "replay";
    case ResultKind::kCache:
      return "cache";
    case ResultKind::kMrc:
      return "mrc";
    case ResultKind::kSweep:
      return "sweep";
    case ResultKind::kQuality:
      return "quality";
    case ResultKind::kEval:
      return "eval";
    case ResultKind::kSvg:
      return "svg";
  }
  return "?";
}

absl::StatusOr<ResultSet> LoadResultSet(const std::string& path, ReplayDetail detail) {
  ResultSet set;
  set.path = path;
  set.label = BaseName(path);
  if (IsDir(path)) {
    if (IsFile(path + "/summary.json")) return LoadReplayFolder(path, detail, std::move(set));
    if (IsFile(path + "/cache.csv")) return LoadCsvFile(path + "/cache.csv", std::move(set));
    if (IsFile(path + "/results.csv") && IsDir(path + "/points")) {
      return LoadCsvFile(path + "/results.csv", std::move(set));
    }
    if (IsFile(path + "/results.json")) return LoadJsonFile(path + "/results.json", std::move(set));
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": not a kvsim result folder (expected summary.json, cache.csv, results.csv with points/, or "
                     "results.json)"));
  }
  if (!IsFile(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
  if (absl::EndsWith(path, ".svg")) {
    set.kind = ResultKind::kSvg;
    KVSIM_ASSIGN_OR_RETURN(set.svg, ReadFile(path));
    const size_t start = set.svg.find("<svg");
    if (start == std::string::npos) return absl::InvalidArgumentError(absl::StrCat(path, ": no <svg> element"));
    set.svg = set.svg.substr(start);  // drop the XML declaration: the SVG goes inline into HTML
    return set;
  }
  if (absl::EndsWith(path, ".csv")) return LoadCsvFile(path, std::move(set));
  if (absl::EndsWith(path, ".json")) return LoadJsonFile(path, std::move(set));
  return absl::InvalidArgumentError(absl::StrCat(path, ": expected a result folder or a .csv, .json or .svg file"));
}

}  // namespace kvsim
