#include "traces/trace_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/json_text.h"
#include "util/percentile.h"

// Data and invariants of ComputeTraceStats (true after each block access):
// - Fenwick position t (1-based) is the t-th block access of the trace and holds 1 exactly when that
//   access is still the latest one of its block; blocks maps each distinct id to its latest position and
//   access count. So the markers after a block's previous position count the distinct other blocks
//   accessed since.
// - `leading` is true from the start of a request until its first miss (first access of a block).
// Order per access: Append the new marker first, then take the distance as Prefix(now - 1) -
// Prefix(last_access) (the new marker is not counted), then clear the old marker. A first access
// records no distance. Percentiles come after the pass: each vector is sorted once and read by
// NearestRank (util/percentile.h), so Summarise's max is the last element.
// Why it is fast: one pass over the trace and O(log n) per access (n = block references so far): Append
// is two prefix sums and a push, the distance two prefix sums and one update. The tree keeps one int32
// per access and is never compacted (sim/cache/mrc.cc compacts its markers to O(distinct blocks));
// here the exact percentiles keep every distance and token count anyway.

namespace kvsim {
namespace {

constexpr int64_t kMinuteNs = 60'000'000'000;

// A Fenwick (binary indexed) tree over positions 1..n that grows one position at a time.
class GrowingFenwick {
 public:
  // Appends position n+1 with value `value`; returns its index.
  int64_t Append(int32_t value) {
    const int64_t i = static_cast<int64_t>(tree_.size());  // 1-based index of the new position
    // tree[i] covers (i - lowbit(i), i]: the sum of the covered old positions plus the new value.
    const int64_t low = i - (i & -i);
    tree_.push_back(static_cast<int32_t>(Prefix(i - 1) - Prefix(low)) + value);
    return i;
  }
  void Add(int64_t i, int32_t delta) {
    for (; i < static_cast<int64_t>(tree_.size()); i += i & -i) tree_[i] += delta;
  }
  int64_t Prefix(int64_t i) const {  // sum of positions 1..i
    int64_t sum = 0;
    for (; i > 0; i -= i & -i) sum += tree_[i];
    return sum;
  }

 private:
  std::vector<int32_t> tree_ = {0};  // tree_[0] unused
};

struct BlockState {
  int64_t last_access = 0;  // Fenwick position of the latest access
  int64_t accesses = 0;
  uint64_t predecessor = 0;       // the id before its first access in its request
  bool first_in_request = false;  // its first access was at position 0 (no predecessor)
  int64_t request_seen = -1;      // index of the request that accessed it last
};

Distribution Summarise(std::vector<int64_t>& values) {
  Distribution d;
  if (values.empty()) return d;
  long double sum = 0;
  for (int64_t v : values) sum += v;
  d.mean = static_cast<double>(sum / values.size());
  std::sort(values.begin(), values.end());
  d.p50 = NearestRank(values, 0.50);
  d.p90 = NearestRank(values, 0.90);
  d.p99 = NearestRank(values, 0.99);
  d.max = values.back();
  return d;
}

}  // namespace

absl::StatusOr<TraceStats> ComputeTraceStats(TraceReader& reader) {
  TraceStats stats;
  stats.path = reader.info().path;
  stats.format = reader.info().format;
  stats.block_tokens = reader.info().block_tokens;
  std::vector<int64_t> inputs, outputs, distances;
  absl::flat_hash_map<int64_t, int64_t> minute_counts;
  absl::flat_hash_set<int64_t> sessions;
  absl::flat_hash_map<uint64_t, BlockState> blocks;
  GrowingFenwick fenwick;
  int64_t hits = 0, prefix_hits = 0, first_arrival = 0, last_arrival = 0;
  Request r;
  while (reader.Next(&r)) {
    if (stats.num_requests == 0) first_arrival = r.arrival_ns;
    last_arrival = r.arrival_ns;
    ++stats.num_requests;
    ++minute_counts[(r.arrival_ns - first_arrival) / kMinuteNs];
    inputs.push_back(r.input_tokens);
    outputs.push_back(r.output_tokens);
    if (r.failed) ++stats.num_failed;
    if (r.session_id >= 0) {
      sessions.insert(r.session_id);
      ++stats.requests_in_sessions;
      stats.max_turn = std::max(stats.max_turn, r.turn);
    }
    bool leading = true;
    const int64_t request_index = stats.num_requests - 1;
    for (size_t k = 0; k < r.block_hashes.size(); ++k) {
      const uint64_t id = r.block_hashes[k];
      const int64_t tokens = r.block_tokens > 0 ? BlockTokensAt(r, static_cast<int64_t>(k)) : 0;
      stats.block_token_sum += tokens;
      if (stats.min_tokens_per_id == 0 || tokens < stats.min_tokens_per_id) stats.min_tokens_per_id = tokens;
      stats.max_tokens_per_id = std::max(stats.max_tokens_per_id, tokens);
      const int64_t now = fenwick.Append(1);
      auto [it, inserted] = blocks.try_emplace(id);
      BlockState& block = it->second;
      // Prefix-chained ids have one predecessor each, and an id never repeats inside a request.
      if (inserted) {
        block.first_in_request = k == 0;
        block.predecessor = k == 0 ? 0 : r.block_hashes[k - 1];
      } else if (block.request_seen == request_index) {
        ++stats.ids_repeated_in_request;
      } else if ((k == 0) != block.first_in_request || (k > 0 && block.predecessor != r.block_hashes[k - 1])) {
        ++stats.ids_with_other_predecessor;
      }
      block.request_seen = request_index;
      if (!inserted) {
        ++hits;
        if (leading) ++prefix_hits;
        // Distinct blocks whose latest access lies strictly between the previous access and now.
        const int64_t between = fenwick.Prefix(now - 1) - fenwick.Prefix(block.last_access);
        distances.push_back(between);
        fenwick.Add(block.last_access, -1);
      } else {
        leading = false;
      }
      block.last_access = now;
      ++block.accesses;
    }
    stats.block_references += static_cast<int64_t>(r.block_hashes.size());
  }
  if (!reader.status().ok()) return reader.status();
  stats.warnings = reader.warnings();
  stats.duration_ns = last_arrival - first_arrival;
  stats.mean_requests_per_minute = stats.duration_ns > 0
                                       ? stats.num_requests / (static_cast<double>(stats.duration_ns) / kMinuteNs)
                                       : static_cast<double>(stats.num_requests);
  for (const auto& [minute, count] : minute_counts) {
    stats.peak_requests_per_minute = std::max(stats.peak_requests_per_minute, count);
  }
  stats.input_tokens = Summarise(inputs);
  stats.output_tokens = Summarise(outputs);
  stats.num_sessions = static_cast<int64_t>(sessions.size());
  if (stats.num_sessions > 0) {
    stats.mean_requests_per_session = static_cast<double>(stats.requests_in_sessions) / stats.num_sessions;
  }
  stats.distinct_blocks = static_cast<int64_t>(blocks.size());
  stats.ids_look_chained = stats.ids_repeated_in_request == 0 && stats.ids_with_other_predecessor == 0;
  if (stats.block_references > 0) {
    stats.mean_tokens_per_id = static_cast<double>(stats.block_token_sum) / stats.block_references;
    stats.unbounded_hit_ratio = static_cast<double>(hits) / stats.block_references;
    stats.prefix_hit_ratio = static_cast<double>(prefix_hits) / stats.block_references;
  }
  int64_t reused = 0;
  for (const auto& [id, block] : blocks) reused += block.accesses >= 2;
  if (stats.distinct_blocks > 0) stats.reused_block_fraction = static_cast<double>(reused) / stats.distinct_blocks;
  stats.num_reuses = static_cast<int64_t>(distances.size());
  if (!distances.empty()) {
    std::sort(distances.begin(), distances.end());
    stats.stack_distance_p25 = NearestRank(distances, 0.25);
    stats.stack_distance_p50 = NearestRank(distances, 0.50);
    stats.stack_distance_p75 = NearestRank(distances, 0.75);
  }
  return stats;
}

std::string FormatTraceStats(const TraceStats& s) {
  std::string out;
  auto line = [&out](absl::string_view name, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("%-32s %s\n", name, value));
  };
  auto dist = [](const Distribution& d) {
    return absl::StrFormat("mean %.1f  p50 %d  p90 %d  p99 %d  max %d", d.mean, d.p50, d.p90, d.p99, d.max);
  };
  line("trace", absl::StrCat(s.path, " (", s.format, ")"));
  line("requests", absl::StrCat(s.num_requests));
  line("duration", absl::StrFormat("%.3f s", s.duration_ns / 1e9));
  line("arrival rate per minute",
       absl::StrFormat("mean %.2f  peak %d", s.mean_requests_per_minute, s.peak_requests_per_minute));
  line("input tokens", dist(s.input_tokens));
  line("output tokens", dist(s.output_tokens));
  if (s.num_failed > 0) line("failed requests", absl::StrCat(s.num_failed));
  if (s.num_sessions > 0) {
    line("sessions", absl::StrFormat("%d (%d requests, %.2f per session, max turn %d)", s.num_sessions,
                                     s.requests_in_sessions, s.mean_requests_per_session, s.max_turn));
  } else {
    line("sessions", "unknown (the trace has no session ids)");
  }
  if (s.block_references == 0) {
    line("blocks", "none (the trace has no block hashes)");
  } else {
    line("block size", absl::StrCat(s.block_tokens, " tokens"));
    line("tokens per id",
         absl::StrFormat("mean %.2f  min %d  max %d", s.mean_tokens_per_id, s.min_tokens_per_id, s.max_tokens_per_id));
    line("ids prefix-chained",
         s.ids_look_chained ? "yes (every id has one predecessor)"
                            : absl::StrFormat("no (%d accesses follow another predecessor, %d repeat in their request)",
                                              s.ids_with_other_predecessor, s.ids_repeated_in_request));
    line("block references", absl::StrCat(s.block_references));
    line("distinct blocks", absl::StrCat(s.distinct_blocks));
    line("unbounded-cache hit ratio", absl::StrFormat("%.3f", s.unbounded_hit_ratio));
    line("prefix-hit ratio", absl::StrFormat("%.3f", s.prefix_hit_ratio));
    line("blocks used twice or more", absl::StrFormat("%.3f", s.reused_block_fraction));
    line("LRU stack distance (blocks)",
         absl::StrFormat("p25 %d  p50 %d  p75 %d  (%d reuses; hit at +1)", s.stack_distance_p25, s.stack_distance_p50,
                         s.stack_distance_p75, s.num_reuses));
  }
  for (const std::string& w : s.warnings) line("warning", w);
  return out;
}

std::string FormatTraceStatsJson(const TraceStats& s) {
  auto dist = [](const Distribution& d) {
    Json j = Json::object();
    j["mean"] = JsonNumberOrNull(d.mean);
    j["p50"] = d.p50;
    j["p90"] = d.p90;
    j["p99"] = d.p99;
    j["max"] = d.max;
    return j;
  };
  Json j = Json::object();
  j["path"] = s.path;
  j["format"] = s.format;
  j["block_tokens"] = s.block_tokens;
  j["requests"] = s.num_requests;
  j["duration_ns"] = s.duration_ns;
  j["mean_requests_per_minute"] = JsonNumberOrNull(s.mean_requests_per_minute);
  j["peak_requests_per_minute"] = s.peak_requests_per_minute;
  j["input_tokens"] = dist(s.input_tokens);
  j["output_tokens"] = dist(s.output_tokens);
  j["failed_requests"] = s.num_failed;
  j["sessions"] = s.num_sessions;
  j["requests_in_sessions"] = s.requests_in_sessions;
  j["mean_requests_per_session"] = JsonNumberOrNull(s.mean_requests_per_session);
  j["max_turn"] = s.max_turn;
  j["block_references"] = s.block_references;
  j["distinct_blocks"] = s.distinct_blocks;
  j["unbounded_hit_ratio"] = JsonNumberOrNull(s.unbounded_hit_ratio);
  j["prefix_hit_ratio"] = JsonNumberOrNull(s.prefix_hit_ratio);
  j["reused_block_fraction"] = JsonNumberOrNull(s.reused_block_fraction);
  j["reuses"] = s.num_reuses;
  j["stack_distance"] = {{"p25", s.stack_distance_p25}, {"p50", s.stack_distance_p50}, {"p75", s.stack_distance_p75}};
  j["tokens_per_id"] = {
      {"mean", JsonNumberOrNull(s.mean_tokens_per_id)}, {"min", s.min_tokens_per_id}, {"max", s.max_tokens_per_id}};
  j["ids_look_chained"] = s.ids_look_chained;
  j["ids_with_other_predecessor"] = s.ids_with_other_predecessor;
  j["ids_repeated_in_request"] = s.ids_repeated_in_request;
  j["warnings"] = s.warnings;
  return DumpJson(j);
}

}  // namespace kvsim
