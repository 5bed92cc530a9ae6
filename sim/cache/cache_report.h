// File: sim/cache/cache_report.h
//
// Cache-replay results as protos (proto::CacheRunStats) and as table rows, shared by `kvsim cache`,
// `kvsim mrc` and `kvsim sweep` so that every output names and orders the columns the same way.
//
// Example:
//   Table table = CacheStatsTable({}, {});
//   AddCacheStatsRow(CacheRunStatsToProto(result), {}, &table);
//
// Thread-safety: functions of values.
#ifndef KVSIM_SIM_CACHE_CACHE_REPORT_H_
#define KVSIM_SIM_CACHE_CACHE_REPORT_H_

#include <string>
#include <vector>

#include "proto/sweep.pb.h"
#include "sim/cache/cache_simulator.h"
#include "util/table.h"

namespace kvsim {

proto::CacheRunStats CacheRunStatsToProto(const CacheRunResult& result);

// The miss ratio printed beside a hit ratio: 1 - hit_ratio, or 0 when nothing was accessed (a run without
// accesses has neither hits nor misses, and its hit ratio is 0 too).
double MissRatio(double hit_ratio, bool any_access);

// A table with `leading` columns (strings, e.g. grid coordinates) followed by the statistics columns:
// policy, capacity_blocks, requests, accesses, hits, hit_ratio, miss_ratio, prefix_hits, prefix_hit_ratio,
// tokens, hit_tokens, token_hit_ratio, token_miss_ratio, prefix_hit_tokens, prefix_token_hit_ratio, evictions,
// bypasses, restore_cost, restore_cost_saved, restore_cost_saved_ratio.
// `trailing` names numeric columns after the cache statistics (e.g. a sweep's replay summary), left
// empty by AddCacheStatsRow.
Table CacheStatsTable(const std::vector<std::string>& leading, const std::vector<std::string>& trailing = {});

// Appends `stats` with the `leading` cells. REQUIRES: leading.size() matches the table's.
void AddCacheStatsRow(const proto::CacheRunStats& stats, const std::vector<std::string>& leading, Table* table);

}  // namespace kvsim

#endif  // KVSIM_SIM_CACHE_CACHE_REPORT_H_
