// File: util/prefetch.h
//
// PrefetchForRead(address): asks the CPU to start loading the cache line that holds `address`, so that a
// read of it soon after finds it in the cache (a hint: it never faults, whatever the address, and changes
// nothing the program can observe).
//
// Use it instead of a bare __builtin_prefetch where the address comes out of inlined arithmetic. GCC 12 at
// -O2 deletes such prefetches in its dead-code elimination: every BlockHashMap::Prefetch (the prefetch of
// `&slots_[Home(key)]`, Home mixing the key's bits) compiled to nothing, in the functions that walk a
// request's blocks as much as in an out-of-line one; an empty asm statement that takes the address keeps
// the prefetch (seen in the disassembly; -fno-tree-dce keeps it too).
//
// Example:
//   for (size_t i = 0; i < n; ++i) {
//     if (i + 8 < n) PrefetchForRead(&table[Slot(keys[i + 8])]);
//     Use(table[Slot(keys[i])]);
//   }
//
// Thread-safety: any thread.
#ifndef KVSIM_UTIL_PREFETCH_H_
#define KVSIM_UTIL_PREFETCH_H_

namespace kvsim {

inline void PrefetchForRead(const void* address) {
#if defined(__GNUC__)
  asm volatile("" : : "r"(address));  // the address is used: the prefetch below is not dead code
#endif
  __builtin_prefetch(address);
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_PREFETCH_H_
