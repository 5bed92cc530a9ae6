// File: sim/serving/gpu_block_directory.h
//
// GpuBlockDirectory: which replicas hold each shared-cache block on their GPU, kept by the replicas'
// BlockManagers (a block enters when it is cached on a replica's GPU and leaves when it is evicted there)
// and read by the cache-aware router. One lookup per prompt block answers for every replica at once,
// where probing each replica's cache costs one lookup per block per replica.
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

#include "sim/serving/block_hash_map.h"
#include "traces/request.h"

namespace kvsim {

class GpuBlockDirectory {
 public:
  // Replicas are numbered 0..num_replicas-1; a set of replicas is a bit mask (bit r = replica r).
  static constexpr int32_t kMaxReplicas = 64;

  // REQUIRES: 1 <= num_replicas <= kMaxReplicas.
  explicit GpuBlockDirectory(int32_t num_replicas);

  // Block `hash` is now cached on `replica`'s GPU. REQUIRES: it was not.
  void Add(uint64_t hash, int32_t replica);
  // Block `hash` left `replica`'s GPU. REQUIRES: it was there.
  void Remove(uint64_t hash, int32_t replica);

  // The replicas that hold `hash` on their GPU.
  uint64_t Holders(uint64_t hash) const {
    const uint64_t* mask = holders_.Find(hash);
    return mask == nullptr ? 0 : *mask;
  }

  // Starts loading what Add, Remove or Holders of `hash` will read (a hint; changes nothing).
  void Prefetch(uint64_t hash) const { holders_.Prefetch(hash); }

  // Of the replicas in `candidates` (!= 0), those whose run of leading blocks of `request` on their GPU is
  // the longest (every candidate when none holds the first block).
  uint64_t LongestPrefixReplicas(const Request& request, uint64_t candidates) const;

  int32_t num_replicas() const { return num_replicas_; }
  // Distinct blocks held by at least one replica.
  int64_t num_blocks() const { return holders_.size(); }

 private:
  const int32_t num_replicas_;
  BlockHashMap<uint64_t, 0> holders_;  // hash -> replicas holding it (never an empty set)
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_GPU_BLOCK_DIRECTORY_H_
