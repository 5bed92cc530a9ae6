#include "sim/serving/gpu_block_directory.h"

#include "util/check.h"

namespace kvsim {

GpuBlockDirectory::GpuBlockDirectory(int32_t num_replicas) : num_replicas_(num_replicas) {
  KVSIM_CHECK(num_replicas >= 1 && num_replicas <= kMaxReplicas) << "directory of " << num_replicas << " replicas";
}

bool GpuBlockDirectory::Register(uint64_t hash, int32_t replica, int32_t entry, bool on_gpu) {
  const Registration registration = TryRegister(hash, replica, entry, on_gpu);
  KVSIM_CHECK(registration != Registration::kAlreadyRegistered)
      << "block " << hash << " registered twice by replica " << replica;
  return registration == Registration::kOwner;
}

GpuBlockDirectory::Registration GpuBlockDirectory::TryRegister(uint64_t hash, int32_t replica, int32_t entry,
                                                               bool on_gpu) {
  KVSIM_CHECK(replica >= 0 && replica < num_replicas_);
  KVSIM_CHECK(entry >= 0 && entry < kMaxEntries) << "directory: entry " << entry << " out of range";
  const uint64_t bit = uint64_t{1} << replica;
  const uint64_t gpu = on_gpu ? bit : 0;
  auto [slot, inserted] = slots_.FindOrInsert(hash, Slot{gpu | bit << 16 | Slot::Owner(replica, entry)});
  if (inserted) return Registration::kOwner;
  if ((slot->registered() & bit) != 0) return Registration::kAlreadyRegistered;
  slot->word |= bit << 16 | gpu;
  if (slot->owner() >= 0) return Registration::kCallerKeeps;
  slot->word |= Slot::Owner(replica, entry);
  return Registration::kOwner;
}

GpuBlockDirectory::Slot* GpuBlockDirectory::RegisteredSlot(uint64_t hash, int32_t replica) {
  Slot* slot = slots_.Find(hash);
  KVSIM_CHECK(replica >= 0 && replica < num_replicas_ && slot != nullptr && (slot->registered() >> replica & 1) != 0)
      << "block " << hash << " not registered by replica " << replica;
  return slot;
}

bool GpuBlockDirectory::Unregister(uint64_t hash, int32_t replica) {
  return UnregisterSlot(RegisteredSlot(hash, replica), hash, replica);
}

bool GpuBlockDirectory::RemoveAndUnregister(uint64_t hash, int32_t replica) {
  Slot* slot = RegisteredSlot(hash, replica);
  const uint64_t bit = uint64_t{1} << replica;
  KVSIM_CHECK((slot->gpu() & bit) != 0) << "block " << hash << " removed from replica " << replica
                                         << " that does not hold it";
  slot->word &= ~bit;
  return UnregisterSlot(slot, hash, replica);
}

bool GpuBlockDirectory::UnregisterSlot(Slot* slot, uint64_t hash, int32_t replica) {
  const uint64_t bit = uint64_t{1} << replica;
  KVSIM_CHECK((slot->gpu() & bit) == 0) << "block " << hash << " unregistered while on replica " << replica << "'s GPU";
  const bool owned = slot->owner() == replica;
  if (slot->registered() == bit) {
    slots_.Erase(hash);  // (an empty `registered` would read as an empty slot: erased while still stored)
    return owned;
  }
  slot->word &= ~(bit << 16);
  if (owned) slot->word &= 0xffffffffu;  // no owner: the owner and entry bits cleared
  return owned;
}

void GpuBlockDirectory::Add(uint64_t hash, int32_t replica) {
  Slot* slot = RegisteredSlot(hash, replica);
  const uint64_t bit = uint64_t{1} << replica;
  KVSIM_CHECK((slot->gpu() & bit) == 0) << "block " << hash << " added twice on replica " << replica;
  slot->word |= bit;
}

void GpuBlockDirectory::Remove(uint64_t hash, int32_t replica) {
  Slot* slot = slots_.Find(hash);
  const uint64_t bit = uint64_t{1} << replica;
  KVSIM_CHECK(slot != nullptr && (slot->gpu() & bit) != 0)
      << "block " << hash << " removed from replica " << replica << " that does not hold it";
  slot->word &= ~bit;
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
