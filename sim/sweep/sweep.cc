#include "sim/sweep/sweep.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/experiment_config.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_batches.h"
#include "sim/cache/cache_report.h"
#include "traces/trace_reader.h"
#include "util/digest.h"
#include "util/file.h"
#include "util/parallel.h"
#include "util/status_macros.h"
#include "util/text_proto.h"
#include "util/version.h"

// Data and invariants:
// - Points are numbered in mixed radix, the last axis fastest; GridPoint decodes an index in O(axes), so
//   no list of points is ever built. ExpandRange refuses over a million values and steps without overflow.
// - The cache mode groups its points by what determines the replayed trace (path, format, block_tokens,
//   max_requests) and runs each group through RunCacheReplaysInBatches, the memory-bounded passes of
//   `kvsim cache`: the same results as one point at a time (every point an independent simulator).
// Order in RunSweep: every point of the shard is applied, its mode looked up and any existing point file
// read and matched (index, coordinates, mode) before the points/ directory is made or a point runs, so a
// bad grid leaves nothing behind. The remaining points then run mode by mode, each mode's runner choosing
// how (SweepModeBatch), each point's file written atomically as soon as the mode reports it done (an
// interrupted shard keeps them). Errors are reported after all
// points finish, the first by point index; the shard table is built from a map ordered by index, so it
// is the same for any thread count or order of completion.
// MergeSweep reads each directory's point files in sorted order; a point found twice must be
// byte-identical.
// Why it is fast:
// - Cache points of a trace share its passes: the trace is read and hashed once per pass, not per point,
//   and the points of a pass replay each chunk of requests in parallel.
// - Finished points are read back, not rerun, so a rerun costs only the points still missing.

namespace kvsim {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

absl::Status ValueError(absl::string_view axis, absl::string_view value, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat("grid axis '", axis, "': value '", value, "': expected ", expected));
}

// Sets the scalar field at dotted `path` of `message` from `value`.
absl::Status SetField(Message* message, absl::string_view path, absl::string_view value) {
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("grid axis '", path, "': no field '", parts[i], "' in ", message->GetDescriptor()->full_name()));
    }
    if (field->is_repeated()) {
      return absl::InvalidArgumentError(absl::StrCat("grid axis '", path, "': '", parts[i], "' is repeated"));
    }
    const Reflection* reflection = message->GetReflection();
    const bool last = i + 1 == parts.size();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (last) {
        return absl::InvalidArgumentError(
            absl::StrCat("grid axis '", path, "': '", parts[i], "' is a message, not a scalar field"));
      }
      message = reflection->MutableMessage(message, field);
      continue;
    }
    if (!last) {
      return absl::InvalidArgumentError(absl::StrCat("grid axis '", path, "': '", parts[i], "' is a scalar"));
    }
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v;
        if (!absl::SimpleAtoi(value, &v)) return ValueError(path, value, "a 32-bit integer");
        reflection->SetInt32(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v;
        if (!absl::SimpleAtoi(value, &v)) return ValueError(path, value, "an integer");
        reflection->SetInt64(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v;
        if (!absl::SimpleAtoi(value, &v)) return ValueError(path, value, "an unsigned integer");
        reflection->SetUInt32(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v;
        if (!absl::SimpleAtoi(value, &v)) return ValueError(path, value, "an unsigned integer");
        reflection->SetUInt64(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v;
        if (!absl::SimpleAtod(value, &v)) return ValueError(path, value, "a number");
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
          reflection->SetDouble(message, field, v);
        } else {
          reflection->SetFloat(message, field, static_cast<float>(v));
        }
        break;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool v;
        if (!absl::SimpleAtob(value, &v)) return ValueError(path, value, "true or false");
        reflection->SetBool(message, field, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(message, field, std::string(value));
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* e = field->enum_type()->FindValueByName(std::string(value));
        int number;
        if (e == nullptr && absl::SimpleAtoi(value, &number)) e = field->enum_type()->FindValueByNumber(number);
        if (e == nullptr) return ValueError(path, value, absl::StrCat("a value of ", field->enum_type()->name()));
        reflection->SetEnum(message, field, e);
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat("grid axis '", path, "': unsupported field type"));
    }
  }
  return absl::OkStatus();
}

absl::Status ExpandRange(absl::string_view item, std::vector<std::string>* out) {
  std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
  int64_t lo, hi, step;
  const bool geometric = parts.size() == 3 && !parts[2].empty() && parts[2][0] == 'x';
  const bool arithmetic = parts.size() == 3 && !parts[2].empty() && parts[2][0] == '+';
  if (!(geometric || arithmetic) || !absl::SimpleAtoi(parts[0], &lo) || !absl::SimpleAtoi(parts[1], &hi) ||
      !absl::SimpleAtoi(parts[2].substr(1), &step)) {
    return absl::InvalidArgumentError(
        absl::StrCat("range '", item, "': expected LO:HI:xFACTOR or LO:HI:+STEP (integers)"));
  }
  if (lo > hi || (geometric && (step < 2 || lo <= 0)) || (arithmetic && step < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("range '", item, "': expected LO <= HI, a factor >= 2 with LO > 0, or a step >= 1"));
  }
  for (int64_t v = lo; v <= hi;) {
    out->push_back(absl::StrCat(v));
    if (out->size() > 1000000) return absl::InvalidArgumentError(absl::StrCat("range '", item, "': too many values"));
    if (geometric ? v > hi / step : v > hi - step) break;
    v = geometric ? v * step : v + step;
  }
  return absl::OkStatus();
}

// `status` of point `index`, its message prefixed "point INDEX: ".
absl::Status PointError(int64_t index, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("point ", index, ": ", status.message()));
}

// The cache replay of one point: its spec and replay options, or InvalidArgument for a point that cannot run.
absl::Status CachePointSpec(const proto::ExperimentConfig& config, CacheRunSpec* spec, CacheReplayOptions* options) {
  spec->policy = config.eviction();
  spec->capacity_blocks = config.cache().gpu_capacity_blocks();
  if (spec->capacity_blocks <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache mode needs a capacity of at least 1 block (a capacity_blocks axis or cache.gpu_capacity_blocks ",
        "in the config), got ", spec->capacity_blocks));
  }
  if (config.cache().block_tokens() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_tokens must be >= 0 (0 = 16), got ", config.cache().block_tokens()));
  }
  // The policy is built here too, so a bad parameter fails its own point, not the pass it would join.
  KVSIM_RETURN_IF_ERROR(CreateEvictionPolicyFromConfig(spec->policy).status());
  options->block_tokens = config.cache().block_tokens() > 0 ? config.cache().block_tokens() : 16;
  options->max_requests = config.workload().max_requests();
  return absl::OkStatus();
}

// The cache mode: the points that replay the same trace (trace, format, block_tokens, max_requests) run
// as one `kvsim cache` run of their specs, in passes within the memory limit.
void RunCachePoints(const SweepModeBatch& batch) {
  std::map<std::tuple<std::string, std::string, int32_t, int64_t>, std::vector<size_t>> groups;
  std::vector<CacheRunSpec> specs(batch.points.size());
  std::vector<CacheReplayOptions> options(batch.points.size());
  for (size_t i = 0; i < batch.points.size(); ++i) {
    const SweepPointContext& point = *batch.points[i];
    const absl::Status status = CachePointSpec(point.config, &specs[i], &options[i]);
    if (!status.ok()) {
      batch.done(i, PointError(batch.results[i]->point_index(), status));
      continue;
    }
    groups[std::make_tuple(point.trace_path, point.trace_format, options[i].block_tokens, options[i].max_requests)]
        .push_back(i);
  }
  for (const auto& [key, members] : groups) {
    const SweepPointContext& first = *batch.points[members[0]];
    CacheReplayOptions replay = options[members[0]];
    replay.num_threads = batch.num_threads;
    std::vector<CacheRunSpec> group_specs;
    for (size_t i : members) group_specs.push_back(specs[i]);
    const TraceReopener open = [&first]() {
      TraceOptions trace_options;
      trace_options.format = first.trace_format;
      return OpenTrace(first.trace_path, trace_options);
    };
    absl::StatusOr<std::vector<CacheRunResult>> results =
        RunCacheReplaysInBatches(open, group_specs, replay, {.memory_limit_bytes = batch.memory_limit_bytes});
    // An error of the replay (the trace, the memory limit) concerns every point of the group; its message
    // names the run, and the prefix the points.
    absl::Status status = results.status();
    if (!status.ok()) {
      std::vector<int64_t> indices;
      for (size_t i : members) indices.push_back(batch.results[i]->point_index());
      status = indices.size() == 1
                   ? PointError(indices[0], status)
                   : absl::Status(status.code(), absl::StrCat("points ", absl::StrJoin(indices, ", "),
                                                              " (one cache replay of the trace): ", status.message()));
    }
    for (size_t k = 0; k < members.size(); ++k) {
      if (results.ok()) *batch.results[members[k]]->mutable_cache() = CacheRunStatsToProto((*results)[k]);
      batch.done(members[k], status);
    }
  }
}

KVSIM_REGISTER(SweepModeRegistry(), "cache", RunCachePoints);

absl::Status ApplyPolicyAxis(const std::string& value, proto::ExperimentConfig* config) {
  auto spec = ParsePolicySpec(value);
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("grid axis 'policy': ", spec.status().message()));
  config->mutable_eviction()->set_name(spec->name());
  config->mutable_eviction()->set_leaf_first(spec->leaf_first());
  if (spec->has_ttl_pin()) {
    config->mutable_eviction()->mutable_ttl_pin();
  } else {
    config->mutable_eviction()->clear_ttl_pin();
  }
  return absl::OkStatus();
}

KVSIM_REGISTER(SweepAxisRegistry(), "policy", ApplyPolicyAxis);
KVSIM_REGISTER(SweepAxisRegistry(), "capacity_blocks", [](const std::string& value, proto::ExperimentConfig* config) {
  return SetField(config, "cache.gpu_capacity_blocks", value);
});
KVSIM_REGISTER(SweepAxisRegistry(), "block_tokens", [](const std::string& value, proto::ExperimentConfig* config) {
  return SetField(config, "cache.block_tokens", value);
});

std::string PointPath(const std::string& dir, int64_t index) {
  return absl::StrFormat("%s/points/point-%08d.pb", dir, index);
}

bool SameCoordinates(const proto::SweepPointResult& result,
                     const std::vector<std::pair<std::string, std::string>>& point) {
  if (result.coordinates_size() != static_cast<int>(point.size())) return false;
  for (size_t i = 0; i < point.size(); ++i) {
    if (result.coordinates(i).name() != point[i].first || result.coordinates(i).value() != point[i].second) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<proto::SweepPointResult> ReadPoint(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  proto::SweepPointResult result;
  if (!result.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not a SweepPointResult (remove it to rerun the point)"));
  }
  return result;
}

absl::Status WriteTables(const Table& table, const std::string& stem) {
  KVSIM_RETURN_IF_ERROR(WriteFileAtomically(stem + ".csv", table.ToCsv()));
  return WriteFileAtomically(stem + ".json", table.ToJson());
}

}  // namespace

void RunEachPoint(const SweepModeBatch& batch,
                  const std::function<absl::Status(const SweepPointContext& context, proto::SweepPointResult* out)>&
                      run_point) {
  ParallelFor(batch.num_threads, batch.points.size(), [&](size_t i, int) {
    const absl::Status status = run_point(*batch.points[i], batch.results[i]);
    batch.done(i, status.ok() ? status : PointError(batch.results[i]->point_index(), status));
  });
}

Registry<SweepModeRunner>& SweepModeRegistry() {
  static auto* registry = new Registry<SweepModeRunner>("sweep mode");
  return *registry;
}

Registry<SweepAxisApplier>& SweepAxisRegistry() {
  static auto* registry = new Registry<SweepAxisApplier>("sweep axis");
  return *registry;
}

absl::StatusOr<std::vector<std::string>> ExpandGridValues(absl::string_view values) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(values, ',')) {
    if (item.empty()) return absl::InvalidArgumentError(absl::StrCat("'", values, "': empty value"));
    if (item.find(':') != absl::string_view::npos) {
      KVSIM_RETURN_IF_ERROR(ExpandRange(item, &out));
    } else {
      out.push_back(std::string(item));
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParsePositiveIntList(absl::string_view values, absl::string_view what) {
  auto expanded = ExpandGridValues(values);
  if (!expanded.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", expanded.status().message()));
  std::vector<int64_t> out;
  for (const std::string& v : *expanded) {
    int64_t n;
    if (!absl::SimpleAtoi(v, &n) || n <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": '", v, "' is not a positive integer"));
    }
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<GridAxis>> ParseGrid(absl::string_view grid) {
  std::vector<GridAxis> axes;
  for (absl::string_view token : absl::StrSplit(grid, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    const size_t eq = token.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("grid '", token, "': expected NAME=VALUES"));
    }
    GridAxis axis;
    axis.name = std::string(token.substr(0, eq));
    for (const GridAxis& other : axes) {
      if (other.name == axis.name)
        return absl::InvalidArgumentError(absl::StrCat("grid axis '", axis.name, "' repeated"));
    }
    auto values = ExpandGridValues(token.substr(eq + 1));
    if (!values.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("grid axis '", axis.name, "': ", values.status().message()));
    }
    axis.values = std::move(*values);
    axes.push_back(std::move(axis));
  }
  if (axes.empty()) return absl::InvalidArgumentError("empty grid: expected NAME=VALUES ...");
  return axes;
}

int64_t NumGridPoints(const std::vector<GridAxis>& axes) {
  int64_t n = 1;
  for (const GridAxis& axis : axes) n *= static_cast<int64_t>(axis.values.size());
  return n;
}

std::vector<std::pair<std::string, std::string>> GridPoint(const std::vector<GridAxis>& axes, int64_t index) {
  std::vector<std::pair<std::string, std::string>> point(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    const int64_t n = static_cast<int64_t>(axes[a].values.size());
    point[a] = {axes[a].name, axes[a].values[index % n]};
    index /= n;
  }
  return point;
}

absl::StatusOr<std::string> ApplyGridPoint(const std::vector<std::pair<std::string, std::string>>& point,
                                           proto::ExperimentConfig* config) {
  std::string mode;
  for (const auto& [name, value] : point) {
    if (name == "mode") {
      mode = value;
    } else if (const SweepAxisApplier* axis = SweepAxisRegistry().Find(name)) {
      KVSIM_RETURN_IF_ERROR((*axis)(value, config));
    } else {
      KVSIM_RETURN_IF_ERROR(SetField(config, name, value));
    }
  }
  return mode;
}

absl::StatusOr<std::pair<int, int>> ParseShard(absl::string_view shard) {
  std::vector<absl::string_view> parts = absl::StrSplit(shard, '/');
  int i, n;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &i) || !absl::SimpleAtoi(parts[1], &n) || n < 1 || i < 0 ||
      i >= n) {
    return absl::InvalidArgumentError(absl::StrCat("shard '", shard, "': expected i/N with 0 <= i < N"));
  }
  return std::make_pair(i, n);
}

namespace {

// Serving-summary columns of replay points (empty for cache points).
const std::vector<std::string>& ReplayColumns() {
  static const auto* columns = new std::vector<std::string>{
      "finished_requests", "throughput_requests_per_s", "goodput_requests_per_s", "ttft_p50_ms", "ttft_p99_ms",
      "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms", "reuse_hit_ratio",
      "serving_prefix_hit_ratio",  // the summary's prefix_hit_ratio; the cache columns have their own
      "evicted_blocks", "preemptions",
      "gpu_capacity_blocks",  // of one replica, from the point's model and device
      // How far to trust the point's times (proto::CostModelAccuracy): empty error for a roofline.
      "cost_model_heldout_median_error", "cost_model_heldout_p95_error", "cost_model_extrapolated_predictions"};
  return *columns;
}

std::vector<std::string> ReplayCells(const proto::Results& results) {
  const proto::Summary& s = results.summary();
  const proto::CostModelAccuracy& a = results.run().cost_model_accuracy();
  return {absl::StrCat(s.finished_requests()),
          FormatDouble(s.throughput_requests_per_s()),
          FormatDouble(s.goodput_requests_per_s()),
          FormatDouble(s.ttft_ms().p50()),
          FormatDouble(s.ttft_ms().p99()),
          FormatDouble(s.tpot_ms().p50()),
          FormatDouble(s.tpot_ms().p99()),
          FormatDouble(s.e2e_ms().p50()),
          FormatDouble(s.reuse_hit_ratio()),
          FormatDouble(s.prefix_hit_ratio()),
          absl::StrCat(s.evicted_blocks()),
          absl::StrCat(s.preemptions()),
          absl::StrCat(s.gpu_capacity_blocks()),
          a.calibrated() ? FormatDouble(a.heldout_median_error()) : "",
          a.calibrated() ? FormatDouble(a.heldout_p95_error()) : "",
          absl::StrCat(a.extrapolated_predictions())};
}

}  // namespace

Table SweepTable(const std::vector<proto::SweepPointResult>& results) {
  std::vector<std::string> leading;
  if (!results.empty()) {
    // Prefixed: an axis may share its name with a result column (policy, capacity_blocks).
    for (const auto& c : results[0].coordinates()) leading.push_back("axis." + c.name());
  }
  leading.push_back("point");
  leading.push_back("mode");
  Table table = CacheStatsTable(leading, ReplayColumns());
  for (const proto::SweepPointResult& r : results) {
    std::vector<std::string> cells;
    for (const auto& c : r.coordinates()) cells.push_back(c.value());
    cells.resize(leading.size() - 2);
    cells.push_back(absl::StrCat(r.point_index()));
    cells.push_back(r.mode());
    if (r.has_cache()) {
      AddCacheStatsRow(r.cache(), cells, &table);
    } else {
      // A replay point: its coordinates, the cache columns empty, then the serving summary.
      const size_t num_cache_columns = table.columns().size() - ReplayColumns().size();
      cells.resize(num_cache_columns);
      for (std::string& cell : ReplayCells(r.replay())) cells.push_back(std::move(cell));
      table.AddRow(cells);
    }
  }
  return table;
}

absl::StatusOr<SweepSummary> RunSweep(const std::vector<GridAxis>& axes, const proto::ExperimentConfig& base,
                                      const SweepOptions& options) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("sweep needs an output directory (--out)");
  if (options.trace_path.empty()) return absl::InvalidArgumentError("sweep needs a trace (--trace)");
  if (options.num_shards < 1 || options.shard_index < 0 || options.shard_index >= options.num_shards) {
    return absl::InvalidArgumentError("shard index must be in [0, number of shards)");
  }
  // What every point shares, digested once: the trace's bytes (not its path), the base config and the grid.
  KVSIM_ASSIGN_OR_RETURN(const std::string trace_digest, FileSha256Hex(options.trace_path));
  Sha256 sweep_digest;
  sweep_digest.Update(absl::StrCat("kvsim ", kKvsimVersion, "\ntrace ", trace_digest, "\nformat ", options.trace_format,
                                   "\ndefault_mode ", options.default_mode, "\nbase\n", ToTextProto(base), "grid\n"));
  for (const GridAxis& axis : axes)
    sweep_digest.Update(absl::StrCat(axis.name, "=", absl::StrJoin(axis.values, ","), "\n"));
  const std::string sweep_hex = sweep_digest.HexDigest();
  // Validate every point of the shard before running any (an invalid grid leaves no directory behind),
  // and find the finished ones whose inputs are unchanged.
  SweepSummary summary;
  std::vector<int64_t> todo;
  std::vector<SweepPointContext> contexts;
  std::vector<std::string> modes, point_digests;
  std::vector<proto::SweepPointResult> rewrite;  // finished points of an unchanged input, relabelled
  const int64_t num_points = NumGridPoints(axes);
  std::map<int64_t, proto::SweepPointResult> results;
  for (int64_t index = options.shard_index; index < num_points; index += options.num_shards) {
    ++summary.points_in_shard;
    auto point = GridPoint(axes, index);
    SweepPointContext context{base, options.trace_path, options.trace_format};
    KVSIM_ASSIGN_OR_RETURN(std::string mode, ApplyGridPoint(point, &context.config));
    if (mode.empty()) mode = options.default_mode;
    if (SweepModeRegistry().Find(mode) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "point ", index, ": mode '", mode, "' is not available; available: ", SweepModeRegistry().NameList(),
          " (\"replay\" is registered by linking //sim/sweep:serving_mode)"));
    }
    // Presets are resolved after the point is applied, so model_preset and device_preset axes take effect.
    auto resolved = ResolveExperimentConfig(context.config, absl::StrCat("sweep point ", index));
    if (!resolved.ok()) return absl::Status(resolved.status().code(), resolved.status().message());
    context.config = std::move(*resolved);
    Sha256 point_digest;
    point_digest.Update(absl::StrCat("kvsim ", kKvsimVersion, "\ntrace ", trace_digest, "\nformat ",
                                     options.trace_format, "\nmode ", mode, "\nconfig\n", ToTextProto(context.config),
                                     "point\n"));
    for (const auto& [name, value] : point) point_digest.Update(absl::StrCat(name, "=", value, "\n"));
    std::string point_hex = point_digest.HexDigest();
    const std::string path = PointPath(options.out_dir, index);
    if (std::filesystem::exists(path)) {
      KVSIM_ASSIGN_OR_RETURN(proto::SweepPointResult done, ReadPoint(path));
      if (done.point_index() != index || !SameCoordinates(done, point) || done.mode() != mode) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, ": holds a result of another grid; use a fresh --out directory or remove the points/ folder"));
      }
      if (done.point_digest() == point_hex) {
        ++summary.points_skipped;
        if (done.sweep_digest() != sweep_hex || done.num_points() != num_points) {
          done.set_sweep_digest(sweep_hex);  // the same point, reached from an otherwise changed sweep
          done.set_num_points(num_points);
          rewrite.push_back(done);
        }
        results[index] = std::move(done);
        continue;
      }
      ++summary.points_stale;  // its trace, config or kvsim version changed: run it again
    }
    todo.push_back(index);
    contexts.push_back(std::move(context));
    modes.push_back(mode);
    point_digests.push_back(std::move(point_hex));
  }
  KVSIM_RETURN_IF_ERROR(MakeDirectories(options.out_dir + "/points"));
  for (const proto::SweepPointResult& r : rewrite) {
    KVSIM_RETURN_IF_ERROR(WriteFileAtomically(PointPath(options.out_dir, r.point_index()), r.SerializeAsString()));
  }
  // Run the remaining points, mode by mode, on all cores; each point's file is written as soon as it is done.
  std::vector<absl::Status> statuses(todo.size());
  std::vector<proto::SweepPointResult> done(todo.size());
  std::map<std::string, std::vector<size_t>> by_mode;
  for (size_t i = 0; i < todo.size(); ++i) {
    proto::SweepPointResult& r = done[i];
    r.set_point_index(todo[i]);
    for (const auto& [name, value] : GridPoint(axes, todo[i])) {
      auto* c = r.add_coordinates();
      c->set_name(name);
      c->set_value(value);
    }
    r.set_mode(modes[i]);
    r.set_point_digest(point_digests[i]);
    r.set_sweep_digest(sweep_hex);
    r.set_trace_digest(trace_digest);
    r.set_kvsim_version(kKvsimVersion);
    r.set_num_points(num_points);
    by_mode[modes[i]].push_back(i);
  }
  std::mutex progress_mutex;
  int64_t points_done = 0;
  for (const auto& [mode, members] : by_mode) {
    SweepModeBatch batch;
    for (size_t i : members) {
      batch.points.push_back(&contexts[i]);
      batch.results.push_back(&done[i]);
    }
    batch.num_threads = ResolveThreadCount(options.num_threads);
    batch.memory_limit_bytes =
        options.memory_limit_bytes > 0 ? options.memory_limit_bytes : DefaultMemoryLimitBytes();
    batch.done = [&](size_t k, const absl::Status& status) {
      const size_t i = members[k];
      statuses[i] = status;
      if (status.ok()) {
        statuses[i] = WriteFileAtomically(PointPath(options.out_dir, todo[i]), done[i].SerializeAsString());
        if (!statuses[i].ok()) statuses[i] = PointError(todo[i], statuses[i]);
      }
      if (options.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(++points_done, static_cast<int64_t>(todo.size()));
      }
    };
    (*SweepModeRegistry().Find(mode))(batch);
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!statuses[i].ok()) {
      return statuses[i];  // the mode named the point or points
    }
    results[todo[i]] = std::move(done[i]);
    ++summary.points_run;
  }
  std::vector<proto::SweepPointResult> ordered;
  for (auto& [index, r] : results) ordered.push_back(std::move(r));
  KVSIM_RETURN_IF_ERROR(WriteTables(SweepTable(ordered), absl::StrFormat("%s/shard-%d-of-%d", options.out_dir,
                                                                         options.shard_index, options.num_shards)));
  return summary;
}

absl::StatusOr<Table> MergeSweep(const std::vector<std::string>& dirs, const std::string& out_dir) {
  if (dirs.empty()) return absl::InvalidArgumentError("merge needs at least one sweep directory");
  std::map<int64_t, proto::SweepPointResult> results;
  for (const std::string& dir : dirs) {
    const std::string points = dir + "/points";
    std::error_code error;
    if (!std::filesystem::is_directory(points, error)) {
      return absl::NotFoundError(absl::StrCat(points, ": not a directory (expected a sweep --out directory)"));
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(points, error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("point-", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".pb") {
        files.push_back(entry.path().string());
      }
    }
    if (error) return absl::InternalError(absl::StrCat(points, ": ", error.message()));
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      KVSIM_ASSIGN_OR_RETURN(proto::SweepPointResult r, ReadPoint(file));
      auto [it, inserted] = results.try_emplace(r.point_index(), r);
      if (!inserted && it->second.SerializeAsString() != r.SerializeAsString()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": point ", r.point_index(), " differs from another directory's copy"));
      }
    }
  }
  // One sweep, complete: the same inputs (sweep_digest) and grid size in every point, every index present.
  if (results.empty()) return absl::NotFoundError(absl::StrCat("no sweep points in ", absl::StrJoin(dirs, ", ")));
  const proto::SweepPointResult& first = results.begin()->second;
  for (const auto& [index, r] : results) {
    if (r.sweep_digest().empty() || r.sweep_digest() != first.sweep_digest() || r.num_points() != first.num_points()) {
      return absl::FailedPreconditionError(
          absl::StrCat("point ", index, " comes from another sweep than point ", first.point_index(),
                       r.trace_digest() != first.trace_digest()     ? " (another trace)"
                       : r.kvsim_version() != first.kvsim_version() ? " (another kvsim version)"
                       : r.num_points() != first.num_points()       ? " (another grid size)"
                                                                    : " (another config or grid)",
                       "; rerun the shards with the same --trace, --config and --grid"));
    }
  }
  std::vector<int64_t> missing;
  for (int64_t index = 0; index < first.num_points(); ++index) {
    if (!results.count(index)) missing.push_back(index);
  }
  if (!missing.empty() || results.rbegin()->first >= first.num_points()) {
    if (missing.size() > 10) missing.resize(10);
    return absl::FailedPreconditionError(
        absl::StrCat(first.num_points() - static_cast<int64_t>(results.size()), " of ", first.num_points(),
                     " points missing in ", absl::StrJoin(dirs, ", "),
                     " (first missing: ", absl::StrJoin(missing, ", "), "); run the shards that hold them"));
  }
  std::vector<proto::SweepPointResult> ordered;
  for (auto& [index, r] : results) ordered.push_back(std::move(r));
  Table table = SweepTable(ordered);
  if (!out_dir.empty()) {
    KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
    KVSIM_RETURN_IF_ERROR(WriteTables(table, out_dir + "/results"));
  }
  return table;
}

}  // namespace kvsim
