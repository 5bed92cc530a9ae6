#include "sim/serving/gpu_block_directory.h"

#include "util/check.h"

namespace kvsim {

GpuBlockDirectory::GpuBlockDirectory(int32_t num_replicas) : num_replicas_(num_replicas) {
  KVSIM_CHECK(num_replicas >= 1 && num_replicas <= kMaxReplicas) << "directory of " << num_replicas << " replicas";
}

void GpuBlockDirectory::Add(uint64_t hash, int32_t replica) {
  KVSIM_CHECK(replica >= 0 && replica < num_replicas_);
  const uint64_t bit = uint64_t{1} << replica;
  auto [mask, inserted] = holders_.FindOrInsert(hash, bit);
  if (inserted) return;
  KVSIM_CHECK((*mask & bit) == 0) << "block " << hash << " added twice on replica " << replica;
  *mask |= bit;
}

void GpuBlockDirectory::Remove(uint64_t hash, int32_t replica) {
  uint64_t* mask = holders_.Find(hash);
  const uint64_t bit = uint64_t{1} << replica;
  KVSIM_CHECK(mask != nullptr && (*mask & bit) != 0)
      << "block " << hash << " removed from replica " << replica << " that does not hold it";
  if (*mask == bit) {
    holders_.Erase(hash);  // (a zero mask would read as an empty slot: erased while still stored)
  } else {
    *mask &= ~bit;
  }
}

uint64_t GpuBlockDirectory::LongestPrefixReplicas(const Request& request, uint64_t candidates) const {
  // `leaders`: the candidates holding every block so far. Once one is left it leads alone, whatever
  // follows; once the next block drops them all, they tie.
  uint64_t leaders = candidates;
  for (uint64_t hash : request.block_hashes) {
    if ((leaders & (leaders - 1)) == 0) break;  // one leader (or none: candidates == 0)
    const uint64_t next = leaders & Holders(hash);
    if (next == 0) break;
    leaders = next;
  }
  return leaders;
}

}  // namespace kvsim
