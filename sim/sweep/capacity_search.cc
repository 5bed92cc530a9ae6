#include "sim/sweep/capacity_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "config/experiment_config.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_sink.h"
#include "traces/request.h"
#include "traces/trace_reader.h"
#include "util/digest.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/parallel.h"
#include "util/status_macros.h"
#include "util/text_proto.h"
#include "util/version.h"

namespace kvsim {
namespace {

constexpr const char* kMetrics[] = {"ttft_ms", "tpot_ms", "e2e_ms", "queueing_ms"};
constexpr const char* kStats[] = {"mean", "p50", "p90", "p99", "max"};

const proto::Distribution& MetricOf(const proto::Summary& summary, const std::string& metric) {
  if (metric == "ttft_ms") return summary.ttft_ms();
  if (metric == "tpot_ms") return summary.tpot_ms();
  if (metric == "e2e_ms") return summary.e2e_ms();
  return summary.queueing_ms();
}

std::string BoundLabel(const SloBound& bound) { return absl::StrCat(bound.metric, "_", bound.stat); }

// The digest of what determines every replay of a search but its rate.
std::string SearchDigest(const CapacityTrace& trace, const proto::ExperimentConfig& config,
                         const std::vector<SloBound>& slos) {
  Sha256 digest;
  digest.Update(absl::StrCat("kvsim ", kKvsimVersion, "\nconfig\n", ToTextProto(config), "slo\n"));
  for (const SloBound& bound : slos) {
    digest.Update(absl::StrCat(bound.metric, ":", bound.stat, "<=", FormatDouble(bound.limit), "\n"));
  }
  digest.Update(absl::StrCat("requests ", trace.num_requests, " ", trace.digest, "\n"));
  return digest.HexDigest();
}

// The first `max_requests` (0 = all) records of `reader`, each arrival multiplied by `factor` (rounded to
// the ns).
class ScaledArrivalReader final : public TraceReader {
 public:
  ScaledArrivalReader(std::unique_ptr<TraceReader> reader, long double factor, int64_t max_requests)
      : reader_(std::move(reader)), factor_(factor), max_requests_(max_requests) {}

  bool Next(Request* request) override {
    if (max_requests_ > 0 && read_ >= max_requests_) return false;
    if (!reader_->Next(request)) return false;
    ++read_;
    request->arrival_ns = std::llround(static_cast<long double>(request->arrival_ns) * factor_);
    return true;
  }
  absl::Status status() const override { return reader_->status(); }
  const TraceInfo& info() const override { return reader_->info(); }

 private:
  std::unique_ptr<TraceReader> reader_;
  const long double factor_;
  const int64_t max_requests_;
  int64_t read_ = 0;
};

std::string RateFile(const std::string& dir, double rate) {
  return absl::StrCat(dir, "/points/capacity-rate-", FormatDouble(rate), ".txt");
}

// One replay's outcome as stored in a rate file.
std::string EncodeRate(const std::string& digest, double rate, const CapacityEvaluation& e) {
  std::vector<std::string> values;
  for (double v : e.values) values.push_back(FormatDouble(v));
  return absl::StrCat("digest=", digest, "\nrate_per_s=", FormatDouble(rate), "\nholds=", e.holds ? 1 : 0,
                      "\nfinished_requests=", e.finished_requests, "\nnum_requests=", e.num_requests,
                      "\nvalues=", absl::StrJoin(values, ","), "\n");
}

// The outcome in `text` (the file at `path`) when it is one of this search (digest and rate match);
// nullopt when it is from other inputs; DataLoss naming the file and line when it cannot be read.
absl::StatusOr<std::optional<CapacityEvaluation>> DecodeRate(const std::string& path, const std::string& text,
                                                             const std::string& digest, double rate,
                                                             size_t num_bounds) {
  CapacityEvaluation e;
  std::string file_digest;
  double file_rate = -1;
  int fields = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    bool ok = true;
    int holds = 0;
    if (kv.first == "digest") {
      file_digest = std::string(kv.second);
    } else if (kv.first == "rate_per_s") {
      ok = absl::SimpleAtod(kv.second, &file_rate);
    } else if (kv.first == "holds") {
      ok = absl::SimpleAtoi(kv.second, &holds) && (holds == 0 || holds == 1);
      e.holds = holds == 1;
    } else if (kv.first == "finished_requests") {
      ok = absl::SimpleAtoi(kv.second, &e.finished_requests);
    } else if (kv.first == "num_requests") {
      ok = absl::SimpleAtoi(kv.second, &e.num_requests);
    } else if (kv.first == "values") {
      for (absl::string_view v : absl::StrSplit(kv.second, ',', absl::SkipEmpty())) {
        double value = 0;
        ok = ok && absl::SimpleAtod(v, &value);
        e.values.push_back(value);
      }
    } else {
      ok = false;
    }
    if (!ok) return absl::DataLossError(absl::StrCat(path, ": cannot read the line '", line.substr(0, 60), "'"));
    ++fields;
  }
  if (fields != 6) return absl::DataLossError(absl::StrCat(path, ": expected 6 fields, got ", fields));
  if (file_digest != digest || file_rate != rate) return std::optional<CapacityEvaluation>();
  if (e.values.size() != num_bounds) {
    return absl::DataLossError(absl::StrCat(path, ": expected ", num_bounds, " SLO values, got ", e.values.size()));
  }
  e.rate_per_s = rate;
  return std::optional<CapacityEvaluation>(std::move(e));
}

// What every round of a search shares.
struct SearchContext {
  const CapacityTrace& trace;
  const proto::ExperimentConfig& config;
  const CostModel& cost_model;
  const std::vector<SloBound>& slos;
  const CapacityOptions& options;
  std::string digest;  // of the search's inputs; set when options.out_dir is
};

// Reads the outcome of `rate` from the context's directory: nullopt if absent or from other inputs.
absl::StatusOr<std::optional<CapacityEvaluation>> ReadRate(const SearchContext& context, double rate) {
  const std::string path = RateFile(context.options.out_dir, rate);
  absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::optional<CapacityEvaluation>();
  KVSIM_RETURN_IF_ERROR(text.status());
  return DecodeRate(path, *text, context.digest, rate, context.slos.size());
}

// Evaluates every rate of `rates` and appends the evaluations to result->path, ascending by rate: the
// outcomes already in the directory are read, this shard's others replayed (in parallel) and written, and
// other shards' waited for. Returns false (path unchanged) when one of those is still missing.
absl::StatusOr<bool> EvaluateRound(const SearchContext& context, int round, const std::string& phase,
                                   std::vector<double> rates, CapacityResult* result) {
  const CapacityOptions& options = context.options;
  const bool stored = !options.out_dir.empty();
  std::sort(rates.begin(), rates.end());
  std::vector<std::optional<CapacityEvaluation>> known(rates.size());
  std::vector<size_t> todo, others;
  for (size_t i = 0; i < rates.size(); ++i) {
    if (stored) {
      KVSIM_ASSIGN_OR_RETURN(known[i], ReadRate(context, rates[i]));
    }
    if (known[i].has_value()) {
      ++result->rates_read;
    } else if (static_cast<int>(i % options.num_shards) == options.shard_index) {
      todo.push_back(i);
    } else {
      others.push_back(i);
    }
  }
  std::vector<absl::StatusOr<proto::Summary>> summaries(todo.size(), absl::UnknownError("not run"));
  ParallelFor(ResolveThreadCount(options.num_threads), todo.size(), [&](size_t k, int) {
    summaries[k] = ReplayAtRate(context.trace, rates[todo[k]], context.config, context.cost_model);
  });
  for (size_t k = 0; k < todo.size(); ++k) {
    const double rate = rates[todo[k]];
    if (!summaries[k].ok()) {
      return absl::Status(summaries[k].status().code(), absl::StrCat("replay at ", FormatDouble(rate),
                                                                     " requests/s: ", summaries[k].status().message()));
    }
    CapacityEvaluation e;
    e.rate_per_s = rate;
    e.holds = SloHolds(*summaries[k], context.slos);
    for (const SloBound& bound : context.slos) e.values.push_back(SloValue(*summaries[k], bound));
    e.finished_requests = summaries[k]->finished_requests();
    e.num_requests = summaries[k]->num_requests();
    if (stored) {
      KVSIM_RETURN_IF_ERROR(WriteFileAtomically(RateFile(options.out_dir, rate), EncodeRate(context.digest, rate, e)));
    }
    known[todo[k]] = std::move(e);
    ++result->rates_replayed;
  }
  // Other shards' rates: poll until they are in the directory or the wait is over.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.shard_wait_s);
  while (!others.empty()) {
    std::vector<size_t> missing;
    for (size_t i : others) {
      KVSIM_ASSIGN_OR_RETURN(known[i], ReadRate(context, rates[i]));
      if (known[i].has_value()) {
        ++result->rates_read;
      } else {
        missing.push_back(i);
      }
    }
    others = std::move(missing);
    if (others.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (std::optional<CapacityEvaluation>& e : known) {
    e->round = round;
    e->phase = phase;
    result->path.push_back(*std::move(e));
  }
  return true;
}

std::string PointFile(const std::string& dir, int64_t index) {
  return absl::StrCat(dir, "/points/capacity-point-", index, ".txt");
}

struct GridPointResult {
  std::string label;
  int64_t gpus = 0;
  bool holds = false;
  double gpu_hours_per_million = 0;
  int64_t finished_requests = 0;
  int64_t num_requests = 0;
  std::vector<double> values;
};

std::string EncodePoint(const GridPointResult& p) {
  std::vector<std::string> values;
  for (double v : p.values) values.push_back(FormatDouble(v));
  return absl::StrCat("label=", p.label, "\ngpus=", p.gpus, "\nholds=", p.holds ? 1 : 0,
                      "\ngpu_hours_per_million=", FormatDouble(p.gpu_hours_per_million),
                      "\nfinished_requests=", p.finished_requests, "\nnum_requests=", p.num_requests,
                      "\nvalues=", absl::StrJoin(values, ","), "\n");
}

absl::StatusOr<GridPointResult> DecodePoint(const std::string& path, const std::string& text) {
  GridPointResult p;
  int fields = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    bool ok = true;
    int holds = 0;
    if (kv.first == "label") {
      p.label = std::string(kv.second);
    } else if (kv.first == "gpus") {
      ok = absl::SimpleAtoi(kv.second, &p.gpus);
    } else if (kv.first == "holds") {
      ok = absl::SimpleAtoi(kv.second, &holds);
      p.holds = holds != 0;
    } else if (kv.first == "gpu_hours_per_million") {
      ok = absl::SimpleAtod(kv.second, &p.gpu_hours_per_million);
    } else if (kv.first == "finished_requests") {
      ok = absl::SimpleAtoi(kv.second, &p.finished_requests);
    } else if (kv.first == "num_requests") {
      ok = absl::SimpleAtoi(kv.second, &p.num_requests);
    } else if (kv.first == "values") {
      for (absl::string_view v : absl::StrSplit(kv.second, ',', absl::SkipEmpty())) {
        double value = 0;
        ok = ok && absl::SimpleAtod(v, &value);
        p.values.push_back(value);
      }
    } else {
      ok = false;
    }
    if (!ok) return absl::DataLossError(absl::StrCat(path, ": cannot read the line '", line, "'"));
    ++fields;
  }
  if (fields != 7) return absl::DataLossError(absl::StrCat(path, ": expected 7 fields, got ", fields));
  return p;
}

absl::StatusOr<GridPointResult> RunGridPoint(const std::vector<std::pair<std::string, std::string>>& point,
                                             const proto::ExperimentConfig& base, const CapacityTrace& trace,
                                             const std::vector<SloBound>& slos, double target_rate,
                                             const CostModelFactory& factory) {
  GridPointResult result;
  std::vector<std::string> coords;
  for (const auto& [axis, value] : point) coords.push_back(absl::StrCat(axis, "=", value));
  result.label = absl::StrJoin(coords, " ");
  proto::ExperimentConfig config = base;
  KVSIM_ASSIGN_OR_RETURN(std::string mode, ApplyGridPoint(point, &config));
  if (!mode.empty()) return absl::InvalidArgumentError("capacity grid: the mode axis does not apply (always a replay)");
  KVSIM_ASSIGN_OR_RETURN(config, ResolveExperimentConfig(config, absl::StrCat("grid point ", result.label)));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, factory ? factory(config) : CreateCostModel(config));
  KVSIM_ASSIGN_OR_RETURN(proto::Summary summary, ReplayAtRate(trace, target_rate, config, *cost_model));
  result.gpus = static_cast<int64_t>(std::max(1, config.cluster().num_replicas())) *
                std::max(1, config.model().tensor_parallel_size());
  result.holds = SloHolds(summary, slos);
  result.gpu_hours_per_million = static_cast<double>(result.gpus) * 1e6 / target_rate / 3600.0;
  result.finished_requests = summary.finished_requests();
  result.num_requests = summary.num_requests();
  for (const SloBound& bound : slos) result.values.push_back(SloValue(summary, bound));
  return result;
}

}  // namespace

absl::StatusOr<std::vector<SloBound>> ParseSloBounds(absl::string_view text) {
  std::vector<SloBound> bounds;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const std::string expected = absl::StrCat("--slo: '", item,
                                              "': expected METRIC:STAT<=LIMIT with METRIC one of ttft_ms, tpot_ms, "
                                              "e2e_ms, queueing_ms and STAT one of mean, P50, P90, P99, max");
    const size_t colon = item.find(':');
    const size_t le = item.find("<=");
    if (colon == absl::string_view::npos || le == absl::string_view::npos || le < colon) {
      return absl::InvalidArgumentError(expected);
    }
    SloBound bound;
    bound.metric = std::string(item.substr(0, colon));
    bound.stat = absl::AsciiStrToLower(item.substr(colon + 1, le - colon - 1));
    if (std::find(std::begin(kMetrics), std::end(kMetrics), bound.metric) == std::end(kMetrics) ||
        std::find(std::begin(kStats), std::end(kStats), bound.stat) == std::end(kStats)) {
      return absl::InvalidArgumentError(expected);
    }
    if (!absl::SimpleAtod(item.substr(le + 2), &bound.limit) || !std::isfinite(bound.limit) || bound.limit < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--slo: '", item, "': expected a limit >= 0 in milliseconds"));
    }
    bounds.push_back(std::move(bound));
  }
  if (bounds.empty()) return absl::InvalidArgumentError("--slo: expected at least one METRIC:STAT<=LIMIT");
  return bounds;
}

double SloValue(const proto::Summary& summary, const SloBound& bound) {
  const proto::Distribution& d = MetricOf(summary, bound.metric);
  if (bound.stat == "mean") return d.mean();
  if (bound.stat == "p50") return d.p50();
  if (bound.stat == "p90") return d.p90();
  if (bound.stat == "p99") return d.p99();
  return d.max();
}

bool SloHolds(const proto::Summary& summary, const std::vector<SloBound>& slos) {
  if (summary.finished_requests() != summary.num_requests()) return false;
  for (const SloBound& bound : slos) {
    if (!(SloValue(summary, bound) <= bound.limit)) return false;
  }
  return true;
}

absl::StatusOr<CapacityTrace> ScanCapacityTrace(TraceReopener open, int64_t max_requests) {
  CapacityTrace trace;
  trace.open = std::move(open);
  trace.max_requests = max_requests;
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, trace.open());
  Sha256 digest;
  int64_t first = 0, last = 0;
  Request r;
  std::string record;
  while ((max_requests <= 0 || trace.num_requests < max_requests) && reader->Next(&r)) {
    first = trace.num_requests == 0 ? r.arrival_ns : std::min(first, r.arrival_ns);
    last = trace.num_requests == 0 ? r.arrival_ns : std::max(last, r.arrival_ns);
    ++trace.num_requests;
    // Every field as its bytes: formatting them as text cost more than the replay's own read of the trace.
    record.clear();
    AppendRequestBytes(r, &record);
    digest.Update(record);
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  if (trace.num_requests < 2 || last <= first) {
    return absl::InvalidArgumentError(
        "capacity search: the trace needs at least two distinct arrival times to have a rate to scale");
  }
  trace.rate_per_s = static_cast<double>(trace.num_requests - 1) * 1e9 / static_cast<double>(last - first);
  trace.digest = digest.HexDigest();
  return trace;
}

absl::StatusOr<CapacityTrace> CapacityTraceFromRequests(std::vector<Request> requests) {
  auto shared = std::make_shared<const std::vector<Request>>(std::move(requests));
  TraceInfo info;
  info.path = "capacity search trace";
  info.format = "memory";
  info.block_tokens = shared->empty() ? 0 : (*shared)[0].block_tokens;
  return ScanCapacityTrace(
      [shared, info]() -> absl::StatusOr<std::unique_ptr<TraceReader>> {
        return std::unique_ptr<TraceReader>(new VectorTraceReader(*shared, info));
      },
      0);
}

absl::StatusOr<proto::Summary> ReplayAtRate(const CapacityTrace& trace, double rate_per_s,
                                            const proto::ExperimentConfig& config, const CostModel& cost_model) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> opened, trace.open());
  ScaledArrivalReader reader(std::move(opened), static_cast<long double>(trace.rate_per_s) / rate_per_s,
                             trace.max_requests);
  ReplayOptions options;
  options.timeline = false;
  DiscardResults discard;  // the summary only: no per-request record is held
  options.results_sink = &discard;
  KVSIM_ASSIGN_OR_RETURN(ReplayOutput output, RunReplay(config, cost_model, &reader, options));
  return output.results.summary();
}

absl::StatusOr<CapacityResult> SearchCapacity(const CapacityTrace& trace, const proto::ExperimentConfig& config,
                                              const CostModel& cost_model, const std::vector<SloBound>& slos,
                                              const CapacityOptions& options) {
  if (!(options.tolerance > 0 && options.tolerance < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tolerance: expected a relative width in (0, 1), got ", options.tolerance));
  }
  if (options.width < 1) return absl::InvalidArgumentError("capacity search: width must be >= 1");
  if (options.num_shards < 1 || options.shard_index < 0 || options.shard_index >= options.num_shards) {
    return absl::InvalidArgumentError("capacity search: shard index must be in [0, number of shards)");
  }
  if (options.num_shards > 1 && options.out_dir.empty()) {
    return absl::InvalidArgumentError("capacity search: a sharded search needs a shared output directory (--out)");
  }
  if (!(options.shard_wait_s >= 0 && options.shard_wait_s <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard_wait_s: expected seconds in [0, 1e6], got ", options.shard_wait_s));
  }
  CapacityResult result;
  result.trace_rate_per_s = trace.rate_per_s;
  const double start = options.start_rate_per_s > 0 ? options.start_rate_per_s : result.trace_rate_per_s;
  const int w = options.width;
  SearchContext context{trace, config, cost_model, slos, options, ""};
  if (!options.out_dir.empty()) {
    context.digest = SearchDigest(trace, config, slos);
    KVSIM_RETURN_IF_ERROR(MakeDirectories(options.out_dir + "/points"));
  }
  // Runs a round; an incomplete one (another shard's rate missing) ends the search here.
  auto run = [&](int round, const std::string& phase, std::vector<double> rates) -> absl::Status {
    KVSIM_ASSIGN_OR_RETURN(const bool complete, EvaluateRound(context, round, phase, std::move(rates), &result));
    if (!complete) result.complete = false;
    return absl::OkStatus();
  };

  // 1. Bracket.
  double lo = 0, hi = 0;
  int round = 0;
  bool up = true;
  for (; round < options.max_rounds && hi == 0; ++round) {
    std::vector<double> rates;
    for (int j = 0; j < w; ++j) {
      const int exponent = up ? round * w + j : -(round * w + j + 1);
      rates.push_back(std::ldexp(start, exponent));
    }
    const size_t begin = result.path.size();
    KVSIM_RETURN_IF_ERROR(run(round, "bracket", rates));
    if (!result.complete) return result;
    if (up) {
      size_t first_fail = result.path.size();
      for (size_t i = begin; i < result.path.size(); ++i) {
        if (!result.path[i].holds) {
          first_fail = i;
          break;
        }
      }
      if (first_fail == result.path.size()) {
        lo = result.path.back().rate_per_s;
        continue;
      }
      if (round == 0 && first_fail == begin) {
        up = false;  // the start fails: go down from it (this round's other rates are above it and unused)
        hi = 0;
        round = -1;
        continue;
      }
      hi = result.path[first_fail].rate_per_s;
      if (first_fail > begin) lo = result.path[first_fail - 1].rate_per_s;
    } else {
      // Rates ascend within the round; the highest that holds, with the rate above it (which failed).
      for (size_t i = result.path.size(); i-- > begin;) {
        if (result.path[i].holds) {
          lo = result.path[i].rate_per_s;
          hi = lo * 2;
          break;
        }
      }
    }
  }
  if (hi == 0) {
    return absl::FailedPreconditionError(
        up ? absl::StrCat("capacity search: the SLOs hold at every rate tried, up to ", FormatDouble(lo),
                          " requests/s; the search needs a rate at which they fail")
           : absl::StrCat("capacity search: the SLOs fail at every rate tried, down to ",
                          FormatDouble(std::ldexp(start, -options.max_rounds * w)), " requests/s"));
  }

  // 2. Bisect.
  for (round = 0; hi - lo > options.tolerance * lo; ++round) {
    std::vector<double> rates;
    for (int j = 1; j <= w; ++j) rates.push_back(lo + (hi - lo) * j / (w + 1));
    const size_t begin = result.path.size();
    KVSIM_RETURN_IF_ERROR(run(round, "bisect", rates));
    if (!result.complete) return result;
    double new_lo = lo, new_hi = hi;
    for (size_t i = begin; i < result.path.size(); ++i) {
      if (!result.path[i].holds) {
        new_hi = result.path[i].rate_per_s;
        break;
      }
      new_lo = result.path[i].rate_per_s;
    }
    lo = new_lo;
    hi = new_hi;
  }
  result.max_rate_per_s = lo;
  result.first_fail_per_s = hi;
  return result;
}

Table CapacityPathTable(const CapacityResult& result, const std::vector<SloBound>& slos) {
  std::vector<std::string> columns = {"phase", "round", "rate_per_s", "holds", "finished", "requests"};
  std::vector<bool> numeric = {false, true, true, false, true, true};
  for (const SloBound& bound : slos) {
    columns.push_back(BoundLabel(bound));
    numeric.push_back(true);
  }
  Table table(columns, numeric);
  for (const CapacityEvaluation& e : result.path) {
    std::vector<std::string> row = {e.phase,
                                    absl::StrCat(e.round),
                                    FormatDouble(e.rate_per_s),
                                    e.holds ? "yes" : "no",
                                    absl::StrCat(e.finished_requests),
                                    absl::StrCat(e.num_requests)};
    for (double v : e.values) row.push_back(FormatDouble(v));
    table.AddRow(std::move(row));
  }
  return table;
}

std::string CapacityJson(const CapacityResult& result, const std::vector<SloBound>& slos, double tolerance) {
  Json out = Json::object();
  out["slo"] = Json::array();
  for (const SloBound& slo : slos) {
    out["slo"].push_back({{"metric", slo.metric}, {"stat", slo.stat}, {"limit", JsonNumberOrNull(slo.limit)}});
  }
  out["tolerance"] = JsonNumberOrNull(tolerance);
  out["trace_rate_per_s"] = JsonNumberOrNull(result.trace_rate_per_s);
  out["max_rate_per_s"] = JsonNumberOrNull(result.max_rate_per_s);
  out["first_fail_per_s"] = JsonNumberOrNull(result.first_fail_per_s);
  out["path"] = CapacityPathTable(result, slos).ToJsonValue();
  return DumpJson(out);
}

absl::StatusOr<CapacityGridResult> RunCapacityGrid(const std::vector<GridAxis>& axes,
                                                   const proto::ExperimentConfig& base,
                                                   const CapacityTrace& trace, const std::vector<SloBound>& slos,
                                                   const CapacityGridOptions& options) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("capacity grid: --out is required");
  if (!(options.target_rate_per_s > 0)) {
    return absl::InvalidArgumentError("capacity grid: --target_rate must be > 0 requests/s");
  }
  if (options.num_shards < 1 || options.shard_index < 0 || options.shard_index >= options.num_shards) {
    return absl::InvalidArgumentError("capacity grid: shard index must be in [0, N)");
  }
  KVSIM_RETURN_IF_ERROR(MakeDirectories(options.out_dir + "/points"));
  const int64_t num_points = NumGridPoints(axes);
  CapacityGridResult result;
  std::vector<int64_t> todo;
  for (int64_t i = options.shard_index; i < num_points; i += options.num_shards) {
    ++result.points_in_shard;
    const std::string path = PointFile(options.out_dir, i);
    absl::StatusOr<std::string> existing = ReadFile(path);
    if (existing.ok()) {
      ++result.points_skipped;
    } else if (absl::IsNotFound(existing.status())) {
      todo.push_back(i);
    } else {
      return existing.status();
    }
  }
  std::vector<absl::Status> statuses(todo.size());
  ParallelFor(ResolveThreadCount(options.num_threads), todo.size(), [&](size_t k, int) {
    absl::StatusOr<GridPointResult> point = RunGridPoint(GridPoint(axes, todo[k]), base, trace, slos,
                                                         options.target_rate_per_s, options.cost_model_factory);
    statuses[k] =
        point.ok() ? WriteFileAtomically(PointFile(options.out_dir, todo[k]), EncodePoint(*point)) : point.status();
  });
  for (const absl::Status& status : statuses) KVSIM_RETURN_IF_ERROR(status);
  result.points_run = static_cast<int64_t>(todo.size());

  // Collect every point written so far (by any shard).
  std::vector<GridPointResult> points;
  for (int64_t i = 0; i < num_points; ++i) {
    const std::string path = PointFile(options.out_dir, i);
    absl::StatusOr<std::string> text = ReadFile(path);
    if (absl::IsNotFound(text.status())) return result;  // other shards still to run
    KVSIM_RETURN_IF_ERROR(text.status());
    KVSIM_ASSIGN_OR_RETURN(GridPointResult point, DecodePoint(path, *text));
    std::vector<std::string> coords;
    for (const auto& [axis, value] : GridPoint(axes, i)) coords.push_back(absl::StrCat(axis, "=", value));
    if (point.label != absl::StrJoin(coords, " ") || point.values.size() != slos.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a point of another grid or SLO list ('", point.label, "'); use a fresh --out"));
    }
    points.push_back(std::move(point));
  }
  result.complete = true;
  std::vector<std::string> columns = {"point"};
  std::vector<bool> numeric = {true};
  for (const GridAxis& axis : axes) {
    columns.push_back(axis.name);
    numeric.push_back(false);
  }
  for (const char* c : {"gpus", "holds", "gpu_hours_per_million", "finished", "requests"}) {
    columns.push_back(c);
    numeric.push_back(std::string(c) != "holds");
  }
  for (const SloBound& bound : slos) {
    columns.push_back(BoundLabel(bound));
    numeric.push_back(true);
  }
  result.table = Table(columns, numeric);
  for (int64_t i = 0; i < num_points; ++i) {
    const GridPointResult& p = points[i];
    std::vector<std::string> row = {absl::StrCat(i)};
    for (const auto& [axis, value] : GridPoint(axes, i)) row.push_back(value);
    row.push_back(absl::StrCat(p.gpus));
    row.push_back(p.holds ? "yes" : "no");
    row.push_back(FormatDouble(p.gpu_hours_per_million));
    row.push_back(absl::StrCat(p.finished_requests));
    row.push_back(absl::StrCat(p.num_requests));
    for (double v : p.values) row.push_back(FormatDouble(v));
    result.table.AddRow(std::move(row));
    if (p.holds && (result.cheapest_point < 0 || p.gpu_hours_per_million < result.cheapest_gpu_hours_per_million)) {
      result.cheapest_point = i;
      result.cheapest_label = p.label;
      result.cheapest_gpu_hours_per_million = p.gpu_hours_per_million;
    }
  }
  Json json = Json::object();
  json["target_rate_per_s"] = JsonNumberOrNull(options.target_rate_per_s);
  json["cheapest_point"] = result.cheapest_point;
  json["cheapest"] = result.cheapest_label;
  json["cheapest_gpu_hours_per_million"] = JsonNumberOrNull(result.cheapest_gpu_hours_per_million);
  json["points"] = result.table.ToJsonValue();
  KVSIM_RETURN_IF_ERROR(WriteFilesAtomically({{options.out_dir + "/capacity_grid.csv", result.table.ToCsv()},
                                              {options.out_dir + "/capacity_grid.json", DumpJson(json)}}));
  return result;
}

}  // namespace kvsim
