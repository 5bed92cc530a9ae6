// File: policies/belady_policy.h
//
// BeladyPolicy ("belady"): the MIN oracle. On a miss with a full cache it evicts, among the resident
// blocks and the incoming one, the block whose next use is furthest in the future (never again =
// infinity): if that is the incoming block, ShouldAdmit() returns false and the cache stays as it is
// (bypass); otherwise SelectVictim() returns the resident block with the furthest next use. With unit
// block sizes this maximises the hit count of every access stream (Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 1966; Mattson et al. 1970 for the
// bypass form), so it is the upper bound of every policy in cache-replay tables.
//
// Needs AccessInfo::next_access_clock on every OnInsert/OnAccess: cache replay computes it in a pre-pass
// over the whole trace held in memory. A call with next_access_clock == -1 (unknown) is a contract
// violation (checked). Ties between equal next uses (only blocks never used again tie) break towards the
// block accessed most recently (the larger access clock): deterministic, and the same whatever ids the
// cache gives the blocks (hashes, or cache replay's dense ids).
// Resident blocks are kept in two IndexBitTrees over access clocks: those used again by their next use
// (the next uses of the resident blocks are distinct access indices: each access is of one block), those
// never used again by the clock of the access that told so (also distinct). The victim is the never-again
// block of the largest clock, else the block of the largest next use; an array from access index to the
// block accessed there names it. O(log_64 n) per operation (4 levels up to 16.7M accesses).
// REQUIRES (checked): clock and next_access_clock are indices of one access stream, as cache replay's:
// two resident blocks never share a next use, nor two never-again blocks a clock.
//
// Memory, for a stream of n accesses and d distinct blocks: with dense ids 8 bytes per id and 4 per
// access index (the index-to-block array) plus 2 bits per access index (the trees); with hashes a hash
// map entry per resident block and 8 bytes per access index.
//
// Example:
//   info.next_access_clock = 10; belady.OnInsert(1, info);
//   info.next_access_clock = AccessInfo::kNever; belady.OnInsert(2, info);
//   belady.SelectVictim(all);  // 2: never used again
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_BELADY_POLICY_H_
#define KVSIM_POLICIES_BELADY_POLICY_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"
#include "util/index_bit_tree.h"
#include "util/prefetch.h"

namespace kvsim {

class BeladyPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "belady"; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  void SetDenseIds(int64_t num_ids) override { dense_.assign(static_cast<size_t>(num_ids), kAbsent); }
  bool IsResident(BlockId block) const override {
    return dense_.empty() ? keys_.contains(block) : dense_[block] != kAbsent;
  }
  void Prefetch(BlockId block) const override {
    if (!dense_.empty()) PrefetchForRead(&dense_[block]);
  }
  // False when the incoming block's next use is no earlier than every resident block's.
  bool ShouldAdmit(BlockId block, const AccessInfo& info) override;

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  void SetNextUse(BlockId block, const AccessInfo& info);
  // Takes `key` (a Key encoding) out of its tree.
  void EraseKey(int64_t key);
  // Records that the access at `index` is of `block`.
  void SetBlockAt(int64_t index, BlockId block);
  BlockId BlockAt(int64_t index) const {
    return dense_.empty() ? block_at_hash_[index] : BlockId{block_at_dense_[index]};
  }

  // A resident block's key: its next use (>= 0) in next_uses_, or -2 - clock in never_again_; kAbsent:
  // not resident (dense_).
  static constexpr int64_t kAbsent = -1;
  static int64_t NeverKey(int64_t clock) { return -2 - clock; }

  IndexBitTree next_uses_;    // next uses of the resident blocks used again
  IndexBitTree never_again_;  // clocks of the resident blocks never used again
  std::vector<uint32_t> block_at_dense_;           // access index -> dense id, if dense
  std::vector<BlockId> block_at_hash_;             // access index -> block, unless ids are dense
  absl::flat_hash_map<BlockId, int64_t> keys_;     // resident blocks' keys, unless ids are dense
  std::vector<int64_t> dense_;                     // keys by dense id, if dense
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_BELADY_POLICY_H_
