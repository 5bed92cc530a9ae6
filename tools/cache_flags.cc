#include "tools/cache_flags.h"

#include <cmath>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "config/experiment_config.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_batches.h"
#include "sim/sweep/sweep.h"
#include "tools/common_flags.h"
#include "util/exact_distinct.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

struct ByteUnit {
  const char* name;
  double bytes;
};
// Longest suffixes first, so "GiB" is not read as "B".
constexpr ByteUnit kByteUnits[] = {{"KiB", 1024.0},
                                   {"MiB", 1024.0 * 1024},
                                   {"GiB", 1024.0 * 1024 * 1024},
                                   {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                   {"KB", 1e3},
                                   {"MB", 1e6},
                                   {"GB", 1e9},
                                   {"TB", 1e12},
                                   {"B", 1}};

// "40GiB" -> bytes: a number followed by one of kByteUnits (any case). False if `text` is not of that form
// (no number, no unit, an unknown unit: *unit_out then names it when non-empty).
bool ParseBytesWithUnit(absl::string_view text, double* bytes, absl::string_view* unit_out) {
  size_t digits = 0;
  while (digits < text.size() &&
         (absl::ascii_isdigit(text[digits]) || text[digits] == '.' || text[digits] == '-' || text[digits] == '+')) {
    ++digits;
  }
  const absl::string_view number = text.substr(0, digits), unit = text.substr(digits);
  *unit_out = unit;
  double value;
  if (number.empty() || unit.empty() || !absl::SimpleAtod(number, &value) || !std::isfinite(value)) {
    *unit_out = "";
    return false;
  }
  for (const ByteUnit& u : kByteUnits) {
    if (absl::EqualsIgnoreCase(unit, u.name)) {
      *bytes = value * u.bytes;
      return true;
    }
  }
  return false;
}

absl::StatusOr<CapacityEntry> ParseCapacityEntry(absl::string_view text, absl::string_view flag) {
  CapacityEntry entry;
  entry.text = std::string(text);
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", text, "': ", why));
  };
  const char* kExpected =
      "expected a block count (8000), bytes with a unit (40GiB; B, KB, MB, GB, TB, KiB, MiB, "
      "GiB, TiB) or a share of the trace's distinct blocks (10%)";
  if (absl::SimpleAtoi(text, &entry.blocks)) {
    if (entry.blocks <= 0) return refuse("a capacity must be at least 1 block");
    return entry;
  }
  if (absl::EndsWith(text, "%")) {
    entry.kind = CapacityEntry::Kind::kPercent;
    if (!absl::SimpleAtod(text.substr(0, text.size() - 1), &entry.percent) || !std::isfinite(entry.percent)) {
      return refuse(kExpected);
    }
    if (!(entry.percent > 0 && entry.percent <= 100)) return refuse("a share must be in (0%, 100%]");
    return entry;
  }
  double bytes = 0;
  absl::string_view unit;
  if (!ParseBytesWithUnit(text, &bytes, &unit)) {
    if (unit.empty()) return refuse(kExpected);
    return refuse(absl::StrCat("unknown unit '", unit, "'; ", kExpected));
  }
  if (!(bytes > 0)) return refuse("a capacity in bytes must be positive");
  entry.kind = CapacityEntry::Kind::kBytes;
  entry.bytes = bytes;
  return entry;
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text, absl::string_view flag) {
  int64_t count;
  double bytes = 0;
  absl::string_view unit;
  if (absl::SimpleAtoi(text, &count)) {
    bytes = static_cast<double>(count);
  } else if (!ParseBytesWithUnit(text, &bytes, &unit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": '", text, "': expected bytes, a count (1000000) or with a unit (4GiB; B, KB, MB, GB, TB, KiB, MiB, ",
        "GiB, TiB)"));
  }
  if (!(bytes >= 1 && bytes < 9e18)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", text, "': must be at least 1 byte"));
  }
  return static_cast<int64_t>(bytes);
}

absl::StatusOr<int64_t> MemoryLimitFromFlag() {
  const std::string text = absl::GetFlag(FLAGS_memory_limit);
  if (text.empty()) return DefaultMemoryLimitBytes();
  return ParseByteSize(text, "--memory_limit");
}

absl::StatusOr<std::vector<CapacityEntry>> ParseCapacityList(absl::string_view values, absl::string_view flag) {
  std::vector<CapacityEntry> entries;
  for (absl::string_view item : absl::StrSplit(values, ',')) {
    if (item.find(':') != absl::string_view::npos) {  // a range of block counts
      KVSIM_ASSIGN_OR_RETURN(std::vector<int64_t> blocks, ParsePositiveIntList(item, flag));
      for (int64_t b : blocks) entries.push_back({.blocks = b, .text = absl::StrCat(b)});
      continue;
    }
    if (item.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": '", values, "': empty entry"));
    KVSIM_ASSIGN_OR_RETURN(CapacityEntry entry, ParseCapacityEntry(item, flag));
    entries.push_back(std::move(entry));
  }
  return entries;
}

bool NeedsBytesPerBlock(const std::vector<CapacityEntry>& entries) {
  for (const CapacityEntry& e : entries) {
    if (e.kind == CapacityEntry::Kind::kBytes) return true;
  }
  return false;
}

bool NeedsDistinctBlocks(const std::vector<CapacityEntry>& entries) {
  for (const CapacityEntry& e : entries) {
    if (e.kind == CapacityEntry::Kind::kPercent) return true;
  }
  return false;
}

absl::StatusOr<std::vector<int64_t>> ResolveCapacities(const std::vector<CapacityEntry>& entries,
                                                       const CapacityBasis& basis, absl::string_view flag) {
  std::vector<int64_t> blocks;
  for (const CapacityEntry& e : entries) {
    switch (e.kind) {
      case CapacityEntry::Kind::kBlocks:
        blocks.push_back(e.blocks);
        break;
      case CapacityEntry::Kind::kBytes: {
        const double n = std::floor(e.bytes / basis.kv_bytes_per_block);
        if (n < 1) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: '%s' is %.0f bytes, less than one KV block of %.0f bytes", flag, e.text, e.bytes,
                              basis.kv_bytes_per_block));
        }
        if (n > 1e15) return absl::InvalidArgumentError(absl::StrCat(flag, ": '", e.text, "': too many blocks"));
        blocks.push_back(static_cast<int64_t>(n));
        break;
      }
      case CapacityEntry::Kind::kPercent: {
        // The small slack keeps 10% of 1000 at 100 despite rounding in the decimal percent.
        const double n = std::floor(static_cast<double>(basis.distinct_blocks) * e.percent / 100 + 1e-9);
        blocks.push_back(std::max<int64_t>(1, static_cast<int64_t>(n)));
        break;
      }
    }
  }
  return blocks;
}

absl::StatusOr<std::vector<int64_t>> CapacitiesForTrace(const std::vector<CapacityEntry>& entries,
                                                        absl::string_view flag, const std::string& trace_path,
                                                        const TraceOptions& trace_options,
                                                        const proto::ExperimentConfig& config,
                                                        const CacheReplayOptions& options) {
  CapacityBasis basis;
  if (!NeedsBytesPerBlock(entries) && !NeedsDistinctBlocks(entries)) return ResolveCapacities(entries, basis, flag);
  if (trace_path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": bytes or a share need --trace"));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(trace_path, trace_options));
  if (NeedsBytesPerBlock(entries)) {
    const int32_t block_tokens = reader->info().block_tokens > 0 ? reader->info().block_tokens : options.block_tokens;
    KVSIM_ASSIGN_OR_RETURN(basis.kv_bytes_per_block, KvBytesPerBlock(config, block_tokens));
  }
  if (NeedsDistinctBlocks(entries)) {
    // Counted exactly in bounded memory (sorted runs spilled to disk past a million distinct ids).
    ExactDistinctCounter distinct;
    Request request;
    int64_t num_requests = 0;
    while ((options.max_requests == 0 || num_requests < options.max_requests) && reader->Next(&request)) {
      ++num_requests;
      KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(options, &request));
      for (BlockId block : request.block_hashes) distinct.Add(block);
    }
    KVSIM_RETURN_IF_ERROR(reader->status());
    KVSIM_ASSIGN_OR_RETURN(basis.distinct_blocks, distinct.Count());
    if (basis.distinct_blocks == 0) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": a share of the trace's blocks, but it has none"));
    }
  }
  return ResolveCapacities(entries, basis, flag);
}

absl::StatusOr<std::vector<int64_t>> CapacitiesFromFlag(absl::string_view values, absl::string_view flag,
                                                        const CacheReplayOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::vector<CapacityEntry> entries, ParseCapacityList(values, flag));
  if (!NeedsBytesPerBlock(entries) && !NeedsDistinctBlocks(entries)) return ResolveCapacities(entries, {}, flag);
  if (absl::GetFlag(FLAGS_trace).empty()) return absl::InvalidArgumentError("--trace is required");
  proto::ExperimentConfig config;
  if (NeedsBytesPerBlock(entries)) {
    KVSIM_ASSIGN_OR_RETURN(config, LoadExperimentConfig(absl::GetFlag(FLAGS_config)));
  }
  KVSIM_ASSIGN_OR_RETURN(TraceOptions trace_options, CheckedTraceOptionsFromFlags());
  return CapacitiesForTrace(entries, flag, absl::GetFlag(FLAGS_trace), trace_options, config, options);
}

absl::StatusOr<CacheReplayOptions> CacheReplayOptionsFromFlags() {
  CacheReplayOptions options;
  const int32_t block_tokens = absl::GetFlag(FLAGS_block_tokens);
  if (block_tokens < 0) return absl::InvalidArgumentError("--block_tokens must be >= 0 (0 = 16)");
  options.block_tokens = block_tokens > 0 ? block_tokens : 16;
  const std::string restore = absl::GetFlag(FLAGS_restore_cost);
  if (restore == "uniform") {
    options.restore_cost = RestoreCost::kUniform;
  } else if (restore == "position") {
    options.restore_cost = RestoreCost::kPosition;
  } else if (restore == "auto") {
    options.restore_cost = RestoreCost::kAuto;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--restore_cost: '", restore, "' is not one of: auto, uniform, position"));
  }
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  return options;
}

absl::StatusOr<std::vector<proto::EvictionPolicyConfig>> PoliciesFromFlag() {
  std::vector<proto::EvictionPolicyConfig> policies;
  for (absl::string_view spec : absl::StrSplit(absl::GetFlag(FLAGS_policy), ',')) {
    auto config = ParsePolicySpec(spec);
    if (!config.ok()) return absl::InvalidArgumentError(absl::StrCat("--policy: ", config.status().message()));
    KVSIM_RETURN_IF_ERROR(CreateEvictionPolicyFromConfig(*config).status());  // unknown names fail here
    policies.push_back(*config);
  }
  return policies;
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_trace);
  if (path.empty()) return absl::InvalidArgumentError("--trace is required");
  KVSIM_ASSIGN_OR_RETURN(TraceOptions options, CheckedTraceOptionsFromFlags());
  return OpenTrace(path, options);
}

}  // namespace kvsim
