#include "sim/cache/cache_batches.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policies/policy_factory.h"
#include "util/status_macros.h"
#include "util/stream_sketch.h"

// Data and invariants: plan->point_bytes[i] is the estimate of specs[i]; plan->batches partitions the
// indices 0..n-1 in increasing order; every batch's shared_bytes + sum of its points' estimates is within
// the limit, or the plan was refused. Results are written at their spec index, so the order of passes
// does not matter.
// Order: estimate with the capacities alone; if that needs more than one batch (or a point alone does not
// fit), count the distinct blocks in one pass and estimate again with them (the estimate only shrinks).
// A compiled trace is built once, before planning, and its size is then known exactly.

namespace kvsim {
namespace {

absl::StatusOr<int64_t> CountDistinctBlocks(TraceReader* reader, const CacheReplayOptions& options) {
  DistinctCounter counter;
  Request request;
  int64_t num_requests = 0;
  while ((options.max_requests == 0 || num_requests < options.max_requests) && reader->Next(&request)) {
    ++num_requests;
    KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(options, &request));
    for (BlockId block : request.block_hashes) counter.Add(block);
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  return counter.UpperCount();
}

void EstimateAll(const std::vector<CacheRunSpec>& specs, CacheBatchPlan* plan) {
  plan->point_bytes.clear();
  for (const CacheRunSpec& spec : specs) {
    plan->point_bytes.push_back(EstimatePointBytes(spec, plan->distinct_blocks, plan->compiled, plan->num_accesses));
  }
}

std::vector<CacheRunSpec> Select(const std::vector<CacheRunSpec>& specs, const std::vector<size_t>& batch) {
  std::vector<CacheRunSpec> selected;
  for (size_t i : batch) selected.push_back(specs[i]);
  return selected;
}

}  // namespace

std::string FormatBytes(double bytes) {
  if (bytes >= double{1 << 30}) return absl::StrFormat("%.2f GiB", bytes / (1 << 30));
  if (bytes >= double{1 << 20}) return absl::StrFormat("%.1f MiB", bytes / (1 << 20));
  if (bytes >= double{1 << 10}) return absl::StrFormat("%.1f KiB", bytes / (1 << 10));
  return absl::StrFormat("%.0f B", bytes);
}

int64_t BytesPerTrackedId(const proto::EvictionPolicyConfig& policy) {
  const std::string& name = policy.name();
  // Queue policies keep a 24-byte slot, its block and an index entry per id (util/block_hash_map.h: 16-byte
  // slots at most half full, and while it doubles its old table too: up to 132 bytes per id in all); the
  // ordered ones a B-tree of keys and a hash map of entries. Measured peak RSS per block of capacity on a
  // 100,000-request chat trace at 400,000 blocks and at 270,000 (the index just doubled): lru 67 / 87, sieve
  // 71 / 100, and with their ghosts (ids per block: IdsPerCapacity) arc 170 / 242, s3fifo 168 / 105, 2q 162 /
  // 106; lfu 67 at 400,000; earlier: gdsf 87, +leaf_first +92, +ttl +23 bytes. The constants are at or
  // above these.
  int64_t bytes = 136;
  for (const char* ordered : {"lfu", "gdsf", "asym", "belady", "leaf_lru"}) {
    if (absl::EqualsIgnoreCase(name, ordered)) bytes = 128;
  }
  if (policy.leaf_first()) bytes += 96;   // parent and child-count maps, the eligible B-tree
  if (policy.has_ttl_pin()) bytes += 64;  // resident set and pins
  return bytes;
}

double IdsPerCapacity(const proto::EvictionPolicyConfig& policy) {
  const std::string& name = policy.name();
  if (absl::EqualsIgnoreCase(name, "arc")) return 2.0;  // |T1| + |T2| + |B1| + |B2| <= 2c
  if (absl::EqualsIgnoreCase(name, "2q")) return 2.0;   // Kout = c / 2 ghost ids, in a second index
  if (absl::EqualsIgnoreCase(name, "s3fifo")) {         // the ghost queue: ghost_ratio x c, default M's share
    const double ghost = policy.has_s3fifo() && policy.s3fifo().ghost_ratio() > 0 ? policy.s3fifo().ghost_ratio() : 0.9;
    return 1.0 + ghost;
  }
  return 1.0;
}

int64_t EstimatePointBytes(const CacheRunSpec& spec, int64_t distinct_blocks, bool compiled, int64_t num_accesses) {
  double ids = std::ceil(static_cast<double>(spec.capacity_blocks) * IdsPerCapacity(spec.policy));
  if (distinct_blocks >= 0) ids = std::min(ids, static_cast<double>(distinct_blocks));
  double bytes = kPointOverheadBytes + ids * static_cast<double>(BytesPerTrackedId(spec.policy));
  if (compiled && distinct_blocks > 0) bytes += static_cast<double>(distinct_blocks) * kDenseBytesPerId;
  if (compiled && PolicyNeedsOracle(spec.policy)) bytes += static_cast<double>(num_accesses) * kOracleBytesPerAccess;
  return static_cast<int64_t>(std::min(bytes, 9e18));
}

int64_t DefaultMemoryLimitBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{4} << 30;
  return static_cast<int64_t>(pages) * page_size / 2;
}

absl::Status PlanCacheBatches(int64_t memory_limit_bytes, CacheBatchPlan* plan,
                              const std::vector<CacheRunSpec>& specs) {
  plan->batches.clear();
  const int64_t budget = memory_limit_bytes - plan->shared_bytes;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int64_t need = plan->point_bytes[i];
    if (need > budget) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "run %s @ %d needs an estimated %s (%s for the point, %s for the trace pass%s), more than "
          "--memory_limit=%s; raise --memory_limit or lower the capacity",
          PolicyLabel(specs[i].policy), specs[i].capacity_blocks,
          FormatBytes(static_cast<double>(need + plan->shared_bytes)), FormatBytes(static_cast<double>(need)),
          FormatBytes(static_cast<double>(plan->shared_bytes)), plan->compiled ? " and the compiled trace" : "",
          FormatBytes(static_cast<double>(memory_limit_bytes))));
    }
    int64_t used = 0;
    if (!plan->batches.empty()) {
      for (size_t j : plan->batches.back()) used += plan->point_bytes[j];
    }
    if (plan->batches.empty() || used + need > budget) plan->batches.emplace_back();
    plan->batches.back().push_back(i);
  }
  return absl::OkStatus();
}

std::string DescribeCacheBatchPlan(const CacheBatchPlan& plan, int64_t memory_limit_bytes) {
  int64_t largest = 0;
  for (int64_t b : plan.point_bytes) largest = std::max(largest, b);
  return absl::StrFormat(
      "%d points in %d %s (memory limit %s, largest point %s estimated)", plan.point_bytes.size(), plan.batches.size(),
      plan.compiled ? (plan.batches.size() == 1 ? "batch over the compiled trace" : "batches over the compiled trace")
                    : (plan.batches.size() == 1 ? "pass over the trace" : "passes over the trace"),
      FormatBytes(static_cast<double>(memory_limit_bytes)), FormatBytes(static_cast<double>(largest)));
}

absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplaysInBatches(const TraceReopener& open,
                                                                     const std::vector<CacheRunSpec>& specs,
                                                                     const CacheReplayOptions& options,
                                                                     const CacheBatchOptions& batch_options,
                                                                     CacheBatchPlan* plan_out) {
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(options));
  const int64_t limit =
      batch_options.memory_limit_bytes > 0 ? batch_options.memory_limit_bytes : DefaultMemoryLimitBytes();
  CacheBatchPlan local_plan;
  CacheBatchPlan& plan = plan_out != nullptr ? *plan_out : local_plan;
  plan = CacheBatchPlan();
  plan.shared_bytes = kPassOverheadBytes;
  for (const CacheRunSpec& spec : specs) plan.compiled |= PolicyNeedsOracle(spec.policy);
  std::vector<CacheRunResult> results(specs.size());
  if (plan.compiled) {  // one compiled trace for every batch
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open());
    KVSIM_ASSIGN_OR_RETURN(CompiledTrace trace, CompileTrace(reader.get(), options));
    reader.reset();
    plan.distinct_blocks = static_cast<int64_t>(trace.distinct_blocks.size());
    plan.num_accesses = trace.num_accesses();
    plan.shared_bytes +=
        trace.num_accesses() * kCompiledBytesPerAccess + plan.distinct_blocks * static_cast<int64_t>(sizeof(BlockId));
    EstimateAll(specs, &plan);
    KVSIM_RETURN_IF_ERROR(PlanCacheBatches(limit, &plan, specs));
    for (const std::vector<size_t>& batch : plan.batches) {
      KVSIM_ASSIGN_OR_RETURN(std::vector<CacheRunResult> part,
                             RunCacheReplaysOnTrace(&trace, Select(specs, batch), options));
      for (size_t k = 0; k < batch.size(); ++k) results[batch[k]] = std::move(part[k]);
    }
    return results;
  }
  EstimateAll(specs, &plan);
  const absl::Status fits = PlanCacheBatches(limit, &plan, specs);
  if (!fits.ok() || plan.batches.size() > 1) {  // the distinct blocks may bound the ids better
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open());
    KVSIM_ASSIGN_OR_RETURN(plan.distinct_blocks, CountDistinctBlocks(reader.get(), options));
    EstimateAll(specs, &plan);
    KVSIM_RETURN_IF_ERROR(PlanCacheBatches(limit, &plan, specs));
  }
  for (const std::vector<size_t>& batch : plan.batches) {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open());
    KVSIM_ASSIGN_OR_RETURN(std::vector<CacheRunResult> part,
                           RunCacheReplays(reader.get(), Select(specs, batch), options));
    for (size_t k = 0; k < batch.size(); ++k) results[batch[k]] = std::move(part[k]);
  }
  return results;
}

}  // namespace kvsim
