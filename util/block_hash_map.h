// File: util/block_hash_map.h
//
// BlockHashMap<V, kEmpty>: a map from 64-bit block hash to a small value, for the per-block indexes
// (BlockManager's hash -> entry, GpuBlockDirectory's hash -> holders and owner's entry, BlockLists' hash ->
// slot for the queue policies). Open addressing
// with linear probing over one flat array of {key, value} slots, at most half full: a lookup usually
// reads one cache line, which Prefetch() can request early, where a flat_hash_map reads its control bytes
// and then its slot (two memory accesses). Erase shifts the following slots of the probe run back
// (no tombstones), so a table whose blocks churn never has to be rebuilt; it only grows, doubling when
// an insert would make it more than half full. Memory: 16-byte slots (for a value of up to 8 bytes), so
// 32 to 64 bytes per entry, and while the table doubles its old one too: up to 96.
//
// A slot is empty iff its value is kEmpty: kEmpty is never stored, and a value must not be set to it
// through a pointer (that would lose the key and cut its probe run: Erase the key instead). For a value
// that is a struct, BasicBlockHashMap<V, Empty> takes the empty value and its test from `Empty`
// (static V Value(); static bool IsEmpty(const V&)); BlockHashMap<V, kEmpty> is the scalar case. Pointers to
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
#ifndef KVSIM_UTIL_BLOCK_HASH_MAP_H_
#define KVSIM_UTIL_BLOCK_HASH_MAP_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "util/check.h"
#include "util/huge_pages.h"
#include "util/prefetch.h"

namespace kvsim {

// The empty value of a scalar map: kEmpty.
template <typename V, V kEmpty>
struct ScalarEmpty {
  static constexpr V Value() { return kEmpty; }
  static constexpr bool IsEmpty(const V& value) { return value == kEmpty; }
};

template <typename V, typename Empty>
class BasicBlockHashMap {
 public:
  BasicBlockHashMap() { Reset(kMinSlots); }

  // The value of `key`, or nullptr if absent.
  V* Find(uint64_t key) {
    for (uint64_t s = Home(key);; s = (s + 1) & mask_) {
      Slot& slot = slots_[s];
      if (Empty::IsEmpty(slot.value)) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<BasicBlockHashMap*>(this)->Find(key); }
  bool Contains(uint64_t key) const { return Find(key) != nullptr; }

  // The value of `key`, inserting `value` (not empty) first if absent; `second` says whether it did.
  std::pair<V*, bool> FindOrInsert(uint64_t key, V value) {
    KVSIM_CHECK(!Empty::IsEmpty(value)) << "block hash map: the empty value cannot be stored";
    if (V* found = Find(key)) return {found, false};
    if (2 * (size_ + 1) > num_slots_) Grow();
    Slot* slot = Place(key, value);
    ++size_;
    return {&slot->value, true};
  }

  // Removes `key`; false if it was absent.
  bool Erase(uint64_t key) {
    uint64_t hole = Home(key);
    for (;; hole = (hole + 1) & mask_) {
      if (Empty::IsEmpty(slots_[hole].value)) return false;
      if (slots_[hole].key == key) break;
    }
    // Backward shift: an entry after the hole moves into it unless its home lies cyclically in
    // (hole, s], where the entry is still reachable from its home without the hole.
    for (uint64_t s = (hole + 1) & mask_; !Empty::IsEmpty(slots_[s].value); s = (s + 1) & mask_) {
      const uint64_t home = Home(slots_[s].key);
      const bool stays = hole < s ? (home > hole && home <= s) : (home > hole || home <= s);
      if (stays) continue;
      slots_[hole] = slots_[s];
      hole = s;
    }
    slots_[hole].value = Empty::Value();
    --size_;
    return true;
  }

  // Starts loading the slot a lookup of `key` reads first (a hint; changes nothing).
  void Prefetch(uint64_t key) const { PrefetchForRead(&slots_[Home(key)]); }

  // fn(key, value) for every entry, in slot order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (int64_t s = 0; s < num_slots_; ++s) {
      if (!Empty::IsEmpty(slots_[s].value)) fn(slots_[s].key, slots_[s].value);
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
  struct Free {
    void operator()(Slot* slots) const { std::free(slots); }
  };

  // The first slot `key` probes: a mix of all its bits (trace hashes may be small sequential ids).
  uint64_t Home(uint64_t key) const {
    uint64_t h = (key ^ (key >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return (h ^ (h >> 29)) & mask_;
  }
  void Reset(int64_t num_slots) {
    const size_t bytes = static_cast<size_t>(num_slots) * sizeof(Slot);
    void* memory = nullptr;
    // Arrays of at least a huge page are aligned to one and asked to be backed by huge pages (a hint to
    // the kernel): the random lookups of a table larger than the TLB's reach then miss it less.
    if (bytes >= kHugePageBytes) {
      memory = std::aligned_alloc(kHugePageBytes, bytes);  // bytes: a power of two >= the alignment
      if (memory != nullptr) AdviseHugePages(memory, bytes);
    } else {
      memory = std::malloc(bytes);
    }
    KVSIM_CHECK(memory != nullptr) << "block hash map: out of memory for " << num_slots << " slots";
    slots_.reset(static_cast<Slot*>(memory));
    num_slots_ = num_slots;
    for (int64_t s = 0; s < num_slots; ++s) slots_[s] = Slot{0, Empty::Value()};
    mask_ = static_cast<uint64_t>(num_slots - 1);
  }
  // The first empty slot of `key`'s probe run, filled. REQUIRES: key absent, a slot empty.
  Slot* Place(uint64_t key, V value) {
    uint64_t s = Home(key);
    while (!Empty::IsEmpty(slots_[s].value)) s = (s + 1) & mask_;
    slots_[s] = Slot{key, value};
    return &slots_[s];
  }
  void Grow() {
    std::unique_ptr<Slot[], Free> old = std::move(slots_);
    const int64_t old_slots = num_slots_;
    Reset(old_slots * 2);
    for (int64_t s = 0; s < old_slots; ++s) {
      if (!Empty::IsEmpty(old[s].value)) Place(old[s].key, old[s].value);
    }
  }

  std::unique_ptr<Slot[], Free> slots_;  // num_slots_ of them, a power of two
  int64_t num_slots_ = 0;
  uint64_t mask_ = 0;  // num_slots_ - 1
  int64_t size_ = 0;
};

template <typename V, V kEmpty>
using BlockHashMap = BasicBlockHashMap<V, ScalarEmpty<V, kEmpty>>;

}  // namespace kvsim

#endif  // KVSIM_UTIL_BLOCK_HASH_MAP_H_
