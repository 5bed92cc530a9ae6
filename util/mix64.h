// Mix64: the SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014; the constants of Vigna's splitmix64.c), a bijection on 64-bit values with good avalanche.
//
// The one definition for every use in the project: synthetic block hashes (traces/request), generator seeds
// (traces/generators/portable_random), hashed importers' ids, sampling by hash (mrc, trace_stats, kvp
// training) and the distinct counter (util/stream_sketch). Outputs that are written to files depend on these
// exact constants: changing them changes results.

#ifndef KVSIM_UTIL_MIX64_H_
#define KVSIM_UTIL_MIX64_H_

#include <cstdint>

namespace kvsim {

inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_MIX64_H_
