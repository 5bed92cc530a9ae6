// File: sim/serving/block_hash_map.h
//
// BlockHashMap<V, kEmpty>: a map from 64-bit block hash to a small value, for the serving simulator's
// per-block indexes (BlockManager's hash -> entry, GpuBlockDirectory's hash -> holders). Open addressing
// with linear probing over one flat array of {key, value} slots, at most half full: a lookup usually
// reads one cache line, which Prefetch() can request early, where a flat_hash_map reads its control bytes
// and then its slot (two memory accesses). Erase shifts the following slots of the probe run back
// (no tombstones), so a table whose blocks churn never has to be rebuilt; it only grows, doubling when
// an insert would make it more than half full.
//
// A slot is empty iff its value is kEmpty: kEmpty is never stored, and a value must not be set to it
// through a pointer (that would lose the key and cut its probe run: Erase the key instead). Pointers to
// values stay valid until the next FindOrInsert or Erase. ForEach visits the entries in slot order (deterministic for the same
// operations; not insertion order).
//
// Example:
//   BlockHashMap<int32_t, -1> index;
//   auto [value, inserted] = index.FindOrInsert(hash, 7);
//   if (const int32_t* entry = index.Find(hash)) ...
//   index.Erase(hash);
//
// Thread-safety: none; one owner.
#ifndef KVSIM_SIM_SERVING_BLOCK_HASH_MAP_H_
#define KVSIM_SIM_SERVING_BLOCK_HASH_MAP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "util/check.h"

namespace kvsim {

template <typename V, V kEmpty>
class BlockHashMap {
 public:
  BlockHashMap() { Reset(kMinSlots); }

  // The value of `key`, or nullptr if absent.
  V* Find(uint64_t key) {
    for (uint64_t s = Home(key);; s = (s + 1) & mask_) {
      Slot& slot = slots_[s];
      if (slot.value == kEmpty) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<BlockHashMap*>(this)->Find(key); }
  bool Contains(uint64_t key) const { return Find(key) != nullptr; }

  // The value of `key`, inserting `value` (!= kEmpty) first if absent; `second` says whether it did.
  std::pair<V*, bool> FindOrInsert(uint64_t key, V value) {
    KVSIM_CHECK(value != kEmpty) << "block hash map: the empty value cannot be stored";
    if (V* found = Find(key)) return {found, false};
    if (2 * (size_ + 1) > static_cast<int64_t>(slots_.size())) Grow();
    Slot* slot = Place(key, value);
    ++size_;
    return {&slot->value, true};
  }

  // Removes `key`; false if it was absent.
  bool Erase(uint64_t key) {
    uint64_t hole = Home(key);
    for (;; hole = (hole + 1) & mask_) {
      if (slots_[hole].value == kEmpty) return false;
      if (slots_[hole].key == key) break;
    }
    // Backward shift: an entry after the hole moves into it unless its home lies cyclically in
    // (hole, s], where the entry is still reachable from its home without the hole.
    for (uint64_t s = (hole + 1) & mask_; slots_[s].value != kEmpty; s = (s + 1) & mask_) {
      const uint64_t home = Home(slots_[s].key);
      const bool stays = hole < s ? (home > hole && home <= s) : (home > hole || home <= s);
      if (stays) continue;
      slots_[hole] = slots_[s];
      hole = s;
    }
    slots_[hole].value = kEmpty;
    --size_;
    return true;
  }

  // Starts loading the slot a lookup of `key` reads first (a hint; changes nothing).
  void Prefetch(uint64_t key) const { __builtin_prefetch(&slots_[Home(key)]); }

  // fn(key, value) for every entry, in slot order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.value != kEmpty) fn(slot.key, slot.value);
    }
  }

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    uint64_t key;
    V value;
  };
  static constexpr int64_t kMinSlots = 16;

  // The first slot `key` probes: a mix of all its bits (trace hashes may be small sequential ids).
  uint64_t Home(uint64_t key) const {
    uint64_t h = (key ^ (key >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return (h ^ (h >> 29)) & mask_;
  }
  void Reset(int64_t num_slots) {
    slots_.assign(static_cast<size_t>(num_slots), Slot{0, kEmpty});
    mask_ = static_cast<uint64_t>(num_slots - 1);
  }
  // The first empty slot of `key`'s probe run, filled. REQUIRES: key absent, a slot empty.
  Slot* Place(uint64_t key, V value) {
    uint64_t s = Home(key);
    while (slots_[s].value != kEmpty) s = (s + 1) & mask_;
    slots_[s] = Slot{key, value};
    return &slots_[s];
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    Reset(static_cast<int64_t>(old.size()) * 2);
    for (const Slot& slot : old) {
      if (slot.value != kEmpty) Place(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;  // a power of two of them
  uint64_t mask_ = 0;        // slots_.size() - 1
  int64_t size_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_BLOCK_HASH_MAP_H_
