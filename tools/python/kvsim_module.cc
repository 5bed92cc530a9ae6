// The `kvsim` Python module (pybind11): the serving replay, cache replay, miss-ratio curves and trace
// readers of the same C++ library the command line uses, so results are the command line's.
//
//   import kvsim
//   r = kvsim.replay("traces/data/mooncake_synthetic.jsonl", config="exp.textproto")
//   r["summary"]["ttftMs"]["p99"]; r["requests"]["ttft_ns"]   # numpy arrays per request column
//
// Configs: None (the default), a path to a text-proto file, a text proto string, or a dict (proto3 JSON
// field names). Errors raise ValueError carrying kvsim's message (the one `kvsim replay` prints). The GIL
// is released while a simulation runs. Built where pybind11-dev and python3-dev are installed; elsewhere
// this file builds an empty library and the Python test skips.
#ifdef KVSIM_HAS_PYTHON
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "google/protobuf/util/json_util.h"
#include "proto/config.pb.h"
#include "sim/cache/cache_simulator.h"
#include "sim/cache/mrc.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "traces/trace_io.h"
#include "traces/trace_reader.h"
#include "util/file.h"
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

py::object JsonToPython(const std::string& json) { return py::module_::import("json").attr("loads")(json); }

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

py::dict Replay(const std::string& trace, const py::object& config, const std::string& trace_format) {
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
  py::dict out;
  out["summary_json"] = OrThrow(SummaryJson(result.results));
  out["summary"] = JsonToPython(out["summary_json"].cast<std::string>())["summary"];
  out["requests"] = RequestColumns(result.results);
  out["requests_csv"] = RequestsCsv(result.results);
  return out;
}

py::list Cache(const std::string& trace, const std::vector<std::string>& policies,
               const std::vector<int64_t>& capacities_blocks, int32_t block_tokens, const std::string& trace_format) {
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
    results = [&]() -> absl::StatusOr<std::vector<CacheRunResult>> {
      TraceOptions options;
      options.format = trace_format;
      absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(trace, options);
      if (!reader.ok()) return reader.status();
      CacheReplayOptions replay;
      replay.block_tokens = block_tokens;
      return RunCacheReplays(reader->get(), specs, replay);
    }();
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
py::dict Mrc(const std::string& trace, const std::vector<int64_t>& sizes, double sample_rate, bool prefix,
             int32_t block_tokens, const std::string& trace_format) {
  absl::StatusOr<LruMrc> curve;
  {
    py::gil_scoped_release release;
    curve = [&]() -> absl::StatusOr<LruMrc> {
      TraceOptions options;
      options.format = trace_format;
      absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(trace, options);
      if (!reader.ok()) return reader.status();
      CacheReplayOptions replay;
      replay.block_tokens = block_tokens;
      MrcOptions mrc;
      mrc.sample_rate = sample_rate;
      mrc.prefix = prefix;
      return ComputeLruMrc(reader->get(), replay, mrc);
    }();
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
  return out;
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

PYBIND11_MODULE(kvsim, m) {
  m.doc() = "kvsim: trace-driven KV-cache simulator (the library behind the kvsim command line)";
  m.attr("available") = true;
  m.def("replay", &kvsim::Replay, py::arg("trace"), py::arg("config") = py::none(), py::arg("trace_format") = "",
        "Serving replay; returns {'summary': dict, 'summary_json': str, 'requests': {column: numpy array}, "
        "'requests_csv': str}.");
  m.def("cache", &kvsim::Cache, py::arg("trace"), py::arg("policies"), py::arg("capacities_blocks"),
        py::arg("block_tokens") = 16, py::arg("trace_format") = "",
        "Cache replay: one dict of statistics per (policy, capacity).");
  m.def("mrc", &kvsim::Mrc, py::arg("trace"), py::arg("sizes") = std::vector<int64_t>{}, py::arg("sample_rate") = 1.0,
        py::arg("prefix") = false, py::arg("block_tokens") = 16, py::arg("trace_format") = "",
        "LRU miss-ratio curve: {'steps': columns at every size where it changes, 'at': columns at `sizes`}.");
  m.def("read_trace", &kvsim::ReadTrace, py::arg("trace"), py::arg("trace_format") = "",
        "Every request of a trace in any importable format, as dicts.");
}
#endif  // KVSIM_HAS_PYTHON
