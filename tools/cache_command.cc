// `kvsim cache`: cache replay (no timing) of a trace under eviction policies and capacities; the logic
// is in sim/cache/cache_simulator.h.
#include <iostream>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_batches.h"
#include "sim/cache/cache_report.h"
#include "sim/cache/cache_simulator.h"
#include "sim/sweep/sweep.h"
#include "tools/cache_flags.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/progress.h"
#include "util/status_macros.h"

namespace kvsim {

namespace {

absl::Status RunCache(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments");
  KVSIM_ASSIGN_OR_RETURN(CacheReplayOptions options, CacheReplayOptionsFromFlags());
  KVSIM_ASSIGN_OR_RETURN(std::vector<proto::EvictionPolicyConfig> policies, PoliciesFromFlag());
  if (absl::GetFlag(FLAGS_capacity).empty()) return absl::InvalidArgumentError("--capacity is required");
  KVSIM_ASSIGN_OR_RETURN(std::vector<int64_t> capacities,
                         CapacitiesFromFlag(absl::GetFlag(FLAGS_capacity), "--capacity", options));
  std::vector<CacheRunSpec> specs;
  for (const auto& policy : policies) {
    for (int64_t capacity : capacities) specs.push_back({policy, capacity});
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t memory_limit, MemoryLimitFromFlag());
  KVSIM_RETURN_IF_ERROR(OpenTraceFromFlags().status());  // a bad path fails before any planning
  // Progress on a terminal only (util/progress.h).
  Progress progress("cache", 0, "req", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  options.progress = progress.Callback();
  CacheBatchPlan plan;
  KVSIM_ASSIGN_OR_RETURN(
      std::vector<CacheRunResult> results,
      RunCacheReplaysInBatches(OpenTraceFromFlags, specs, options, {.memory_limit_bytes = memory_limit}, &plan));
  progress.Finish();
  if (plan.batches.size() > 1 && !absl::GetFlag(FLAGS_quiet)) {
    std::cerr << "kvsim cache: " << DescribeCacheBatchPlan(plan, memory_limit) << "\n";
  }
  Table table = CacheStatsTable({});
  for (const CacheRunResult& r : results) AddCacheStatsRow(CacheRunStatsToProto(r), {}, &table);
  const std::string dir = absl::GetFlag(FLAGS_out);
  if (!dir.empty()) {
    KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
    KVSIM_RETURN_IF_ERROR(
        WriteFilesAtomically({{dir + "/cache.csv", table.ToCsv()}, {dir + "/cache.json", table.ToJson()}}));
  }
  // The console table at 4 significant digits; CSV and JSON with every digit.
  out << (absl::GetFlag(FLAGS_json) ? table.ToJson() : table.ToText(/*significant_digits=*/4));
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    cache,
    {
        .name = "cache",
        .summary = "cache replay (no timing): hit ratios of eviction policies at given capacities",
        .usage =
            "kvsim cache --trace=T --policy=NAME[,NAME...] --capacity=C[,C...] [--block_tokens=16]\n"
            "            [--config=FILE] [--restore_cost=auto|uniform|position] [--threads=0] [--json] [--out=DIR]\n"
            "            [--memory_limit=BYTES]",
        .details =
            "Requests in trace order, each request's blocks accessed one after another; an access hits if the\n"
            "block is resident at that moment, and after it the block is resident. --capacity in blocks (8000),\n"
            "bytes (40GiB, converted with --config's KV bytes per block at the trace's block size) or a share of\n"
            "the trace's distinct blocks (10%); the table reports blocks.\n"
            "Reports hits, prefix hits (the leading hits of each request), hit and miss ratios by blocks and by\n"
            "tokens (a request's last partial block counts its real tokens; the table rounds numbers to 4\n"
            "significant digits, CSV and JSON keep every digit), evictions and Belady's bypasses, for every\n"
            "policy x capacity. Policies: {eviction_policies},\n"
            "each optionally with +leaf_first (prefix-tree constraint) and +ttl (agent-session TTL pins).\n"
            "Belady loads the trace into memory (about 20 bytes per access) for its next-use pre-pass; other\n"
            "runs stream it. --out=DIR also writes DIR/cache.csv and DIR/cache.json.\n"
            "Memory: each point is estimated before it runs (the ids its policy tracks, at most its capacity,\n"
            "ghosts included, and the trace's distinct blocks, times the policy's bytes per id:\n"
            "sim/cache/cache_batches.h); points run together while their estimates fit --memory_limit (default\n"
            "half the physical memory), else in several passes over the trace, with the same results. A point\n"
            "that cannot fit alone is refused before any run, with what it would need.",
        .flags = {"trace", "trace_format", "chain_hashes", "reorder_window", "trace_block_tokens",
                  "trace_timestamp_unit", "policy", "capacity", "config", "block_tokens", "restore_cost", "threads",
                  "json", "out", "memory_limit", "quiet"},
        .flag_aliases = {{"capacity_blocks", "capacity"}},
        .run = RunCache,
    });

}  // namespace kvsim
