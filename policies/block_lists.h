// File: policies/block_lists.h
//
// BlockLists: doubly-linked lists of blocks threaded through one array of slots (index links, no
// allocation per operation), with a flat hash map from BlockId to slot (with dense ids, the slots indexed
// by id, no map: UseDenseIds). The building block of the
// queue-based policies (LRU, FIFO, CLOCK, SIEVE, 2Q, S3-FIFO, ARC): every operation is O(1).
//
// A block is in at most one of the `num_lists` lists. Each list has a front (most recent insert when
// used with PushFront) and a back. Each slot carries a small user field (`mark`: a reference bit, a
// frequency counter).
//
// Example (LRU):
//   BlockLists lists(1);
//   lists.PushFront(0, block);              // insert
//   lists.MoveToFront(lists.Find(block));   // hit
//   for (int32_t s = lists.Back(0); s != kNoSlot; s = lists.Prev(s)) ...  // victim search
//
// Eligible view (for wrappers that restrict the victims to a subset that changes, as leaf-first does):
// after EnableEligibility(lists), each slot has an eligible flag (true when its block is added) and the
// eligible slots of each of those lists are kept in list order in a B-tree. While SetEligibleView(true),
// LastMatching and the *Eligible walks visit only eligible slots: O(log n) per step instead of passing
// over every ineligible one. The flag survives moves between lists; each link or unlink of an eligible
// slot in a tracked list costs O(log n). Without EnableEligibility nothing of this is kept or paid.
//
// Thread-safety: none; one owner.
#ifndef KVSIM_POLICIES_BLOCK_LISTS_H_
#define KVSIM_POLICIES_BLOCK_LISTS_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/types/optional.h"
#include "policies/eviction_policy.h"
#include "util/block_hash_map.h"
#include "util/check.h"
#include "util/prefetch.h"

namespace kvsim {

constexpr int32_t kNoSlot = -1;

class BlockLists {
 public:
  explicit BlockLists(int num_lists) : heads_(num_lists, kNoSlot), tails_(num_lists, kNoSlot), sizes_(num_lists, 0) {}

  // Preallocates room for `num_blocks` blocks, at most 2^24 (an optimisation only: a capacity far beyond
  // any trace's blocks must not allocate for it).
  void Reserve(int64_t num_blocks) {
    const size_t n = static_cast<size_t>(std::clamp<int64_t>(num_blocks, 0, int64_t{1} << 24));
    if (!identity_) {
      slots_.reserve(n);
      blocks_.reserve(n);
    }
  }

  // Dense ids: every block from now on is < num_ids, and each block's slot is the block itself: the
  // slots are an array of num_ids entries indexed by id, with no index in front of them (cache replay
  // over a compiled trace; the serving simulator's slot ids, as many as the cache holds blocks). A hit
  // then reads one entry, which Prefetch() loads ahead, and a prompt's blocks, numbered in order of first
  // use, have neighbouring entries. Memory: sizeof(PolicySlot) = 16 bytes per id, whatever the capacity.
  // The lists' order, and so every result, is the same as with hashes. With `storage`, the slots are the
  // caller's (EvictionPolicy::SetDenseIdStorage's contract: id b's at (char*)storage + b * stride_bytes,
  // zero until b is first added), so a cache's record of a block and the block's slot share a cache line;
  // without, the lists keep their own array. REQUIRES: before the first block; stride_bytes a power of
  // two >= sizeof(PolicySlot).
  void UseDenseIds(int64_t num_ids, PolicySlot* storage = nullptr, size_t stride_bytes = sizeof(PolicySlot)) {
    KVSIM_CHECK(!any_added_) << "UseDenseIds after the first block";
    KVSIM_CHECK(stride_bytes >= sizeof(PolicySlot) && (stride_bytes & (stride_bytes - 1)) == 0)
        << "dense-id slot stride " << stride_bytes;
    identity_ = num_ids > 0;
    if (!identity_) return;
    num_slots_ = num_ids;
    index_ = BlockHashMap<int32_t, kNoSlot>();
    std::vector<BlockId>().swap(blocks_);  // frees what Reserve took (assigning {} keeps the capacity)
    if (storage == nullptr) {
      slots_.assign(static_cast<size_t>(num_ids), PolicySlot{});  // zero: in no list
      SetBase(slots_.data(), sizeof(PolicySlot));
    } else {
      std::vector<PolicySlot>().swap(slots_);
      SetBase(storage, stride_bytes);
    }
  }

  // The slot of `block`, or kNoSlot if it is in no list.
  int32_t Find(BlockId block) const {
    if (identity_) return At(static_cast<int32_t>(block)).words[kList] != 0 ? static_cast<int32_t>(block) : kNoSlot;
    const int32_t* s = index_.Find(block);
    return s == nullptr ? kNoSlot : *s;
  }
  bool Contains(BlockId block) const { return Find(block) != kNoSlot; }
  // Starts loading the index entry Find(block) will read (a hint; no effect on the lists).
  void Prefetch(BlockId block) const {
    if (identity_) {
      PrefetchForRead(&At(static_cast<int32_t>(block)));
    } else {
      index_.Prefetch(block);
    }
  }

  // Adds `block` at the front (or back) of `list`; returns its slot. REQUIRES: block in no list.
  int32_t PushFront(int list, BlockId block) {
    int32_t s = NewSlot(block);
    LinkFront(list, s);
    return s;
  }
  int32_t PushBack(int list, BlockId block) {
    int32_t s = NewSlot(block);
    LinkBack(list, s);
    return s;
  }

  // Moves slot `s` to the front of `list` (its own list by default), keeping its mark.
  void MoveToFront(int32_t s) { MoveToFront(s, ListOf(s)); }
  void MoveToFront(int32_t s, int list) {
    if (heads_[list] == s) return;  // at the front of `list` already (an LRU hit on the latest block)
    Unlink(s);
    LinkFront(list, s);
  }

  // Moves slot `s` to the back of `list`, keeping its mark.
  void MoveToBack(int32_t s, int list) {
    Unlink(s);
    LinkBack(list, s);
  }

  // Removes slot `s` from its list and forgets its block.
  void Erase(int32_t s) {
    Unlink(s);
    At(s).words[kList] = 0;
    if (identity_) return;
    index_.Erase(blocks_[s]);
    free_.push_back(s);
  }

  // The evictable block nearest the back of `list`, or kNoSlot (in the eligible view: the nearest
  // eligible one for which pred holds).
  template <typename Pred>
  int32_t LastMatching(int list, const Pred& pred) const {
    if (view_) {
      for (int32_t s = BackEligible(list); s != kNoSlot; s = PrevEligible(s)) {
        if (pred(Block(s))) return s;
      }
      return kNoSlot;
    }
    for (int32_t s = tails_[list]; s != kNoSlot; s = Prev(s)) {
      if (pred(Block(s))) return s;
    }
    return kNoSlot;
  }

  // Starts keeping the eligible view of `lists`. REQUIRES: before the first block is added.
  void EnableEligibility(std::initializer_list<int> lists) {
    KVSIM_CHECK(!any_added_) << "EnableEligibility after the first block";
    tracked_.assign(heads_.size(), false);
    eligible_sets_.resize(heads_.size());
    for (int list : lists) tracked_[list] = true;
  }
  bool eligibility_enabled() const { return !tracked_.empty(); }
  // Marks the slot of `block` (eligible or not); ignored when the block is in no list.
  void SetEligible(BlockId block, bool eligible) {
    const int32_t s = Find(block);
    if (s == kNoSlot || eligible_[s] == eligible) return;
    const int list = ListOf(s);
    const bool tracked = list >= 0 && tracked_[list];
    if (tracked && !eligible) eligible_sets_[list].erase(order_[s]);
    eligible_[s] = eligible;
    if (tracked && eligible) eligible_sets_[list].emplace(order_[s], s);
  }
  // While on, LastMatching visits only eligible slots. REQUIRES: eligibility_enabled().
  void SetEligibleView(bool on) { view_ = on; }
  bool eligible_view() const { return view_; }
  // The eligible slot nearest the back of `list`, and the nearest eligible slot in front of slot `s`
  // (towards the front of its list); kNoSlot if none. REQUIRES: eligibility_enabled(), `list` tracked.
  int32_t BackEligible(int list) const {
    const auto& set = eligible_sets_[list];
    return set.empty() ? kNoSlot : set.begin()->second;
  }
  int32_t PrevEligible(int32_t s) const {
    const auto& set = eligible_sets_[ListOf(s)];
    auto it = set.upper_bound(order_[s]);
    return it == set.end() ? kNoSlot : it->second;
  }

  int32_t Front(int list) const { return heads_[list]; }
  int32_t Back(int list) const { return tails_[list]; }
  // The block at the back of `list`, or absl::nullopt when the list is empty.
  absl::optional<BlockId> BackBlock(int list) const {
    return tails_[list] == kNoSlot ? absl::nullopt : absl::optional<BlockId>(Block(tails_[list]));
  }
  int32_t Next(int32_t s) const { return At(s).words[kNext]; }  // towards the back
  int32_t Prev(int32_t s) const { return At(s).words[kPrev]; }  // towards the front
  int64_t Size(int list) const { return sizes_[list]; }
  int ListOf(int32_t s) const { return At(s).words[kList] - 1; }
  BlockId Block(int32_t s) const { return identity_ ? static_cast<BlockId>(s) : blocks_[s]; }
  int32_t& Mark(int32_t s) { return At(s).words[kMark]; }

 private:
  // A slot's words (16 bytes: four to a cache line): the neighbours towards the front and the back
  // (kNoSlot at the ends), the list + 1 (0: in no list, so a zeroed slot is free) and the mark. The block
  // of a slot is the slot itself with dense ids, else blocks_.
  enum Word { kPrev = 0, kNext = 1, kList = 2, kMark = 3 };

  PolicySlot& At(int32_t s) const {
    return *reinterpret_cast<PolicySlot*>(base_ + (static_cast<size_t>(s) << stride_shift_));
  }
  void SetBase(PolicySlot* base, size_t stride_bytes) {
    base_ = reinterpret_cast<char*>(base);
    stride_shift_ = 0;
    while ((size_t{1} << stride_shift_) < stride_bytes) ++stride_shift_;
  }

  int32_t NewSlot(BlockId block) {
    any_added_ = true;
    int32_t s;
    if (identity_) {
      KVSIM_CHECK(block < static_cast<BlockId>(num_slots_) && At(static_cast<int32_t>(block)).words[kList] == 0)
          << "block " << block << " is already in a list";
      s = static_cast<int32_t>(block);
    } else if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = static_cast<int32_t>(slots_.size());
      slots_.emplace_back();
      blocks_.emplace_back();
      num_slots_ = static_cast<int64_t>(slots_.size());
      SetBase(slots_.data(), sizeof(PolicySlot));
    }
    At(s) = PolicySlot{{kNoSlot, kNoSlot, 0, 0}};
    if (!identity_) blocks_[s] = block;
    if (eligibility_enabled()) {
      if (static_cast<int64_t>(order_.size()) < num_slots_) {
        order_.resize(num_slots_);
        eligible_.resize(num_slots_);
      }
      eligible_[s] = true;
    }
    if (identity_) {
      // the slot is the block
    } else {
      const bool inserted = index_.FindOrInsert(block, s).second;
      KVSIM_CHECK(inserted) << "block " << block << " is already in a list";
    }
    return s;
  }

  void LinkFront(int list, int32_t s) {
    PolicySlot& slot = At(s);
    slot.words[kList] = list + 1;
    slot.words[kPrev] = kNoSlot;
    slot.words[kNext] = heads_[list];
    if (heads_[list] != kNoSlot) At(heads_[list]).words[kPrev] = s;
    heads_[list] = s;
    if (tails_[list] == kNoSlot) tails_[list] = s;
    ++sizes_[list];
    if (eligibility_enabled()) Track(s, ++front_order_);
  }

  void LinkBack(int list, int32_t s) {
    PolicySlot& slot = At(s);
    slot.words[kList] = list + 1;
    slot.words[kNext] = kNoSlot;
    slot.words[kPrev] = tails_[list];
    if (tails_[list] != kNoSlot) At(tails_[list]).words[kNext] = s;
    tails_[list] = s;
    if (heads_[list] == kNoSlot) heads_[list] = s;
    ++sizes_[list];
    if (eligibility_enabled()) Track(s, --back_order_);
  }

  // Gives linked slot `s` its place in list order and, if eligible in a tracked list, enters it.
  void Track(int32_t s, int64_t order) {
    order_[s] = order;
    const int list = ListOf(s);
    if (eligible_[s] && tracked_[list]) eligible_sets_[list].emplace(order, s);
  }

  // Takes slot `s` out of its list's links; its list word stays (the caller links or erases it).
  void Unlink(int32_t s) {
    PolicySlot& slot = At(s);
    const int list = slot.words[kList] - 1;
    if (eligibility_enabled() && eligible_[s] && tracked_[list]) eligible_sets_[list].erase(order_[s]);
    const int32_t prev = slot.words[kPrev], next = slot.words[kNext];
    if (prev != kNoSlot)
      At(prev).words[kNext] = next;
    else
      heads_[list] = next;
    if (next != kNoSlot)
      At(next).words[kPrev] = prev;
    else
      tails_[list] = prev;
    slot.words[kPrev] = slot.words[kNext] = kNoSlot;
    --sizes_[list];
  }

  // The slots: base_ + s << stride_shift_ (slots_'s, or the caller's storage with dense ids).
  char* base_ = nullptr;
  int stride_shift_ = 4;
  int64_t num_slots_ = 0;          // slots addressable at base_
  std::vector<PolicySlot> slots_;  // the slots, unless the caller's storage holds them
  std::vector<BlockId> blocks_;    // by slot, unless identity_
  std::vector<int32_t> free_;
  std::vector<int32_t> heads_, tails_;
  std::vector<int64_t> sizes_;
  BlockHashMap<int32_t, kNoSlot> index_;  // block -> slot; unused with dense ids
  bool identity_ = false;                        // dense ids, their own slots (UseDenseIds)
  bool any_added_ = false;
  // The eligible view (empty unless EnableEligibility): per slot its list-order key (larger = nearer
  // the front) and flag; per tracked list its eligible slots by key.
  std::vector<bool> tracked_;
  std::vector<int64_t> order_;
  std::vector<bool> eligible_;
  std::vector<absl::btree_map<int64_t, int32_t>> eligible_sets_;
  int64_t front_order_ = 0;
  int64_t back_order_ = 1;
  bool view_ = false;
};

// Turns the eligible view on for a scope.
class EligibleViewScope {
 public:
  explicit EligibleViewScope(BlockLists* lists) : lists_(lists) { lists_->SetEligibleView(true); }
  ~EligibleViewScope() { lists_->SetEligibleView(false); }
  EligibleViewScope(const EligibleViewScope&) = delete;
  EligibleViewScope& operator=(const EligibleViewScope&) = delete;

 private:
  BlockLists* lists_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_BLOCK_LISTS_H_
