#include "traces/trace_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/json_text.h"
#include "util/stream_sketch.h"

// Data and invariants of ComputeTraceStats (true after each block access):
// - Every block whose hash group (the bit length of SampleBits(id), 0..24) is <= level_ is sampled;
//   `blocks` holds exactly the sampled blocks seen so far (at most max_tracked_blocks), and groups_[g]
//   the statistics of group g's accesses. Lowering level_ from k to k - 1 drops group k: its blocks and its
//   statistics, so what remains is exactly what a sampler at the lower rate would have kept (the groups
//   nest). At level 24 every block is sampled and every figure is exact.
// - Marker time t (1-based) holds 1 exactly when it is the latest access of a sampled block; each block's
//   last_access is that time. So the markers after a block's previous time count the distinct other
//   sampled blocks accessed since. Times run up to the tree's capacity; then Compact renumbers the live
//   markers 1..live in time order into a tree of at least 4 x live times.
// - `leading` is true from the start of a request until its first sampled miss.
// Order per access: the exact counters; the sampling test; a new block first makes room (LowerLevel) and is
// dropped if its group went with it; Compact if the times are used up (before the block's time is read);
// the new marker, then the distance Prefix(now - 1) - Prefix(last_access), scaled by 1 / rate, then the old
// marker cleared. A first access records no distance.
// Why it is bounded: blocks and markers are O(max_tracked_blocks), the sketches O(their exact limits) each
// (util/stream_sketch.h), the minute counts O(the trace's duration in minutes). Why it is fast: O(log n)
// per sampled access (n = the tree's capacity), Compact amortised O(1) per access (it leaves >= 3 x live
// free times), LowerLevel rare (each halves the tracked blocks).

namespace kvsim {
namespace {

constexpr int64_t kMinuteNs = 60'000'000'000;
constexpr int kFullLevel = 24;  // sample bits

uint64_t SampleBits(uint64_t id) { return Mix64(id) >> (64 - kFullLevel); }  // top 24 bits

int GroupOf(uint64_t id) {
  const uint64_t bits = SampleBits(id);
  return bits == 0 ? 0 : 64 - __builtin_clzll(bits);
}

// A Fenwick (binary indexed) tree over times 1..capacity.
class Fenwick {
 public:
  explicit Fenwick(int64_t capacity = 0) : tree_(capacity + 1, 0) {}
  int64_t capacity() const { return static_cast<int64_t>(tree_.size()) - 1; }
  void Add(int64_t i, int32_t delta) {
    for (; i < static_cast<int64_t>(tree_.size()); i += i & -i) tree_[i] += delta;
  }
  int64_t Prefix(int64_t i) const {  // sum of times 1..i
    int64_t sum = 0;
    for (; i > 0; i -= i & -i) sum += tree_[i];
    return sum;
  }
  // Ones at 1..n, zeros after, in O(capacity).
  void SetFirst(int64_t n) {
    std::fill(tree_.begin(), tree_.end(), 0);
    for (int64_t i = 1; i <= capacity(); ++i) {
      const int64_t low = i - (i & -i);  // tree[i] covers (low, i]
      tree_[i] = static_cast<int32_t>(std::max<int64_t>(0, std::min(i, n) - low));
    }
  }

 private:
  std::vector<int32_t> tree_;  // tree_[0] unused
};

struct BlockState {
  int64_t last_access = 0;  // marker time of the latest access
  int64_t accesses = 0;
  uint64_t predecessor = 0;       // the id before its first access in its request
  int64_t request_seen = -1;      // index of the request that accessed it last
  bool first_in_request = false;  // its first access was at position 0 (no predecessor)
  uint8_t group = 0;
};

struct GroupStats {
  explicit GroupStats(int64_t exact_values) : distances(exact_values) {}
  int64_t prefix_hits = 0;
  int64_t other_predecessor = 0;
  int64_t repeated_in_request = 0;
  QuantileSketch distances;
};

Distribution Summarise(const QuantileSketch& values) {
  Distribution d;
  if (values.count() == 0) return d;
  d.mean = values.Mean();
  d.p50 = values.Quantile(0.50);
  d.p90 = values.Quantile(0.90);
  d.p99 = values.Quantile(0.99);
  d.max = values.max();
  return d;
}

class StatsBuilder {
 public:
  explicit StatsBuilder(const TraceStatsOptions& options)
      : options_(options),
        inputs_(options.exact_quantile_values),
        outputs_(options.exact_quantile_values),
        sessions_(options.exact_distinct_values),
        distinct_(options.exact_distinct_values),
        markers_(int64_t{1} << 12) {
    for (int g = 0; g <= kFullLevel; ++g) groups_.emplace_back(options.exact_quantile_values);
  }

  void AddRequest(const Request& r, TraceStats* stats) {
    if (stats->num_requests == 0) first_arrival_ = r.arrival_ns;
    last_arrival_ = r.arrival_ns;
    ++stats->num_requests;
    ++minute_counts_[(r.arrival_ns - first_arrival_) / kMinuteNs];
    inputs_.Add(r.input_tokens);
    outputs_.Add(r.output_tokens);
    if (r.failed) ++stats->num_failed;
    if (r.session_id >= 0) {
      sessions_.Add(static_cast<uint64_t>(r.session_id));
      ++stats->requests_in_sessions;
      stats->max_turn = std::max(stats->max_turn, r.turn);
    }
    bool leading = true;
    const int64_t request_index = stats->num_requests - 1;
    for (size_t k = 0; k < r.block_hashes.size(); ++k) {
      const uint64_t id = r.block_hashes[k];
      const int64_t tokens = r.block_tokens > 0 ? BlockTokensAt(r, static_cast<int64_t>(k)) : 0;
      stats->block_token_sum += tokens;
      if (stats->min_tokens_per_id == 0 || tokens < stats->min_tokens_per_id) stats->min_tokens_per_id = tokens;
      stats->max_tokens_per_id = std::max(stats->max_tokens_per_id, tokens);
      distinct_.Add(id);
      const int group = GroupOf(id);
      if (group > level_) continue;
      auto it = blocks_.find(id);
      const bool inserted = it == blocks_.end();
      if (inserted) {
        if (static_cast<int64_t>(blocks_.size()) >= options_.max_tracked_blocks) {
          LowerLevel();
          if (group > level_) continue;
        }
        it = blocks_.try_emplace(id).first;
        it->second.group = static_cast<uint8_t>(group);
      }
      if (next_time_ > markers_.capacity()) Compact();
      BlockState& block = it->second;
      GroupStats& g = groups_[group];
      // Prefix-chained ids have one predecessor each, and an id never repeats inside a request.
      if (inserted) {
        block.first_in_request = k == 0;
        block.predecessor = k == 0 ? 0 : r.block_hashes[k - 1];
      } else if (block.request_seen == request_index) {
        ++g.repeated_in_request;
      } else if ((k == 0) != block.first_in_request || (k > 0 && block.predecessor != r.block_hashes[k - 1])) {
        ++g.other_predecessor;
      }
      block.request_seen = request_index;
      const int64_t now = next_time_++;
      markers_.Add(now, +1);
      if (!inserted) {
        if (leading) ++g.prefix_hits;
        // Distinct sampled blocks whose latest access lies strictly between the previous access and now,
        // each standing for 1 / rate blocks.
        const int64_t between = markers_.Prefix(now - 1) - markers_.Prefix(block.last_access);
        g.distances.Add(between << (kFullLevel - level_));
        markers_.Add(block.last_access, -1);
      } else {
        leading = false;
      }
      block.last_access = now;
      ++block.accesses;
    }
    stats->block_references += static_cast<int64_t>(r.block_hashes.size());
  }

  void Finish(TraceStats* stats) {
    stats->duration_ns = last_arrival_ - first_arrival_;
    stats->mean_requests_per_minute = stats->duration_ns > 0
                                          ? stats->num_requests / (static_cast<double>(stats->duration_ns) / kMinuteNs)
                                          : static_cast<double>(stats->num_requests);
    for (const auto& [minute, count] : minute_counts_) {
      stats->peak_requests_per_minute = std::max(stats->peak_requests_per_minute, count);
    }
    stats->input_tokens = Summarise(inputs_);
    stats->output_tokens = Summarise(outputs_);
    stats->num_sessions = sessions_.Count();
    if (stats->num_sessions > 0) {
      stats->mean_requests_per_session = static_cast<double>(stats->requests_in_sessions) / stats->num_sessions;
    }
    stats->distinct_blocks = std::min(distinct_.Count(), stats->block_references);
    // Every access to a block seen before is a reuse, and an unbounded cache hit.
    stats->num_reuses = stats->block_references - stats->distinct_blocks;
    const double scale = std::ldexp(1.0, kFullLevel - level_);  // 1 / rate
    int64_t sampled_accesses = 0, reused = 0;
    long double square_sum = 0;
    for (const auto& [id, block] : blocks_) {
      sampled_accesses += block.accesses;
      square_sum += static_cast<long double>(block.accesses) * block.accesses;
      reused += block.accesses >= 2;
    }
    int64_t prefix_hits = 0, other_predecessor = 0, repeated = 0;
    QuantileSketch distances(options_.exact_quantile_values);
    for (int g = 0; g <= level_; ++g) {
      prefix_hits += groups_[g].prefix_hits;
      other_predecessor += groups_[g].other_predecessor;
      repeated += groups_[g].repeated_in_request;
      distances.Merge(groups_[g].distances);
    }
    stats->ids_with_other_predecessor = std::llround(other_predecessor * scale);
    stats->ids_repeated_in_request = std::llround(repeated * scale);
    stats->ids_look_chained = stats->ids_repeated_in_request == 0 && stats->ids_with_other_predecessor == 0;
    if (stats->block_references > 0) {
      stats->mean_tokens_per_id = static_cast<double>(stats->block_token_sum) / stats->block_references;
      stats->unbounded_hit_ratio = static_cast<double>(stats->num_reuses) / stats->block_references;
    }
    // The prefix hits as a share of the reuses (exact at rate 1: prefix_hits / references), so a sample
    // estimates only that share and the reuses come from the distinct-block count.
    const int64_t sampled_hits = sampled_accesses - static_cast<int64_t>(blocks_.size());
    if (sampled_hits > 0 && stats->block_references > 0) {
      stats->prefix_hit_ratio = level_ == kFullLevel ? static_cast<double>(prefix_hits) / stats->block_references
                                                     : stats->unbounded_hit_ratio * prefix_hits / sampled_hits;
    }
    if (!blocks_.empty()) stats->reused_block_fraction = static_cast<double>(reused) / blocks_.size();
    if (distances.count() > 0) {
      stats->stack_distance_p25 = distances.Quantile(0.25);
      stats->stack_distance_p50 = distances.Quantile(0.50);
      stats->stack_distance_p75 = distances.Quantile(0.75);
    }
    // What is approximate, with its bound.
    auto note = [&](const std::string& figure, const std::string& how) { stats->approximate.push_back({figure, how}); };
    const std::string sketch =
        absl::StrFormat("within %.0f%% + 0.5 of the exact nearest-rank value (log-bucket sketch)",
                        100 * QuantileSketch::kQuantileRelativeError);
    if (!inputs_.exact()) note("input_tokens", absl::StrCat("percentiles ", sketch));
    if (!outputs_.exact()) note("output_tokens", absl::StrCat("percentiles ", sketch));
    const std::string hll = absl::StrFormat("HyperLogLog estimate, relative standard error %.2f%%",
                                            100 * DistinctCounter::kRelativeStandardError);
    if (!sessions_.exact()) note("sessions", hll);
    if (!distinct_.exact()) {
      note("distinct_blocks", hll);
      note("unbounded_hit_ratio", "1 - distinct_blocks / block_references, with the distinct-block estimate");
    }
    stats->block_sample_rate = 1 / scale;
    if (level_ < kFullLevel && stats->block_references > 0) {
      // 3 standard errors of a ratio estimator under independent inclusion of each block (residuals bounded
      // by its accesses): 3 sqrt((1 - R) sum a_i^2) / (R N).
      const double rate = 1 / scale;
      stats->block_sample_error =
          3 * std::sqrt(static_cast<double>((1 - rate) * square_sum)) / (rate * stats->block_references);
      const std::string sampled =
          absl::StrFormat("from a spatial sample of %d blocks (rate %.4g, SHARDS)", blocks_.size(), rate);
      const double p = stats->reused_block_fraction;
      note("prefix_hit_ratio", absl::StrFormat("unbounded hit ratio x the leading share of the hits %s, 3-sigma "
                                               "error %.4f",
                                               sampled, stats->block_sample_error));
      note("reused_block_fraction", absl::StrFormat("%s, 3-sigma error %.4f", sampled,
                                                    3 * std::sqrt(p * (1 - p) * (1 - rate) / blocks_.size())));
      note("ids_with_other_predecessor", absl::StrCat("counts scaled by 1 / rate ", sampled));
      note("stack_distance",
           absl::StrFormat("distances scaled by 1 / rate %s: the share of reuses up to a quartile v is within %.4f of "
                           "its rank, at v (1 +- (1%% + 3 sqrt((1 - R) / (R v))))",
                           sampled, stats->block_sample_error));
    } else if (!distances.exact()) {
      note("stack_distance", absl::StrCat("quartiles ", sketch));
    }
  }

 private:
  // Drops the highest sampled group (halving the rate) until there is room for one more block, then
  // renumbers the markers.
  void LowerLevel() {
    while (level_ > 0 && static_cast<int64_t>(blocks_.size()) >= options_.max_tracked_blocks) {
      const int dropped = level_--;
      absl::erase_if(blocks_, [dropped](const auto& entry) { return entry.second.group == dropped; });
      groups_[dropped] = GroupStats(options_.exact_quantile_values);
    }
    Compact();
  }

  // Renumbers the live markers 1..live in time order, in a tree of at least 4 x live times.
  void Compact() {
    std::vector<std::pair<int64_t, BlockState*>> live;
    live.reserve(blocks_.size());
    for (auto& [id, block] : blocks_) live.push_back({block.last_access, &block});
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < live.size(); ++i) live[i].second->last_access = static_cast<int64_t>(i) + 1;
    const int64_t capacity =
        std::max<int64_t>({int64_t{1} << 12, 4 * static_cast<int64_t>(live.size()), markers_.capacity()});
    if (capacity != markers_.capacity()) markers_ = Fenwick(capacity);
    markers_.SetFirst(static_cast<int64_t>(live.size()));
    next_time_ = static_cast<int64_t>(live.size()) + 1;
  }

  TraceStatsOptions options_;
  QuantileSketch inputs_, outputs_;
  DistinctCounter sessions_, distinct_;
  absl::flat_hash_map<int64_t, int64_t> minute_counts_;
  absl::flat_hash_map<uint64_t, BlockState> blocks_;
  std::vector<GroupStats> groups_;
  Fenwick markers_;
  int64_t next_time_ = 1;
  int level_ = kFullLevel;
  int64_t first_arrival_ = 0, last_arrival_ = 0;
};

}  // namespace

absl::StatusOr<TraceStats> ComputeTraceStats(TraceReader& reader, const TraceStatsOptions& options) {
  if (options.max_tracked_blocks < 1 || options.exact_distinct_values < 0 || options.exact_quantile_values < 0) {
    return absl::InvalidArgumentError("trace statistics: the exact limits must be >= 0 (tracked blocks >= 1)");
  }
  TraceStats stats;
  stats.path = reader.info().path;
  stats.format = reader.info().format;
  stats.block_tokens = reader.info().block_tokens;
  StatsBuilder builder(options);
  Request r;
  while (reader.Next(&r)) builder.AddRequest(r, &stats);
  if (!reader.status().ok()) return reader.status();
  stats.warnings = reader.warnings();
  builder.Finish(&stats);
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
  for (const auto& [figure, how] : s.approximate) line("approximate", absl::StrCat(figure, ": ", how));
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
  if (!s.approximate.empty()) {  // only when some figure is an estimate (exact output keeps its keys)
    Json approximate = Json::object();
    for (const auto& [figure, how] : s.approximate) approximate[figure] = how;
    j["approximate"] = approximate;
  }
  return DumpJson(j);
}

}  // namespace kvsim
