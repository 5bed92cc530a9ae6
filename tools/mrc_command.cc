// `kvsim mrc`: miss-ratio curves. LRU: every cache size in one pass (sim/cache/mrc.h); other policies: one
// cache replay per size, in parallel (sim/cache/cache_simulator.h).
#include <iostream>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_batches.h"
#include "sim/cache/cache_report.h"
#include "sim/cache/cache_simulator.h"
#include "sim/cache/mrc.h"
#include "sim/sweep/sweep.h"
#include "tools/cache_flags.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/progress.h"
#include "util/status_macros.h"
#include "util/table.h"

ABSL_FLAG(bool, prefix, false, "mrc: also the prefix-hit curve (leading hits of each request); exact only");
ABSL_FLAG(double, sample_rate, 1.0,
          "mrc: SHARDS spatial sampling rate in [1e-6, 1] for the one-pass LRU curve; 1 = exact. Unset: exact "
          "when the curve fits --memory_limit, else the largest rate that fits (chosen from a distinct-block count)");
ABSL_FLAG(double, hot_share, kvsim::kDefaultMrcHotShare,
          "mrc, sampled (--sample_rate < 1 or a chosen rate): blocks with at least this share of all accesses are "
          "tracked exactly beside the sample (a pre-pass finds them); 0 = plain SHARDS");
ABSL_FLAG(std::string, sizes, "",
          "mrc: cache sizes as --capacity takes them (blocks with ranges LO:HI:xF or LO:HI:+S, bytes such as "
          "40GiB, or 10% of the trace's distinct blocks); empty = every size where the LRU curve changes (LRU "
          "only)");

namespace kvsim {
namespace {

// `sampled`: a sampled curve, which gets the error_bound column (exact curves have no error).
Table CurveTable(bool prefix, bool sampled) {
  std::vector<std::string> columns = {"policy",          "capacity_blocks", "hit_ratio",
                                      "token_hit_ratio", "miss_ratio",      "token_miss_ratio"};
  std::vector<bool> numeric = {false, true, true, true, true, true};
  if (prefix) {
    columns.insert(columns.end(), {"prefix_hit_ratio", "prefix_token_hit_ratio"});
    numeric.insert(numeric.end(), {true, true});
  }
  if (sampled) {
    columns.push_back("error_bound");
    numeric.push_back(true);
  }
  return Table(columns, numeric);
}

// `any_access`: the stream had accesses (else both ratios are 0: MissRatio of sim/cache/cache_report.h).
void AddPoint(const std::string& policy, const MrcPoint& p, bool any_access, bool prefix, bool sampled, Table* table) {
  std::vector<std::string> row = {policy,
                                  absl::StrCat(p.capacity_blocks),
                                  FormatDouble(p.hit_ratio),
                                  FormatDouble(p.token_hit_ratio),
                                  FormatDouble(MissRatio(p.hit_ratio, any_access)),
                                  FormatDouble(MissRatio(p.token_hit_ratio, any_access))};
  if (prefix) {
    row.push_back(FormatDouble(p.prefix_hit_ratio));
    row.push_back(FormatDouble(p.prefix_token_hit_ratio));
  }
  if (sampled) row.push_back(FormatDouble(p.error_bound));
  table->AddRow(std::move(row));
}

absl::Status RunMrc(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments");
  KVSIM_ASSIGN_OR_RETURN(CacheReplayOptions replay, CacheReplayOptionsFromFlags());
  KVSIM_ASSIGN_OR_RETURN(std::vector<proto::EvictionPolicyConfig> policies, PoliciesFromFlag());
  MrcOptions options;
  options.prefix = absl::GetFlag(FLAGS_prefix);
  options.sample_rate = absl::GetFlag(FLAGS_sample_rate);
  std::vector<int64_t> sizes;
  if (!absl::GetFlag(FLAGS_sizes).empty()) {
    KVSIM_ASSIGN_OR_RETURN(sizes, CapacitiesFromFlag(absl::GetFlag(FLAGS_sizes), "--sizes", replay));
  }
  const bool one_pass = policies.size() == 1 && PolicyLabel(policies[0]) == "lru";
  if (!one_pass && sizes.empty()) {
    return absl::InvalidArgumentError("--sizes is required for policies other than lru (one run per size)");
  }
  if (!one_pass && options.sample_rate != 1.0) {
    return absl::InvalidArgumentError("--sample_rate applies to the one-pass LRU curve only");
  }
  options.hot_share = absl::GetFlag(FLAGS_hot_share);
  if (!(options.hot_share >= 0 && options.hot_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--hot_share=", options.hot_share, ": must be in [0, 1)"));
  }
  KVSIM_ASSIGN_OR_RETURN(const int64_t memory_limit, MemoryLimitFromFlag());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTraceFromFlags());
  reader.reset();  // a bad path fails before any pass
  // Progress on a terminal only (util/progress.h).
  Progress progress("mrc", 0, "req", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  replay.progress = progress.Callback();
  Table table = CurveTable(options.prefix, /*sampled=*/false);
  if (one_pass) {
    // Within --memory_limit: the rate is chosen unless given (sim/cache/mrc.h, ComputeLruMrcWithinLimit).
    MrcMemoryPlan plan;
    KVSIM_ASSIGN_OR_RETURN(LruMrc mrc,
                           ComputeLruMrcWithinLimit(OpenTraceFromFlags, replay, options,
                                                    /*choose_rate=*/!FlagGiven("sample_rate"), memory_limit, &plan));
    if (!absl::GetFlag(FLAGS_quiet) && (plan.exact_over_limit || FlagGiven("memory_limit"))) {  // chosen, or asked
      std::cerr << "kvsim mrc: " << DescribeMrcMemoryPlan(plan) << "\n";
    }
    const bool sampled = mrc.sample_rate() < 1;
    table = CurveTable(options.prefix, sampled);
    const bool any_access = mrc.sampled_accesses() > 0 || mrc.num_hot_blocks() > 0;
    if (sizes.empty()) {
      for (const MrcPoint& p : mrc.StepPoints()) AddPoint("lru", p, any_access, options.prefix, sampled, &table);
    } else {
      for (int64_t size : sizes) AddPoint("lru", mrc.At(size), any_access, options.prefix, sampled, &table);
    }
  } else {
    std::vector<CacheRunSpec> specs;
    for (const auto& policy : policies) {
      for (int64_t size : sizes) specs.push_back({policy, size});
    }
    CacheBatchPlan plan;
    KVSIM_ASSIGN_OR_RETURN(
        std::vector<CacheRunResult> results,
        RunCacheReplaysInBatches(OpenTraceFromFlags, specs, replay, {.memory_limit_bytes = memory_limit}, &plan));
    if (plan.batches.size() > 1 && !absl::GetFlag(FLAGS_quiet)) {
      std::cerr << "kvsim mrc: " << DescribeCacheBatchPlan(plan, memory_limit) << "\n";
    }
    for (const CacheRunResult& r : results) {
      MrcPoint p;
      p.capacity_blocks = r.spec.capacity_blocks;
      p.hit_ratio = r.stats.HitRatio();
      p.token_hit_ratio = r.stats.TokenHitRatio();
      p.prefix_hit_ratio = r.stats.PrefixHitRatio();
      p.prefix_token_hit_ratio = r.stats.PrefixTokenHitRatio();
      AddPoint(r.policy_label, p, r.stats.accesses > 0, options.prefix, /*sampled=*/false, &table);
    }
  }
  progress.Finish();
  const std::string path = absl::GetFlag(FLAGS_out);
  if (!path.empty()) {
    KVSIM_RETURN_IF_ERROR(WriteFileAtomically(path, table.ToCsv()));
    out << "wrote " << table.rows().size() << " points to " << path << "\n";
    return absl::OkStatus();
  }
  out << (absl::GetFlag(FLAGS_json) ? table.ToJson() : table.ToCsv());
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    mrc, {
             .name = "mrc",
             .summary = "miss-ratio curves: LRU for every size in one pass, other policies per size in parallel",
             .usage = "kvsim mrc --trace=T [--prefix] [--sample_rate=R] [--sizes=LIST] [--out=FILE.csv] [--json]\n"
                      "          [--policy=NAME[,NAME...] --sizes=LIST] [--block_tokens=16] [--threads=0]\n"
                      "          [--memory_limit=BYTES]",
             .details =
                 "LRU (the default --policy): stack distances from one pass (Fenwick tree, O(N log N)); without\n"
                 "--sizes the CSV has a row at every size where the curve changes (the curve is a step function),\n"
                 "with --sizes a row per listed size. --prefix adds the prefix-hit curve. --sample_rate=R < 1 uses\n"
                 "SHARDS spatial sampling (blocks whose hash falls below R; distances scaled by 1/R) for very long\n"
                 "traces. Its memory is about 100-240 bytes per tracked block and stays within --memory_limit: without\n"
                 "--sample_rate the curve is exact when it fits, else a count of the distinct blocks picks the largest\n"
                 "rate that fits (said on stderr); a given rate, or --prefix, that would exceed the limit is refused.\n"
                 "Blocks with at least --hot_share of all accesses (found by a pre-pass) are tracked exactly\n"
                 "beside the sample, and an error_bound column gives each point's estimated 3-sigma error\n"
                 "(sim/cache/mrc.h). Other policies: one cache replay per size and policy, on --threads threads; "
                 "results do not\n"
                 "depend on the thread count; the replays stream the trace in passes that fit --memory_limit\n"
                 "(default half the physical memory; estimates as in 'kvsim help cache'), Belady's over the trace\n"
                 "held in memory. --out here names the CSV file to write (atomically).",
             .flags = {"trace", "trace_format", "chain_hashes", "reorder_window", "trace_block_tokens",
                       "trace_timestamp_unit", "policy", "prefix", "sample_rate", "hot_share", "sizes", "config",
                       "block_tokens", "restore_cost", "threads", "out", "json", "memory_limit", "quiet"},
             .run = RunMrc,
         });

}  // namespace kvsim
