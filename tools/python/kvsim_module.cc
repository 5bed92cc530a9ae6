// The `kvsim` Python module (pybind11): the serving replay, cache replay, miss-ratio curves, sweeps,
// quality runs and trace readers of the same C++ library the command line uses, so results are the
// command line's.
//
//   import kvsim
//   r = kvsim.replay("traces/data/mooncake_synthetic.jsonl", config="exp.textproto")
//   r.summary["ttft_ms"]["p99"]; r.requests["ttft_ns"]   # numpy arrays per request column
//
// Results are dicts whose keys read as attributes too (kvsim.Result). Tables the command line writes as
// CSV (requests, time series, sweep results, quality summaries) come back as {column: numpy array}, read
// from the very CSV text the command line writes (also returned, as `*_csv`), so values are the file's:
// int64 where every cell is an integer, float64 where every cell is a number (an empty cell is NaN),
// else an object array of strings.
//
// Configs: None (the default), a path to a text-proto file, a text proto string, or a dict (proto3 JSON
// field names). Errors raise ValueError carrying kvsim's message (the one `kvsim replay` prints). The GIL
// is released while a simulation runs. Built where pybind11-dev and python3-dev are installed; elsewhere
// this file builds an empty library and the Python test skips.
#ifdef KVSIM_HAS_PYTHON
#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "google/protobuf/util/json_util.h"
#include "proto/config.pb.h"
#include "sim/cache/cache_batches.h"
#include "sim/cache/cache_simulator.h"
#include "sim/cache/mrc.h"
#include "sim/quality/quality_evaluator.h"
#include "sim/quality/quality_report.h"
#include "sim/quality/quality_run.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "sim/sweep/sweep.h"
#include "traces/trace_io.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/table.h"
#include "util/text_proto.h"

namespace py = pybind11;

namespace kvsim {
namespace {

template <typename T>
T OrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) throw py::value_error(std::string(value.status().message()));
  return *std::move(value);
}

void OrThrow(const absl::Status& status) {
  if (!status.ok()) throw py::value_error(std::string(status.message()));
}

absl::StatusOr<proto::ExperimentConfig> ConfigFrom(const py::object& config) {
  if (config.is_none()) return LoadExperimentConfig("");
  if (py::isinstance<py::dict>(config)) {
    const std::string json = py::module_::import("json").attr("dumps")(config).cast<std::string>();
    proto::ExperimentConfig parsed;
    const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("config dict: ", status.ToString()));
    return ResolveExperimentConfig(parsed, "config dict");
  }
  const std::string text = config.cast<std::string>();
  if (ReadFile(text).ok()) return LoadExperimentConfig(text);
  proto::ExperimentConfig parsed;
  absl::Status status = ParseTextProto(text, "config text", &parsed);
  if (!status.ok()) return status;
  return ResolveExperimentConfig(parsed, "config text");
}

// The config as written, unresolved (what `kvsim sweep` applies its grid points to): None = empty.
absl::StatusOr<proto::ExperimentConfig> ConfigAsWritten(const py::object& config) {
  proto::ExperimentConfig parsed;
  if (config.is_none()) return parsed;
  if (py::isinstance<py::dict>(config)) {
    const std::string json = py::module_::import("json").attr("dumps")(config).cast<std::string>();
    const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("config dict: ", status.ToString()));
    return parsed;
  }
  const std::string text = config.cast<std::string>();
  if (ReadFile(text).ok()) {
    absl::Status status = ParseTextProtoFile(text, &parsed);
    if (!status.ok()) return status;
    return parsed;
  }
  absl::Status status = ParseTextProto(text, "config text", &parsed);
  if (!status.ok()) return status;
  return parsed;
}

py::object JsonToPython(const std::string& json) { return py::module_::import("json").attr("loads")(json); }

// {column: numpy array} of CSV text (kvsim._columns, defined in Python below).
py::object CsvColumns(const std::string& csv) { return py::module_::import("kvsim").attr("_columns")(csv); }

py::object NewResult() { return py::module_::import("kvsim").attr("Result")(); }

// A list argument given as a Python list/tuple or as the command line's comma-separated text.
std::string CommaList(const py::object& value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  std::string text;
  for (const py::handle item : value) {
    if (!text.empty()) text += ",";
    text += py::str(item).cast<std::string>();
  }
  return text;
}

// Every scalar numeric or bool field of RequestResult as one numpy array over the requests.
py::dict RequestColumns(const proto::Results& results) {
  py::dict columns;
  const google::protobuf::Descriptor* d = proto::RequestResult::descriptor();
  const google::protobuf::Reflection* r = proto::RequestResult::GetReflection();
  const int n = results.requests_size();
  for (int f = 0; f < d->field_count(); ++f) {
    const google::protobuf::FieldDescriptor* field = d->field(f);
    if (field->is_repeated()) continue;
    using FD = google::protobuf::FieldDescriptor;
    switch (field->cpp_type()) {
      case FD::CPPTYPE_INT32:
      case FD::CPPTYPE_INT64: {
        py::array_t<int64_t> a(n);
        auto m = a.mutable_unchecked<1>();
        for (int i = 0; i < n; ++i) {
          m(i) = field->cpp_type() == FD::CPPTYPE_INT32 ? r->GetInt32(results.requests(i), field)
                                                        : r->GetInt64(results.requests(i), field);
        }
        columns[py::str(field->name())] = a;
        break;
      }
      case FD::CPPTYPE_UINT32:
      case FD::CPPTYPE_UINT64: {
        py::array_t<uint64_t> a(n);
        auto m = a.mutable_unchecked<1>();
        for (int i = 0; i < n; ++i) {
          m(i) = field->cpp_type() == FD::CPPTYPE_UINT32 ? r->GetUInt32(results.requests(i), field)
                                                         : r->GetUInt64(results.requests(i), field);
        }
        columns[py::str(field->name())] = a;
        break;
      }
      case FD::CPPTYPE_DOUBLE: {
        py::array_t<double> a(n);
        auto m = a.mutable_unchecked<1>();
        for (int i = 0; i < n; ++i) m(i) = r->GetDouble(results.requests(i), field);
        columns[py::str(field->name())] = a;
        break;
      }
      case FD::CPPTYPE_BOOL: {
        py::array_t<bool> a(n);
        auto m = a.mutable_unchecked<1>();
        for (int i = 0; i < n; ++i) m(i) = r->GetBool(results.requests(i), field);
        columns[py::str(field->name())] = a;
        break;
      }
      default:
        break;
    }
  }
  return columns;
}

py::object Replay(const std::string& trace, const py::object& config, const std::string& trace_format) {
  proto::ExperimentConfig resolved = OrThrow(ConfigFrom(config));
  absl::StatusOr<ReplayOutput> output;
  {
    py::gil_scoped_release release;
    output = [&]() -> absl::StatusOr<ReplayOutput> {
      TraceOptions options;
      options.format = !trace_format.empty() ? trace_format : resolved.workload().trace_format();
      const std::string path = !trace.empty() ? trace : resolved.workload().trace_path();
      absl::StatusOr<std::unique_ptr<CostModel>> cost = CreateCostModel(resolved);
      if (!cost.ok()) return cost.status();
      absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(path, options);
      if (!reader.ok()) return reader.status();
      ReplayOptions replay_options;
      replay_options.timeline = false;
      return RunReplay(resolved, **cost, reader->get(), replay_options);
    }();
  }
  const ReplayOutput result = OrThrow(std::move(output));
  py::object out = NewResult();
  const std::string summary_json = OrThrow(SummaryJson(result.results));
  out["summary_json"] = summary_json;
  out["summary"] = JsonToPython(summary_json)["summary"];
  out["requests"] = RequestColumns(result.results);
  out["requests_csv"] = RequestsCsv(result.results);
  const std::string timeseries_csv = TimeSeriesCsv(result.results);
  out["timeseries"] = CsvColumns(timeseries_csv);
  out["timeseries_csv"] = timeseries_csv;
  return out;
}

// Cache replays of every (policy, capacity), in passes within `memory_limit` bytes (0 = half the physical
// memory) as `kvsim cache --memory_limit` runs them (RunCacheReplaysInBatches).
py::list Cache(const std::string& trace, const std::vector<std::string>& policies,
               const std::vector<int64_t>& capacities_blocks, int32_t block_tokens, const std::string& trace_format,
               int64_t memory_limit) {
  if (memory_limit < 0) {
    throw py::value_error(absl::StrCat("memory_limit: expected bytes >= 0 (0 = half the physical memory), got ",
                                       memory_limit));
  }
  std::vector<CacheRunSpec> specs;
  for (const std::string& policy : policies) {
    for (int64_t capacity : capacities_blocks) {
      CacheRunSpec spec;
      spec.policy.set_name(policy);
      spec.capacity_blocks = capacity;
      specs.push_back(spec);
    }
  }
  absl::StatusOr<std::vector<CacheRunResult>> results;
  {
    py::gil_scoped_release release;
    TraceOptions options;
    options.format = trace_format;
    const TraceReopener open = [&]() { return OpenTrace(trace, options); };
    CacheReplayOptions replay;
    replay.block_tokens = block_tokens;
    results = RunCacheReplaysInBatches(open, specs, replay, {.memory_limit_bytes = memory_limit});
  }
  py::list out;
  for (const CacheRunResult& r : OrThrow(std::move(results))) {
    py::dict row;
    row["policy"] = r.policy_label;
    row["capacity_blocks"] = r.spec.capacity_blocks;
    row["accesses"] = r.stats.accesses;
    row["hits"] = r.stats.hits;
    row["prefix_hits"] = r.stats.prefix_hits;
    row["evictions"] = r.stats.evictions;
    row["hit_ratio"] = r.stats.HitRatio();
    row["token_hit_ratio"] = r.stats.TokenHitRatio();
    out.append(row);
  }
  return out;
}

// LRU's miss-ratio curve in one pass: numpy arrays over the step points, plus the ratios at `sizes`.
// Within `memory_limit` bytes (0 = DefaultMemoryLimitBytes(), half the physical memory), through
// ComputeLruMrcWithinLimit as `kvsim mrc --memory_limit` runs it: with `sample_rate` None the curve is exact
// where it fits and sampled at a chosen rate where it does not; a given rate is refused when it does not fit.
py::dict Mrc(const std::string& trace, const std::vector<int64_t>& sizes, std::optional<double> sample_rate,
             bool prefix, int32_t block_tokens, const std::string& trace_format, int64_t memory_limit,
             double hot_share) {
  if (memory_limit < 0) {
    throw py::value_error(absl::StrCat("memory_limit: expected bytes >= 0 (0 = half the physical memory), got ",
                                       memory_limit));
  }
  if (!(hot_share >= 0 && hot_share < 1)) {
    throw py::value_error(absl::StrCat("hot_share: must be in [0, 1), got ", hot_share));
  }
  absl::StatusOr<LruMrc> curve;
  MrcMemoryPlan plan;
  {
    py::gil_scoped_release release;
    TraceOptions options;
    options.format = trace_format;
    const TraceReopener open = [&]() { return OpenTrace(trace, options); };
    CacheReplayOptions replay;
    replay.block_tokens = block_tokens;
    MrcOptions mrc;
    mrc.sample_rate = sample_rate.value_or(1.0);
    mrc.prefix = prefix;
    mrc.hot_share = hot_share;
    curve = ComputeLruMrcWithinLimit(open, replay, mrc, /*choose_rate=*/!sample_rate.has_value(), memory_limit,
                                     &plan);
  }
  const LruMrc lru = OrThrow(std::move(curve));
  auto columns = [](const std::vector<MrcPoint>& points) {
    const size_t n = points.size();
    py::array_t<int64_t> capacity(n);
    py::array_t<double> hit(n), token_hit(n), prefix_hit(n);
    for (size_t i = 0; i < n; ++i) {
      capacity.mutable_at(i) = points[i].capacity_blocks;
      hit.mutable_at(i) = points[i].hit_ratio;
      token_hit.mutable_at(i) = points[i].token_hit_ratio;
      prefix_hit.mutable_at(i) = points[i].prefix_hit_ratio;
    }
    py::dict d;
    d["capacity_blocks"] = capacity;
    d["hit_ratio"] = hit;
    d["token_hit_ratio"] = token_hit;
    d["prefix_hit_ratio"] = prefix_hit;
    return d;
  };
  std::vector<MrcPoint> at;
  for (int64_t size : sizes) {
    if (size < 0) throw py::value_error(absl::StrCat("sizes: expected >= 0 blocks, got ", size));
    at.push_back(lru.At(size));
  }
  py::dict out;
  out["steps"] = columns(lru.StepPoints());
  out["at"] = columns(at);
  out["sampled_accesses"] = lru.sampled_accesses();
  out["sample_rate"] = lru.sample_rate();
  out["memory_plan"] = DescribeMrcMemoryPlan(plan);
  return out;
}

// `kvsim sweep --grid=GRID --mode=MODE [--out=OUT]` (one shard): the merged results table. Without `out`,
// the points go to a temporary directory, removed afterwards; with it, a rerun resumes as the command's does.
py::object Sweep(const std::string& trace, const std::string& grid, const py::object& config, const std::string& mode,
                 const std::string& out, int threads, const std::string& trace_format, int64_t memory_limit) {
  const std::vector<GridAxis> axes = OrThrow(ParseGrid(grid));
  const proto::ExperimentConfig base = OrThrow(ConfigAsWritten(config));
  if (threads < 0 || threads > 1024) throw py::value_error(absl::StrCat("threads=", threads, ": must be in [0, 1024]"));
  if (memory_limit < 0) {
    throw py::value_error(absl::StrCat("memory_limit: expected bytes >= 0 (0 = half the physical memory), got ",
                                       memory_limit));
  }
  SweepOptions options;
  options.memory_limit_bytes = memory_limit;
  options.out_dir = out;
  if (out.empty()) {
    const char* tmp = getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/kvsim-sweep-XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error(absl::StrCat(dir, ": cannot create a directory"));
    options.out_dir = dir;
  }
  options.trace_path = !trace.empty() ? trace : base.workload().trace_path();
  options.trace_format = !trace_format.empty() ? trace_format : base.workload().trace_format();
  options.default_mode = mode;
  options.num_threads = threads;
  absl::StatusOr<SweepSummary> summary;
  absl::StatusOr<Table> table;
  {
    py::gil_scoped_release release;
    summary = RunSweep(axes, base, options);
    if (summary.ok()) table = MergeSweep({options.out_dir}, options.out_dir);
  }
  if (out.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(options.out_dir, ignored);
  }
  const SweepSummary done = OrThrow(std::move(summary));
  const Table results = OrThrow(std::move(table));
  py::object r = NewResult();
  const std::string csv = results.ToCsv();
  r["results"] = CsvColumns(csv);
  r["results_csv"] = csv;
  r["results_json"] = results.ToJson();
  r["points"] = NumGridPoints(axes);
  r["points_run"] = done.points_run;
  r["points_skipped"] = done.points_skipped;
  return r;
}

// `kvsim quality`: policies and budgets as lists or the command line's comma-separated text.
py::object Quality(const std::string& trace, const py::object& policies, const py::object& budgets, int top_k,
                   int64_t max_samples, int64_t attention_mib, int threads, uint64_t seed) {
  if (trace.empty()) throw py::value_error("--trace=FILE (an attention trace, .kvat) is required");
  QualityOptions options;
  options.policies = OrThrow(ParseQualityPolicies(CommaList(policies)));
  OrThrow(ParseQualityBudgets(CommaList(budgets), &options));
  options.top_k = top_k;
  options.seed = seed;
  OrThrow(SetQualityAttentionMib(attention_mib, &options));
  if (threads < 0 || threads > 1024) throw py::value_error(absl::StrCat("threads=", threads, ": must be in [0, 1024]"));
  options.num_threads = threads;
  absl::StatusOr<QualityResults> evaluated;
  {
    py::gil_scoped_release release;
    evaluated = EvaluateQualityTrace(trace, options, max_samples);
  }
  const QualityResults results = OrThrow(std::move(evaluated));
  py::object r = NewResult();
  const std::string json = QualityJson(results);
  r["json"] = json;
  r["results"] = JsonToPython(json);
  const std::pair<const char*, std::string> tables[] = {{"summary", QualitySummaryCsv(results)},
                                                        {"per_layer", QualityLayerCsv(results)},
                                                        {"per_head", QualityHeadCsv(results)},
                                                        {"areas", QualityAreaCsv(results)}};
  for (const auto& [name, csv] : tables) {
    r[py::str(name)] = CsvColumns(csv);
    r[py::str(absl::StrCat(name, "_csv"))] = csv;
  }
  r["table"] = FormatQualityTable(results);
  return r;
}

// Every request of a trace in any format, as a list of dicts.
py::list ReadTrace(const std::string& trace, const std::string& trace_format) {
  TraceOptions options;
  options.format = trace_format;
  std::unique_ptr<TraceReader> reader = OrThrow(OpenTrace(trace, options));
  py::list out;
  Request r;
  while (reader->Next(&r)) {
    py::dict d;
    d["request_id"] = r.request_id;
    d["arrival_ns"] = r.arrival_ns;
    d["session_id"] = r.session_id;
    d["input_tokens"] = r.input_tokens;
    d["output_tokens"] = r.output_tokens;
    d["block_tokens"] = r.block_tokens;
    d["block_hashes"] = r.block_hashes;
    out.append(d);
  }
  OrThrow(reader->status());
  return out;
}

}  // namespace
}  // namespace kvsim

// Python half of the module: the result type and CSV text -> numpy columns.
constexpr char kPythonHelpers[] = R"py(
import csv as _csv
import io as _io

import numpy as _numpy


class Result(dict):
    """A result: a dict whose keys also read as attributes (r.requests is r["requests"])."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return sorted(set(dir(dict)) | set(self.keys()))


def _column(cells):
    try:
        return _numpy.array([int(c) for c in cells], dtype=_numpy.int64)
    except (ValueError, OverflowError):
        pass
    try:
        return _numpy.array([float(c) if c != "" else float("nan") for c in cells], dtype=_numpy.float64)
    except ValueError:
        return _numpy.array(cells, dtype=object)


def _columns(text):
    """{column: numpy array} of CSV text with a header row."""
    rows = list(_csv.reader(_io.StringIO(text)))
    if not rows:
        return {}
    return {name: _column([row[j] for row in rows[1:]]) for j, name in enumerate(rows[0])}
)py";

PYBIND11_MODULE(kvsim, m) {
  m.doc() = "kvsim: trace-driven KV-cache simulator (the library behind the kvsim command line)";
  m.attr("available") = true;
  py::exec(kPythonHelpers, m.attr("__dict__"));
  m.def("replay", &kvsim::Replay, py::arg("trace"), py::arg("config") = py::none(), py::arg("trace_format") = "",
        "Serving replay; returns {'summary': dict, 'summary_json': str, 'requests': {column: numpy array}, "
        "'requests_csv': str, 'timeseries': {column: numpy array}, 'timeseries_csv': str}.");
  m.def("cache", &kvsim::Cache, py::arg("trace"), py::arg("policies"), py::arg("capacities_blocks"),
        py::arg("block_tokens") = 16, py::arg("trace_format") = "", py::arg("memory_limit") = 0,
        "Cache replay: one dict of statistics per (policy, capacity), in passes within `memory_limit` bytes "
        "(0 = half the physical memory) as `kvsim cache --memory_limit`.");
  m.def("mrc", &kvsim::Mrc, py::arg("trace"), py::arg("sizes") = std::vector<int64_t>{},
        py::arg("sample_rate") = py::none(), py::arg("prefix") = false, py::arg("block_tokens") = 16,
        py::arg("trace_format") = "", py::arg("memory_limit") = 0, py::arg("hot_share") = kvsim::kDefaultMrcHotShare,
        "LRU miss-ratio curve: {'steps': columns at every size where it changes, 'at': columns at `sizes`, "
        "'sample_rate', 'memory_plan'}, within `memory_limit` bytes (0 = half the physical memory) as "
        "`kvsim mrc --memory_limit`: sample_rate None = exact where it fits, else a chosen rate.");
  m.def("sweep", &kvsim::Sweep, py::arg("trace"), py::arg("grid"), py::arg("config") = py::none(),
        py::arg("mode") = "cache", py::arg("out") = "", py::arg("threads") = 0, py::arg("trace_format") = "",
        py::arg("memory_limit") = 0,
        "kvsim sweep over one shard: {'results': {column: numpy array}, 'results_csv', 'results_json', "
        "'points', 'points_run', 'points_skipped'}; `out` keeps the points (a rerun resumes); cache points in "
        "passes within `memory_limit` bytes (0 = half the physical memory), as `kvsim sweep --memory_limit`.");
  m.def("quality", &kvsim::Quality, py::arg("trace"), py::arg("policies"), py::arg("budgets"), py::arg("top_k") = 32,
        py::arg("max_samples") = 0, py::arg("attention_mib") = 1024, py::arg("threads") = 0, py::arg("seed") = 0,
        "kvsim quality: {'results': the JSON as dicts, 'summary'/'per_layer'/'per_head'/'areas': {column: numpy "
        "array}, each also as '*_csv', 'json', 'table'}.");
  m.def("read_trace", &kvsim::ReadTrace, py::arg("trace"), py::arg("trace_format") = "",
        "Every request of a trace in any importable format, as dicts.");
}
#endif  // KVSIM_HAS_PYTHON
