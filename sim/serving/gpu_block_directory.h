// File: sim/serving/gpu_block_directory.h
//
// GpuBlockDirectory: for every shared-cache block of a group of replicas, which replicas hold it on their
// GPU, and which have an entry for it (any tier) in their BlockManager, with one of those entries (the
// block's owner's). The replicas' BlockManagers keep it and use it as their block index; the cache-aware
// router reads it. One lookup per prompt block answers for every replica at once, where probing each
// replica's cache costs one lookup per block per replica.
//
// Why the entries live here: a block usually lives on one replica, so the first replica to register a
// block owns its slot and its entry is kept in the slot itself. Publishing a block, evicting it and
// looking it up then read and write one slot of one table, where a per-replica index beside a holders
// map costs two lookups per block (each a cache miss on large tables). A replica that registers a block
// another replica owns keeps its entry in its own map (Register returns false); Entry() says which.
// A slot's value is one 64-bit word (both replica sets, the owner and its entry), so a slot is 16 bytes
// and the table half the size it would be with full-width fields: at most 16 replicas.
//
// LongestPrefixReplicas(request, candidates) is the set of candidate replicas with the longest run of the
// request's leading blocks on their GPU: the set Router's CACHE_AWARE rule picks from (then by load and
// index). It walks the blocks while more than one candidate is still in the lead, so a prompt whose
// conversation lives on one replica costs a lookup per block of the prefix the replicas share, no more.
//
// Example:
//   GpuBlockDirectory directory(/*num_replicas=*/16);
//   blocks->ShareGpuDirectory(&directory, /*replica=*/r);   // for every replica's BlockManager
//   uint64_t leaders = directory.LongestPrefixReplicas(request, candidates);
//
// Thread-safety: none; the engine's thread.
#ifndef KVSIM_SIM_SERVING_GPU_BLOCK_DIRECTORY_H_
#define KVSIM_SIM_SERVING_GPU_BLOCK_DIRECTORY_H_

#include <cstdint>

#include "util/block_hash_map.h"
#include "traces/request.h"

namespace kvsim {

class GpuBlockDirectory {
 public:
  // Replicas are numbered 0..num_replicas-1; a set of replicas is a bit mask (bit r = replica r).
  static constexpr int32_t kMaxReplicas = 16;
  // Entries are below this (27 bits of the slot's word).
  static constexpr int64_t kMaxEntries = int64_t{1} << 27;
  // Entry(): the replica has no entry for the block; it has one in its own map (another replica owns it).
  static constexpr int32_t kNoEntry = -1;
  static constexpr int32_t kElsewhere = -2;

  // REQUIRES: 1 <= num_replicas <= kMaxReplicas.
  explicit GpuBlockDirectory(int32_t num_replicas);

  // `replica` now has entry `entry` (0 <= entry < kMaxEntries) for block `hash`, on its GPU if `on_gpu`
  // (as Add would say). True if the replica owns the block (the entry is kept here); false if another
  // replica owns it (the caller keeps the entry). REQUIRES: the replica had no entry for it.
  bool Register(uint64_t hash, int32_t replica, int32_t entry, bool on_gpu);
  // Register, unless `replica` already has an entry for `hash` (Entry() != kNoEntry): then nothing
  // changes. One lookup for both (publishing a block that may have been cached meanwhile).
  enum class Registration { kOwner, kCallerKeeps, kAlreadyRegistered };
  Registration TryRegister(uint64_t hash, int32_t replica, int32_t entry, bool on_gpu);
  // `replica`'s entry for `hash` is gone. True if it was the owner's (the block then has no owner until
  // the next Register); false if the caller kept it. REQUIRES: registered, not on the replica's GPU.
  bool Unregister(uint64_t hash, int32_t replica);
  // Remove then Unregister in one lookup (a block dropped from the replica's GPU); returns as
  // Unregister. REQUIRES: on the replica's GPU.
  bool RemoveAndUnregister(uint64_t hash, int32_t replica);
  // `replica`'s entry for `hash` if it owns the block; kNoEntry if it has none; kElsewhere if it keeps it.
  int32_t Entry(uint64_t hash, int32_t replica) const {
    const Slot* slot = slots_.Find(hash);
    if (slot == nullptr || (slot->registered() >> replica & 1) == 0) return kNoEntry;
    return slot->owner() == replica ? slot->owner_entry() : kElsewhere;
  }
  // fn(hash, owner, entry) for every block with an owner (every replica's owned blocks in one pass), in
  // slot order.
  template <typename Fn>
  void ForEachOwned(const Fn& fn) const {
    slots_.ForEach([&](uint64_t hash, const Slot& slot) {
      if (slot.owner() >= 0) fn(hash, slot.owner(), slot.owner_entry());
    });
  }

  // Block `hash` is now cached on `replica`'s GPU. REQUIRES: registered by the replica, not on its GPU.
  void Add(uint64_t hash, int32_t replica);
  // Block `hash` left `replica`'s GPU (its entry may stay registered, in a lower tier). REQUIRES: there.
  void Remove(uint64_t hash, int32_t replica);

  // The replicas that hold `hash` on their GPU.
  uint64_t Holders(uint64_t hash) const {
    const Slot* slot = slots_.Find(hash);
    return slot == nullptr ? 0 : slot->gpu();
  }

  // Starts loading what any call about `hash` will read (a hint; changes nothing).
  void Prefetch(uint64_t hash) const { slots_.Prefetch(hash); }

  // Of the replicas in `candidates` (!= 0), those whose run of leading blocks of `request` on their GPU is
  // the longest (every candidate when none holds the first block).
  uint64_t LongestPrefixReplicas(const Request& request, uint64_t candidates) const;

  int32_t num_replicas() const { return num_replicas_; }
  // Distinct blocks registered by at least one replica.
  int64_t num_blocks() const { return slots_.size(); }

 private:
  // One word: bits 0-15 the replicas holding the block on their GPU (a subset of the next), bits 16-31
  // the replicas with an entry for it (0 only in an empty table slot), bits 32-36 the owner + 1 (0: none;
  // its owner unregistered while others remain), bits 37-63 the owner's entry.
  struct Slot {
    uint64_t word;
    uint64_t gpu() const { return word & 0xffff; }
    uint64_t registered() const { return word >> 16 & 0xffff; }
    int32_t owner() const { return static_cast<int32_t>(word >> 32 & 31) - 1; }
    int32_t owner_entry() const { return static_cast<int32_t>(word >> 37); }
    static uint64_t Owner(int32_t replica, int32_t entry) {
      return static_cast<uint64_t>(replica + 1) << 32 | static_cast<uint64_t>(entry) << 37;
    }
  };
  struct EmptySlot {
    static constexpr Slot Value() { return Slot{0}; }
    static constexpr bool IsEmpty(const Slot& slot) { return (slot.word >> 16 & 0xffff) == 0; }
  };
  // The slot of `hash`, registered by `replica`; CHECKs that it is.
  Slot* RegisteredSlot(uint64_t hash, int32_t replica);
  // Unregister's work on `slot`, the slot of `hash`, registered by `replica` and not on its GPU.
  bool UnregisterSlot(Slot* slot, uint64_t hash, int32_t replica);

  const int32_t num_replicas_;
  BasicBlockHashMap<Slot, EmptySlot> slots_;  // hash -> its holders and owner
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_GPU_BLOCK_DIRECTORY_H_
