#include "sim/cache/mrc.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/mix64.h"
#include "util/prefetch.h"
#include "util/status_macros.h"
#include "util/stream_sketch.h"

// Data and invariants of MrcBuilder (true between Access calls):
// - Every tracked block has one LastTimeTable entry holding its latest time t, and exactly those times
//   have their bit set in bits_: markers_ == set bits == last_.size(), all below next_time_ <= capacity_.
//   owner_[t] is the table slot of the block marked at t (Grow's callback and Compact keep it so).
//   tree_[i] is the Fenwick sum over the words' popcounts.
// - Every distance is <= markers_ <= capacity_, so hits_ (capacity_ + 1 entries) never needs a check.
//   Token counts are kept as deficits against reference_tokens_, the first sampled access's tokens.
// Order in Access: the sampling test comes first (an unsampled access touches nothing); Compact runs
// before the lookup, so the time read from the table is in the current numbering; the distance is
// taken (markers_ - Prefix(t) + 1) before the old marker is cleared, then the new one is set at
// next_time_. For the prefix curve, one cold miss ends the request's prefix (request_cold_ stays set).
// Finish trims the histograms to the largest distance seen and makes them cumulative, so At() is O(1).
// Why it is fast (beyond the header's method):
// - Per access: one hash and compare for sampling, one probe of a table kept at load <= 1/2 (its line
//   prefetched kPrefetchDistance = 8 accesses ahead), a popcount plus O(log(time range / 64)) tree steps
//   for Prefix and for Add, and one histogram increment (the deficit map is touched only for accesses
//   whose tokens differ from the reference: with a full block as reference, partial last blocks only).
// - Compact is one scan of the bitmap, O(time range / 64 + live markers), and leaves at least 3 x live
//   accesses before the next (the range only grows, and >= 3/4 of it is free after): amortised O(1) per
//   access. tree_ is int32 and owner_ uint32, half the bytes of 64-bit entries.

namespace kvsim {
namespace {

constexpr uint64_t kSampleModulus = uint64_t{1} << 24;
// Accesses ahead whose table line is prefetched (covers a memory latency at a few hundred cycles each).
constexpr int64_t kPrefetchDistance = 8;
// Initial sizes of the block table (slots) and of the marker range (times).
constexpr int64_t kInitialTableSlots = int64_t{1} << 12;
constexpr int64_t kInitialTimeCapacity = int64_t{1} << 16;

void Accumulate(std::vector<int64_t>* histogram, size_t size) {
  for (size_t i = 1; i < histogram->size(); ++i) (*histogram)[i] += (*histogram)[i - 1];
}

}  // namespace

// Last access time of each tracked block: open addressing with linear probing over one flat array
// (no allocation per access; a probe touches one cache line, which Prefetch() can request early).
// An entry is empty iff its time is negative. Slots change only in Grow(), which reports each move.
class LastTimeTable {
 public:
  struct Entry {
    BlockId block;
    int64_t time;      // < 0: empty
    int64_t accesses;  // sampled accesses of the block so far (for the error bound's sum of squares)
  };

  LastTimeTable() { Reset(kInitialTableSlots); }

  void Prefetch(BlockId block) const { PrefetchForRead(&entries_[Home(block)]); }

  // The slot of `block`, inserting it with time -1 (the caller sets the time) if new; `inserted` says
  // which. May grow the table first: then `moved(slot)` runs for every live entry at its new slot. A growth
  // happens only if `may_grow(new_slots)` allows it; else -1 and nothing changes.
  template <typename Moved, typename MayGrow>
  int64_t FindOrInsert(BlockId block, bool* inserted, const Moved& moved, const MayGrow& may_grow) {
    for (int64_t s = Home(block);; s = (s + 1) & mask_) {
      Entry& e = entries_[s];
      if (e.time < 0) break;
      if (e.block == block) {
        *inserted = false;
        return s;
      }
    }
    if (2 * (size_ + 1) > num_slots()) {  // load <= 1/2
      if (!may_grow(2 * num_slots())) return -1;
      Grow(moved);
    }
    int64_t s = Home(block);
    while (entries_[s].time >= 0) s = (s + 1) & mask_;
    entries_[s] = Entry{block, -1, 0};
    ++size_;
    *inserted = true;
    return s;
  }

  Entry& at(int64_t slot) { return entries_[slot]; }
  int64_t size() const { return size_; }
  int64_t num_slots() const { return static_cast<int64_t>(entries_.size()); }

 private:
  int64_t Home(BlockId block) const {
    uint64_t h = (block ^ (block >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return static_cast<int64_t>((h ^ (h >> 29)) & static_cast<uint64_t>(mask_));
  }
  void Reset(int64_t num_slots) {
    entries_.assign(num_slots, Entry{0, -1, 0});
    mask_ = num_slots - 1;
  }
  template <typename Moved>
  void Grow(const Moved& moved) {
    std::vector<Entry> old = std::move(entries_);
    Reset(static_cast<int64_t>(old.size()) * 2);
    for (const Entry& e : old) {
      if (e.time < 0) continue;
      int64_t s = Home(e.block);
      while (entries_[s].time >= 0) s = (s + 1) & mask_;
      entries_[s] = e;
      moved(s);
    }
  }

  std::vector<Entry> entries_;
  int64_t mask_ = 0;
  int64_t size_ = 0;
};

namespace {

// Bytes of the builder's arrays: the block table and, per time of the marker range, owner_ (4), hits_ (8),
// bits_ (1/8) and tree_ (4/64); prefix_hits_ (8) with the prefix curve; hot_hits_, hot_bits_ and hot_tree_
// with hot blocks.
int64_t ArrayBytes(int64_t table_slots, int64_t time_capacity, bool prefix, bool hot) {
  const double per_time = sizeof(uint32_t) + sizeof(int64_t) + 1.0 / 8 + sizeof(int32_t) / 64.0 +
                          (prefix ? sizeof(int64_t) : 0) +
                          (hot ? sizeof(int64_t) + 1.0 / 8 + sizeof(int32_t) / 64.0 : 0);
  return table_slots * static_cast<int64_t>(sizeof(LastTimeTable::Entry)) +
         static_cast<int64_t>(std::ceil(per_time * static_cast<double>(time_capacity)));
}

}  // namespace

// Builds an LruMrc access by access (see the header comment for the method).
class MrcBuilder {
 public:
  // `max_array_bytes` > 0: no growth takes ArrayBytes (old and new arrays together while it runs) past it;
  // the builder stops instead (over_budget()).
  MrcBuilder(double sample_rate, bool prefix, const std::vector<BlockId>& hot_blocks, int64_t max_array_bytes = 0)
      : max_array_bytes_(max_array_bytes) {
    mrc_.sample_rate_ = sample_rate;
    mrc_.has_prefix_ = prefix;
    threshold_ = static_cast<uint64_t>(std::llround(sample_rate * kSampleModulus));
    if (sample_rate < 1) hot_.insert(hot_blocks.begin(), hot_blocks.end());  // exact anyway at rate 1
    mrc_.num_hot_blocks_ = static_cast<int64_t>(hot_.size());
    Rebuild(kInitialTimeCapacity);
  }

  // True once a growth was refused: the builder ignores further accesses and its curve is not valid.
  bool over_budget() const { return over_budget_; }
  int64_t tracked_blocks() const { return last_.size(); }
  // The arrays' bytes that the refused growth would have needed.
  int64_t refused_bytes() const { return refused_bytes_; }

  void BeginRequest() {
    request_max_ = 0;
    request_cold_ = false;
  }

  // Optional: asks for the table line `block` will probe (a later Access() finds it in cache).
  void Prefetch(BlockId block) const { last_.Prefetch(block); }

  void Access(BlockId block, int32_t tokens) {
    if (over_budget_) return;
    ++mrc_.total_accesses_;
    mrc_.total_tokens_ += tokens;
    const bool hot = !hot_.empty() && hot_.contains(block);
    if (!hot && threshold_ < kSampleModulus && (Mix64(block) & (kSampleModulus - 1)) >= threshold_) return;
    if (hot) {
      ++mrc_.hot_accesses_;
      mrc_.hot_tokens_ += tokens;
    } else {
      ++mrc_.accesses_;
      mrc_.tokens_ += tokens;
    }
    if (reference_tokens_ < 0) reference_tokens_ = tokens;
    if (next_time_ == capacity_ && !Compact()) return;
    bool inserted = false;
    const int64_t slot = last_.FindOrInsert(
        block, &inserted, [this](int64_t s) { owner_[last_.at(s).time] = static_cast<uint32_t>(s); },
        [this](int64_t new_slots) {
          return MayGrowTo(ArrayBytes(last_.num_slots() + new_slots, capacity_, WithPrefix(), WithHot()));
        });
    if (slot < 0) return;
    LastTimeTable::Entry& entry = last_.at(slot);
    int64_t& time = entry.time;
    int64_t distance = 0;  // 0 = cold miss (infinite distance)
    if (!inserted) {
      if (hot_.empty()) {
        distance = markers_ - Prefix(time) + 1;
      } else {
        // Sampled units: cold blocks between count 1 each, hot ones (and the block itself) R each.
        const int64_t since = markers_ - Prefix(time);
        const int64_t hot_since = hot_markers_ - PrefixIn(hot_bits_, hot_tree_, time);
        const double units = static_cast<double>(since - hot_since) + mrc_.sample_rate_ * (hot_since + 1);
        distance = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(units - 1e-9)));
      }
      Add(time, -1);  // clears its bit
      --markers_;
      if (hot) {
        AddIn(&hot_bits_, &hot_tree_, time, -1);
        --hot_markers_;
        Count(&hot_hits_, &hot_token_deficit_, distance, tokens);
      } else {
        Count(&hits_, &hit_token_deficit_, distance, tokens);
      }
    }
    if (!hot) {  // the sum over sampled blocks of accesses^2, incrementally: (a + 1)^2 - a^2 = 2a + 1
      mrc_.sampled_square_sum_ += 2 * entry.accesses + 1;
      ++entry.accesses;
    }
    time = next_time_;
    owner_[next_time_] = static_cast<uint32_t>(slot);
    if (hot) {
      AddIn(&hot_bits_, &hot_tree_, next_time_, +1);
      ++hot_markers_;
    }
    Add(next_time_++, +1);
    ++markers_;
    if (!mrc_.has_prefix_) return;
    if (distance == 0) request_cold_ = true;
    request_max_ = std::max(request_max_, distance);
    if (!request_cold_) {
      Count(&prefix_hits_, &prefix_token_deficit_, request_max_, tokens);
    }
  }

  LruMrc Finish() {
    // Histograms are sized by the largest distance seen plus one.
    size_t size = 1;
    for (size_t d = 0; d < hits_.size(); ++d) {
      if (hits_[d] || (d < prefix_hits_.size() && prefix_hits_[d]) || (d < hot_hits_.size() && hot_hits_[d])) {
        size = d + 1;
      }
    }
    Split(hits_, hit_token_deficit_, &mrc_.hits_, &mrc_.hit_tokens_, size);
    if (!hot_.empty()) Split(hot_hits_, hot_token_deficit_, &mrc_.hot_hits_, &mrc_.hot_hit_tokens_, size);
    Split(prefix_hits_, prefix_token_deficit_, &mrc_.prefix_hits_, &mrc_.prefix_hit_tokens_, size);
    mrc_.tracked_blocks_ = last_.size();
    return std::move(mrc_);
  }

 private:
  // Markers: one bit per time in `bits_` (64 times per word) and a Fenwick tree over the words' counts,
  // so the tree is 64 times smaller than the time range and stays in cache.
  void Add(int64_t time, int delta) { AddIn(&bits_, &tree_, time, delta); }
  int64_t Prefix(int64_t time) const { return PrefixIn(bits_, tree_, time); }  // markers at times <= time
  // The same on any bitmap and tree of num_words_ words (the hot blocks' markers have their own).
  void AddIn(std::vector<uint64_t>* bits, std::vector<int32_t>* tree, int64_t time, int delta) const {
    const int64_t word = time >> 6;
    (*bits)[word] ^= uint64_t{1} << (time & 63);
    for (int64_t i = word + 1; i <= num_words_; i += i & -i) (*tree)[i] += delta;
  }
  int64_t PrefixIn(const std::vector<uint64_t>& bits, const std::vector<int32_t>& tree, int64_t time) const {
    const int64_t word = time >> 6;
    const int bit = static_cast<int>(time & 63);
    const uint64_t mask = bit == 63 ? ~uint64_t{0} : (uint64_t{2} << bit) - 1;
    int64_t sum = __builtin_popcountll(bits[word] & mask);
    for (int64_t i = word; i > 0; i -= i & -i) sum += tree[i];
    return sum;
  }

  bool WithPrefix() const { return mrc_.has_prefix_; }
  bool WithHot() const { return !hot_.empty(); }
  // Whether a growth whose arrays total `bytes` is allowed; if not, the builder stops.
  bool MayGrowTo(int64_t bytes) {
    if (max_array_bytes_ <= 0 || bytes <= max_array_bytes_) return true;
    over_budget_ = true;
    refused_bytes_ = bytes;
    return false;
  }

  // Renumbers the live markers 0..D-1 (in time order) in a range of at least 4D times. The live times
  // are the set bits in increasing order and owner_ names each one's table slot, so no sort is needed;
  // new time i <= old time t, so owner_ is rewritten in place. False (nothing changed) if the range would
  // have to grow past the budget.
  bool Compact() {
    int64_t capacity = capacity_;
    // At least 4 times the live markers: the next compaction is >= 3 x D accesses away.
    while (capacity < 4 * markers_) capacity *= 2;
    if (capacity > capacity_ &&
        !MayGrowTo(ArrayBytes(last_.num_slots(), capacity_ + capacity, WithPrefix(), WithHot()))) {
      return false;
    }
    int64_t i = 0;
    for (int64_t w = 0; w < num_words_; ++w) {
      for (uint64_t word = bits_[w]; word != 0; word &= word - 1) {
        const int64_t t = (w << 6) + __builtin_ctzll(word);
        const uint32_t slot = owner_[t];
        last_.at(slot).time = i;
        owner_[i++] = slot;
      }
    }
    const int64_t live = i;  // == markers_
    Rebuild(capacity);
    for (int64_t t = 0; t < live; ++t) bits_[t >> 6] |= uint64_t{1} << (t & 63);
    BuildTree(bits_, &tree_);
    if (!hot_.empty()) {
      for (int64_t t = 0; t < live; ++t) {
        if (hot_.contains(last_.at(owner_[t]).block)) hot_bits_[t >> 6] |= uint64_t{1} << (t & 63);
      }
      BuildTree(hot_bits_, &hot_tree_);
    }
    next_time_ = live;
    return true;
  }

  void BuildTree(const std::vector<uint64_t>& bits, std::vector<int32_t>* tree) const {
    for (int64_t w = 0; w < num_words_; ++w) (*tree)[w + 1] = __builtin_popcountll(bits[w]);
    for (int64_t k = 1; k <= num_words_; ++k) {
      const int64_t j = k + (k & -k);
      if (j <= num_words_) (*tree)[j] += (*tree)[k];
    }
  }

  void Rebuild(int64_t capacity) {  // REQUIRES: capacity a multiple of 64
    capacity_ = capacity;
    num_words_ = capacity / 64;
    bits_.assign(num_words_, 0);
    tree_.assign(num_words_ + 1, 0);
    owner_.resize(capacity_);
    hits_.resize(capacity_ + 1, 0);
    if (mrc_.has_prefix_) prefix_hits_.resize(capacity_ + 1, 0);
    if (!hot_.empty()) {
      hot_bits_.assign(num_words_, 0);
      hot_tree_.assign(num_words_ + 1, 0);
      hot_hits_.resize(capacity_ + 1, 0);
    }
  }

  // Counts an access at `distance`. Tokens are kept as a deficit against reference_tokens_ (the first
  // access's), written only for partial blocks, so a full block costs one histogram write.
  void Count(std::vector<int64_t>* histogram, absl::flat_hash_map<int64_t, int64_t>* deficit, int64_t distance,
             int32_t tokens) {
    ++(*histogram)[distance];
    if (tokens != reference_tokens_) (*deficit)[distance] += reference_tokens_ - tokens;
  }

  void Split(const std::vector<int64_t>& counts, const absl::flat_hash_map<int64_t, int64_t>& deficit,
             std::vector<int64_t>* accesses, std::vector<int64_t>* tokens, size_t size) const {
    accesses->assign(counts.begin(), counts.begin() + std::min(size, counts.size()));
    accesses->resize(size, 0);
    tokens->assign(size, 0);
    for (size_t d = 0; d < size; ++d) (*tokens)[d] = (*accesses)[d] * reference_tokens_;
    for (const auto& [d, missing] : deficit) {
      if (d < static_cast<int64_t>(size)) (*tokens)[d] -= missing;
    }
    Accumulate(accesses, size);
    Accumulate(tokens, size);
  }

  LruMrc mrc_;
  int64_t max_array_bytes_ = 0;  // 0 = no budget
  bool over_budget_ = false;
  int64_t refused_bytes_ = 0;
  // Accesses by distance (index = distance; sized with the time range, which bounds every distance).
  std::vector<int64_t> hits_, prefix_hits_, hot_hits_;
  absl::flat_hash_map<int64_t, int64_t> hit_token_deficit_, prefix_token_deficit_, hot_token_deficit_;
  absl::flat_hash_set<BlockId> hot_;  // tracked exactly, outside the sample
  std::vector<uint64_t> hot_bits_;    // markers of the hot blocks only (same times as bits_)
  std::vector<int32_t> hot_tree_;
  int64_t hot_markers_ = 0;
  int32_t reference_tokens_ = -1;
  uint64_t threshold_ = kSampleModulus;
  std::vector<uint64_t> bits_;
  std::vector<int32_t> tree_;
  std::vector<uint32_t> owner_;  // owner_[t]: the table slot of the block whose marker is at time t
  int64_t num_words_ = 0;
  int64_t capacity_ = 0;
  int64_t next_time_ = 0;
  int64_t markers_ = 0;
  LastTimeTable last_;
  int64_t request_max_ = 0;
  bool request_cold_ = false;
};

int64_t LruMrc::CountAtMost(const std::vector<int64_t>& cumulative, int64_t capacity_blocks) const {
  if (cumulative.empty()) return 0;
  // d / R <= C  <=>  d <= C x R (up to rounding; exact when R = 1).
  const double limit = std::floor(static_cast<double>(capacity_blocks) * sample_rate_ + 1e-9);
  const int64_t index = std::min<int64_t>(static_cast<int64_t>(limit), cumulative.size() - 1);
  return index < 0 ? 0 : cumulative[index];
}

MrcPoint LruMrc::At(int64_t capacity_blocks) const {
  MrcPoint point;
  point.capacity_blocks = capacity_blocks;
  if (accesses_ == 0 && hot_accesses_ == 0) return point;
  if (num_hot_blocks_ == 0) {  // plain SHARDS (or exact): the sample's ratios
    point.hit_ratio = static_cast<double>(CountAtMost(hits_, capacity_blocks)) / accesses_;
    point.token_hit_ratio = static_cast<double>(CountAtMost(hit_tokens_, capacity_blocks)) / tokens_;
    if (has_prefix_) {
      point.prefix_hit_ratio = static_cast<double>(CountAtMost(prefix_hits_, capacity_blocks)) / accesses_;
      point.prefix_token_hit_ratio = static_cast<double>(CountAtMost(prefix_hit_tokens_, capacity_blocks)) / tokens_;
    }
  } else {  // the hot stratum counted exactly, the sampled one's ratio applied to the rest
    const double cold_accesses = static_cast<double>(total_accesses_ - hot_accesses_);
    const double cold_tokens = static_cast<double>(total_tokens_ - hot_tokens_);
    const double cold_hit = accesses_ > 0 ? static_cast<double>(CountAtMost(hits_, capacity_blocks)) / accesses_ : 0;
    const double cold_token_hit =
        tokens_ > 0 ? static_cast<double>(CountAtMost(hit_tokens_, capacity_blocks)) / tokens_ : 0;
    point.hit_ratio =
        (static_cast<double>(CountAtMost(hot_hits_, capacity_blocks)) + cold_accesses * cold_hit) / total_accesses_;
    point.token_hit_ratio =
        (static_cast<double>(CountAtMost(hot_hit_tokens_, capacity_blocks)) + cold_tokens * cold_token_hit) /
        total_tokens_;
  }
  point.error_bound = ErrorBound(capacity_blocks);
  return point;
}

double LruMrc::ErrorBound(int64_t capacity_blocks) const {
  if (sample_rate_ >= 1 || total_accesses_ == 0) return 0;
  const double r = sample_rate_;
  // Which blocks the hash samples: 3 x the standard error of the ratio estimator, with each sampled
  // block's residual bounded by its accesses x max(p, 1 - p).
  const double p = accesses_ > 0 ? static_cast<double>(CountAtMost(hits_, capacity_blocks)) / accesses_ : 0;
  const double selection = 3 * std::max(p, 1 - p) * std::sqrt((1 - r) * static_cast<double>(sampled_square_sum_)) /
                           (r * static_cast<double>(total_accesses_));
  // How far sampled distances stray: the curve's change between C (1 - d) and C (1 + d), d = 3 sigma of
  // a scaled count of C x R sampled blocks.
  const double spread = std::min(1.0, 3 * std::sqrt((1 - r) / std::max(1.0, capacity_blocks * r)));
  const int64_t low = static_cast<int64_t>(std::floor(capacity_blocks * (1 - spread)));
  const int64_t high = static_cast<int64_t>(std::ceil(capacity_blocks * (1 + spread)));
  auto ratio = [&](int64_t c) {
    const double cold_accesses = static_cast<double>(total_accesses_ - hot_accesses_);
    const double cold = accesses_ > 0 ? static_cast<double>(CountAtMost(hits_, c)) / accesses_ : 0;
    if (num_hot_blocks_ == 0) return cold;
    return (static_cast<double>(CountAtMost(hot_hits_, c)) + cold_accesses * cold) / total_accesses_;
  };
  return std::min(1.0, selection + ratio(high) - ratio(std::max<int64_t>(0, low)));
}

std::vector<MrcPoint> LruMrc::StepPoints() const {
  std::vector<MrcPoint> points;
  int64_t last_capacity = -1;
  for (size_t d = 1; d < hits_.size(); ++d) {
    const bool step = hits_[d] != hits_[d - 1] || (has_prefix_ && prefix_hits_[d] != prefix_hits_[d - 1]) ||
                      (num_hot_blocks_ > 0 && hot_hits_[d] != hot_hits_[d - 1]);
    if (!step) continue;
    const int64_t capacity = static_cast<int64_t>(std::ceil(d / sample_rate_ - 1e-9));
    if (capacity == last_capacity) continue;
    points.push_back(At(capacity));
    last_capacity = capacity;
  }
  return points;
}

namespace {

absl::Status ValidateMrcOptions(const MrcOptions& options) {
  // Below 1e-6 a trace of a billion block references keeps about a thousand: no curve to speak of.
  if (!(options.sample_rate >= 1e-6 && options.sample_rate <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("sample rate must be in [1e-6, 1], got ", options.sample_rate));
  }
  if (!(options.hot_share >= 0 && options.hot_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("hot share must be in [0, 1), got ", options.hot_share));
  }
  if (options.prefix && options.sample_rate < 1) {
    return absl::InvalidArgumentError(
        "the prefix-hit curve is exact only: sampling drops most of a request's leading blocks; use a "
        "sample rate of 1 with prefix");
  }
  return absl::OkStatus();
}

// The builder's array budget for a pass limit (0 = none). InvalidArgument below what the first arrays need.
absl::StatusOr<int64_t> ArrayBudget(const MrcOptions& options) {
  if (options.memory_limit_bytes <= 0) return 0;
  const int64_t budget = options.memory_limit_bytes - kPassOverheadBytes;
  const int64_t initial =
      ArrayBytes(kInitialTableSlots, kInitialTimeCapacity, options.prefix, !options.hot_blocks.empty());
  if (budget < initial) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory limit ", FormatBytes(static_cast<double>(options.memory_limit_bytes)),
                     " is below the one-pass LRU curve's minimum of ",
                     FormatBytes(static_cast<double>(kPassOverheadBytes + initial)), "; raise --memory_limit"));
  }
  return budget;
}

absl::Status OverBudgetError(const MrcBuilder& builder, const MrcOptions& options, int64_t num_requests) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the one-pass LRU curve at sample rate ", options.sample_rate, " tracks ", builder.tracked_blocks(),
                   " blocks after ", num_requests, " requests and would need ",
                   FormatBytes(static_cast<double>(kPassOverheadBytes + builder.refused_bytes())),
                   " to grow, over the memory limit ", FormatBytes(static_cast<double>(options.memory_limit_bytes)),
                   " (--memory_limit)"));
}

// The curve over `reader`. *stopped_tracked (may be null) tells a stop by the guard from other errors: the
// blocks tracked when it stopped, else -1.
absl::StatusOr<LruMrc> StreamLruMrc(TraceReader* reader, const CacheReplayOptions& replay, const MrcOptions& options,
                                    int64_t* stopped_tracked) {
  if (stopped_tracked != nullptr) *stopped_tracked = -1;
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(replay));
  KVSIM_RETURN_IF_ERROR(ValidateMrcOptions(options));
  KVSIM_ASSIGN_OR_RETURN(const int64_t budget, ArrayBudget(options));
  MrcBuilder builder(options.sample_rate, options.prefix, options.hot_blocks, budget);
  Request request;
  std::vector<int32_t> tokens;
  int64_t num_requests = 0;
  while ((replay.max_requests == 0 || num_requests < replay.max_requests) && reader->Next(&request)) {
    ++num_requests;
    KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(replay, &request));
    BlockTokens(request, &tokens);
    builder.BeginRequest();
    const std::vector<BlockId>& blocks = request.block_hashes;
    for (size_t k = 0; k < blocks.size(); ++k) {
      if (k + kPrefetchDistance < blocks.size()) builder.Prefetch(blocks[k + kPrefetchDistance]);
      builder.Access(blocks[k], tokens[k]);
    }
    if (builder.over_budget()) {
      if (stopped_tracked != nullptr) *stopped_tracked = builder.tracked_blocks();
      return OverBudgetError(builder, options, num_requests);
    }
    replay.ReportProgress(num_requests, replay.max_requests);
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  return builder.Finish();
}

// One pass: the distinct blocks into `distinct` (may be null) and, with hot_share > 0, the hot blocks into
// `hot` (Misra-Gries with k counters: each count is at most N / (k + 1) below the block's true count).
absl::Status ScanTrace(TraceReader* reader, const CacheReplayOptions& replay, double hot_share,
                       DistinctCounter* distinct, std::vector<BlockId>* hot) {
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(replay));
  if (!(hot_share >= 0 && hot_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("hot share must be in [0, 1), got ", hot_share));
  }
  const size_t k = hot_share > 0 ? static_cast<size_t>(std::ceil(2 / hot_share)) : 0;
  absl::flat_hash_map<BlockId, int64_t> counts;
  counts.reserve(k + 1);
  int64_t total = 0;
  Request request;
  int64_t num_requests = 0;
  while ((replay.max_requests == 0 || num_requests < replay.max_requests) && reader->Next(&request)) {
    ++num_requests;
    replay.ReportProgress(num_requests, replay.max_requests);
    KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(replay, &request));
    for (BlockId block : request.block_hashes) {
      if (distinct != nullptr) distinct->Add(block);
      if (k == 0) continue;
      ++total;
      auto it = counts.find(block);
      if (it != counts.end()) {
        ++it->second;
      } else if (counts.size() < k) {
        counts.emplace(block, 1);
      } else {  // decrement all (amortised O(1): the total count drops by k)
        for (auto c = counts.begin(); c != counts.end();) {
          if (--c->second == 0) {
            counts.erase(c++);
          } else {
            ++c;
          }
        }
      }
    }
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  // Every block with share >= hot_share has a count >= hot_share x N - N / (k + 1) > hot_share x N / 2.
  hot->clear();
  for (const auto& [block, count] : counts) {
    if (static_cast<double>(count) >= hot_share * static_cast<double>(total) / 2) hot->push_back(block);
  }
  std::sort(hot->begin(), hot->end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LruMrc> ComputeLruMrcOnTrace(const CompiledTrace& trace, const MrcOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateMrcOptions(options));
  KVSIM_ASSIGN_OR_RETURN(const int64_t budget, ArrayBudget(options));
  MrcBuilder builder(options.sample_rate, options.prefix, options.hot_blocks, budget);
  const int64_t num_accesses = static_cast<int64_t>(trace.blocks.size());
  for (int64_t r = 0; r < trace.num_requests(); ++r) {
    builder.BeginRequest();
    for (int64_t i = trace.request_begin[r]; i < trace.request_begin[r + 1]; ++i) {
      if (i + kPrefetchDistance < num_accesses) builder.Prefetch(trace.blocks[i + kPrefetchDistance]);
      builder.Access(trace.blocks[i], trace.tokens[i]);
    }
    if (builder.over_budget()) return OverBudgetError(builder, options, r + 1);
  }
  return builder.Finish();
}

absl::StatusOr<LruMrc> ComputeLruMrc(TraceReader* reader, const CacheReplayOptions& replay, const MrcOptions& options) {
  return StreamLruMrc(reader, replay, options, nullptr);
}

absl::StatusOr<std::vector<BlockId>> FindHotBlocks(TraceReader* reader, const CacheReplayOptions& replay,
                                                   double hot_share) {
  if (!(hot_share > 0 && hot_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("hot share must be in (0, 1), got ", hot_share));
  }
  std::vector<BlockId> hot;
  KVSIM_RETURN_IF_ERROR(ScanTrace(reader, replay, hot_share, nullptr, &hot));
  return hot;
}

int64_t EstimateLruMrcBytes(int64_t tracked_blocks, bool prefix, bool hot_blocks) {
  const int64_t n = std::max<int64_t>(0, tracked_blocks);
  // The table grows while 2 x size > slots; the marker range to at least 4 x the live markers (<= n).
  int64_t slots = kInitialTableSlots;
  while (slots < 2 * n) slots *= 2;
  int64_t capacity = kInitialTimeCapacity;
  while (capacity < 4 * n) capacity *= 2;
  int64_t peak = ArrayBytes(slots, capacity, prefix, hot_blocks);
  // The last growth of each holds the old (half-size) array beside the new one.
  if (slots > kInitialTableSlots) peak = std::max(peak, ArrayBytes(slots + slots / 2, capacity, prefix, hot_blocks));
  if (capacity > kInitialTimeCapacity) {
    peak = std::max(peak, ArrayBytes(slots, capacity + capacity / 2, prefix, hot_blocks));
  }
  // Finish: the cumulative histograms (accesses and tokens, <= n + 1 distances each) beside the arrays.
  const int64_t histograms = 1 + (prefix ? 1 : 0) + (hot_blocks ? 1 : 0);
  peak = std::max(peak, ArrayBytes(slots, capacity, prefix, hot_blocks) +
                            histograms * 2 * static_cast<int64_t>(sizeof(int64_t)) * (n + 1));
  return kPassOverheadBytes + peak;
}

int64_t MaxLruMrcTrackedBlocks(int64_t memory_limit_bytes, bool prefix, bool hot_blocks) {
  if (EstimateLruMrcBytes(0, prefix, hot_blocks) > memory_limit_bytes) return 0;
  // The estimate is non-decreasing in the blocks and above 24 bytes per block: bisect in [0, limit / 24].
  int64_t low = 0;                             // fits
  int64_t high = memory_limit_bytes / 24 + 1;  // does not
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    if (EstimateLruMrcBytes(mid, prefix, hot_blocks) <= memory_limit_bytes) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

int64_t ExpectedLruMrcTrackedBlocks(int64_t distinct_blocks, int64_t num_hot_blocks, double sample_rate) {
  if (sample_rate >= 1) return distinct_blocks;
  const double sampled = sample_rate * static_cast<double>(std::max<int64_t>(0, distinct_blocks - num_hot_blocks));
  return num_hot_blocks + static_cast<int64_t>(std::ceil(sampled + 3 * std::sqrt(sampled)));
}

absl::StatusOr<double> ChooseLruMrcSampleRate(int64_t distinct_blocks, int64_t num_hot_blocks,
                                              int64_t memory_limit_bytes) {
  const bool hot = num_hot_blocks > 0;
  const int64_t max_blocks = MaxLruMrcTrackedBlocks(memory_limit_bytes, /*prefix=*/false, hot);
  if (distinct_blocks <= max_blocks) return 1.0;
  // The largest multiple of 2^-24 whose expected tracked blocks fit (the expectation grows with the rate).
  const double modulus = static_cast<double>(kSampleModulus);
  const double cold = static_cast<double>(std::max<int64_t>(1, distinct_blocks - num_hot_blocks));
  const double room = static_cast<double>(max_blocks - num_hot_blocks) - 3 * std::sqrt(static_cast<double>(max_blocks));
  int64_t units = room > 0 ? static_cast<int64_t>(std::floor(room / cold * modulus)) : 0;
  units = std::min<int64_t>(units, static_cast<int64_t>(kSampleModulus) - 1);
  while (units > 0 && ExpectedLruMrcTrackedBlocks(distinct_blocks, num_hot_blocks, units / modulus) > max_blocks)
    --units;
  const double rate = units / modulus;
  if (rate < 1e-6) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory limit ", FormatBytes(static_cast<double>(memory_limit_bytes)), " holds ", max_blocks,
                     " tracked blocks, too few for the one-pass LRU curve of about ", distinct_blocks,
                     " distinct blocks even at sample rate 1e-6; raise --memory_limit"));
  }
  return rate;
}

absl::StatusOr<LruMrc> ComputeLruMrcWithinLimit(const TraceReopener& open, const CacheReplayOptions& replay,
                                                const MrcOptions& options, bool choose_rate, int64_t memory_limit_bytes,
                                                MrcMemoryPlan* plan_out) {
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(replay));
  MrcMemoryPlan local_plan;
  MrcMemoryPlan& plan = plan_out != nullptr ? *plan_out : local_plan;
  plan = MrcMemoryPlan();
  plan.memory_limit_bytes = memory_limit_bytes > 0 ? memory_limit_bytes : DefaultMemoryLimitBytes();
  if (!choose_rate) KVSIM_RETURN_IF_ERROR(ValidateMrcOptions(options));  // the caller's rate, as given
  MrcOptions run = options;
  run.memory_limit_bytes = plan.memory_limit_bytes;
  run.hot_blocks.clear();
  if (choose_rate) run.sample_rate = 1;
  KVSIM_RETURN_IF_ERROR(ValidateMrcOptions(run));
  // The counting pass: distinct blocks (upper value) and, for a sampled curve, the hot blocks.
  auto count = [&](bool want_hot) -> absl::Status {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open());
    DistinctCounter distinct;
    std::vector<BlockId> hot;
    ++plan.num_passes;
    KVSIM_RETURN_IF_ERROR(ScanTrace(reader.get(), replay, want_hot ? options.hot_share : 0, &distinct, &hot));
    plan.distinct_blocks = distinct.UpperCount();
    run.hot_blocks = std::move(hot);
    plan.num_hot_blocks = static_cast<int64_t>(run.hot_blocks.size());
    return absl::OkStatus();
  };
  auto curve = [&](int64_t* stopped) -> absl::StatusOr<LruMrc> {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open());
    ++plan.num_passes;
    plan.sample_rate = run.sample_rate;
    return StreamLruMrc(reader.get(), replay, run, stopped);
  };
  if (run.sample_rate < 1) {  // the caller's rate: checked against the limit before the curve's pass
    KVSIM_RETURN_IF_ERROR(count(/*want_hot=*/options.hot_share > 0));
    plan.tracked_blocks = ExpectedLruMrcTrackedBlocks(plan.distinct_blocks, plan.num_hot_blocks, run.sample_rate);
    plan.estimated_bytes = EstimateLruMrcBytes(plan.tracked_blocks, false, plan.num_hot_blocks > 0);
    if (plan.estimated_bytes > plan.memory_limit_bytes) {
      const absl::StatusOr<double> fits =
          ChooseLruMrcSampleRate(plan.distinct_blocks, plan.num_hot_blocks, plan.memory_limit_bytes);
      return absl::InvalidArgumentError(absl::StrCat(
          "--sample_rate=", run.sample_rate, " would track about ", plan.tracked_blocks, " of about ",
          plan.distinct_blocks, " distinct blocks, ", FormatBytes(static_cast<double>(plan.estimated_bytes)),
          " estimated, over the memory limit ", FormatBytes(static_cast<double>(plan.memory_limit_bytes)),
          fits.ok() ? absl::StrCat("; use --sample_rate=", absl::StrFormat("%.17g", *fits),
                                   " or less, or raise --memory_limit")
                    : "; raise --memory_limit"));
    }
    return curve(nullptr);
  }
  int64_t stopped_tracked = -1;
  absl::StatusOr<LruMrc> exact = curve(&stopped_tracked);
  if (stopped_tracked < 0) {
    if (exact.ok()) {
      plan.tracked_blocks = exact->tracked_blocks();
      plan.estimated_bytes = EstimateLruMrcBytes(plan.tracked_blocks, options.prefix, false);
    }
    return exact;
  }
  plan.exact_over_limit = true;
  const bool may_sample = choose_rate && !options.prefix;
  KVSIM_RETURN_IF_ERROR(count(/*want_hot=*/may_sample && options.hot_share > 0));
  // The stopped pass saw more blocks than the limit holds: a lower bound if the count came out low.
  plan.distinct_blocks = std::max(plan.distinct_blocks, stopped_tracked + 1);
  if (!may_sample) {
    const int64_t need = EstimateLruMrcBytes(plan.distinct_blocks, options.prefix, false);
    return absl::InvalidArgumentError(absl::StrCat(
        "the exact one-pass LRU curve", options.prefix ? " (--prefix)" : "", " of about ", plan.distinct_blocks,
        " distinct blocks needs about ", FormatBytes(static_cast<double>(need)), ", over the memory limit ",
        FormatBytes(static_cast<double>(plan.memory_limit_bytes)), "; raise --memory_limit to at least ", need,
        options.prefix ? "" : ", or leave --sample_rate unset to sample within the limit"));
  }
  KVSIM_ASSIGN_OR_RETURN(run.sample_rate,
                         ChooseLruMrcSampleRate(plan.distinct_blocks, plan.num_hot_blocks, plan.memory_limit_bytes));
  plan.tracked_blocks = ExpectedLruMrcTrackedBlocks(plan.distinct_blocks, plan.num_hot_blocks, run.sample_rate);
  plan.estimated_bytes = EstimateLruMrcBytes(plan.tracked_blocks, false, plan.num_hot_blocks > 0);
  return curve(nullptr);
}

std::string DescribeMrcMemoryPlan(const MrcMemoryPlan& plan) {
  const double per_block = plan.tracked_blocks > 0 ? static_cast<double>(plan.estimated_bytes - kPassOverheadBytes) /
                                                         static_cast<double>(plan.tracked_blocks)
                                                   : 0;
  const std::string tracked =
      absl::StrCat(plan.tracked_blocks, " blocks tracked at ", absl::StrFormat("%.0f", per_block), " bytes each, ",
                   FormatBytes(static_cast<double>(plan.estimated_bytes)), " estimated with the reader");
  const std::string limit = absl::StrCat("memory limit ", FormatBytes(static_cast<double>(plan.memory_limit_bytes)));
  if (plan.sample_rate >= 1) return absl::StrCat("exact curve: ", tracked, " (", limit, ")");
  return absl::StrCat("sample rate ", absl::StrFormat("%.17g", plan.sample_rate),
                      plan.exact_over_limit ? " chosen: the exact curve would exceed the " : " within the ", limit,
                      "; about ", plan.distinct_blocks, " distinct blocks (", plan.num_hot_blocks,
                      " hot ones tracked exactly), ", tracked, " (", plan.num_passes, " passes over the trace)");
}

}  // namespace kvsim
