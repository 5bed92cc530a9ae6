// File: policies/block_lists.h
//
// BlockLists: doubly-linked lists of blocks threaded through one array of slots (index links, no
// allocation per operation), with a flat hash map from BlockId to slot. The building block of the
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
// Thread-safety: none; one owner.
#ifndef KVSIM_POLICIES_BLOCK_LISTS_H_
#define KVSIM_POLICIES_BLOCK_LISTS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"
#include "util/check.h"

namespace kvsim {

constexpr int32_t kNoSlot = -1;

class BlockLists {
 public:
  explicit BlockLists(int num_lists) : heads_(num_lists, kNoSlot), tails_(num_lists, kNoSlot), sizes_(num_lists, 0) {}

  // Preallocates room for `num_blocks` blocks, at most 2^24 (an optimisation only: a capacity far beyond
  // any trace's blocks must not allocate for it).
  void Reserve(int64_t num_blocks) {
    const size_t n = static_cast<size_t>(std::clamp<int64_t>(num_blocks, 0, int64_t{1} << 24));
    slots_.reserve(n);
    index_.reserve(n);
  }

  // The slot of `block`, or kNoSlot if it is in no list.
  int32_t Find(BlockId block) const {
    auto it = index_.find(block);
    return it == index_.end() ? kNoSlot : it->second;
  }
  bool Contains(BlockId block) const { return index_.contains(block); }
  // Starts loading the index entry Find(block) will read (a hint; no effect on the lists).
  void Prefetch(BlockId block) const { index_.prefetch(block); }

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
  void MoveToFront(int32_t s) { MoveToFront(s, slots_[s].list); }
  void MoveToFront(int32_t s, int list) {
    Unlink(s);
    LinkFront(list, s);
  }

  // Removes slot `s` from its list and forgets its block.
  void Erase(int32_t s) {
    Unlink(s);
    index_.erase(slots_[s].block);
    free_.push_back(s);
  }

  // The evictable block nearest the back of `list`, or kNoSlot.
  template <typename Pred>
  int32_t LastMatching(int list, const Pred& pred) const {
    for (int32_t s = tails_[list]; s != kNoSlot; s = slots_[s].prev) {
      if (pred(slots_[s].block)) return s;
    }
    return kNoSlot;
  }

  int32_t Front(int list) const { return heads_[list]; }
  int32_t Back(int list) const { return tails_[list]; }
  int32_t Next(int32_t s) const { return slots_[s].next; }  // towards the back
  int32_t Prev(int32_t s) const { return slots_[s].prev; }  // towards the front
  int64_t Size(int list) const { return sizes_[list]; }
  int ListOf(int32_t s) const { return slots_[s].list; }
  BlockId Block(int32_t s) const { return slots_[s].block; }
  int32_t& Mark(int32_t s) { return slots_[s].mark; }

 private:
  struct Slot {
    BlockId block = 0;
    int32_t prev = kNoSlot;
    int32_t next = kNoSlot;
    int32_t list = -1;
    int32_t mark = 0;
  };

  int32_t NewSlot(BlockId block) {
    int32_t s;
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = static_cast<int32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[s] = Slot{block, kNoSlot, kNoSlot, -1, 0};
    bool inserted = index_.emplace(block, s).second;
    KVSIM_CHECK(inserted) << "block " << block << " is already in a list";
    return s;
  }

  void LinkFront(int list, int32_t s) {
    Slot& slot = slots_[s];
    slot.list = list;
    slot.prev = kNoSlot;
    slot.next = heads_[list];
    if (heads_[list] != kNoSlot) slots_[heads_[list]].prev = s;
    heads_[list] = s;
    if (tails_[list] == kNoSlot) tails_[list] = s;
    ++sizes_[list];
  }

  void LinkBack(int list, int32_t s) {
    Slot& slot = slots_[s];
    slot.list = list;
    slot.next = kNoSlot;
    slot.prev = tails_[list];
    if (tails_[list] != kNoSlot) slots_[tails_[list]].next = s;
    tails_[list] = s;
    if (heads_[list] == kNoSlot) heads_[list] = s;
    ++sizes_[list];
  }

  void Unlink(int32_t s) {
    Slot& slot = slots_[s];
    const int list = slot.list;
    if (slot.prev != kNoSlot)
      slots_[slot.prev].next = slot.next;
    else
      heads_[list] = slot.next;
    if (slot.next != kNoSlot)
      slots_[slot.next].prev = slot.prev;
    else
      tails_[list] = slot.prev;
    slot.prev = slot.next = kNoSlot;
    --sizes_[list];
  }

  std::vector<Slot> slots_;
  std::vector<int32_t> free_;
  std::vector<int32_t> heads_, tails_;
  std::vector<int64_t> sizes_;
  absl::flat_hash_map<BlockId, int32_t> index_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_BLOCK_LISTS_H_
