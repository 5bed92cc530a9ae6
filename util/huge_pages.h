// File: util/huge_pages.h
//
// AdviseHugePages: asks the kernel to back a large scratch buffer with transparent huge pages (Linux,
// THP mode "madvise" or "always"), so that its first touch takes one page fault per 2 MiB instead of
// one per 4 KiB. Page faults are costly (much more so under virtualisation) and attention-sized buffers
// (tens to hundreds of MiB) are touched once per sample or layer. Only the 2 MiB-aligned interior of the
// buffer is advised; its contents are unchanged. Call it right after allocating, before the first write.
// Elsewhere (other systems, THP unavailable) it does nothing and returns false.
//
// Thread-safe (one system call; no shared state).
//
// Example:
//   std::unique_ptr<float[]> scratch(new float[n]);  // uninitialised: not touched yet
//   AdviseHugePages(scratch.get(), n * sizeof(float));
#ifndef KVSIM_UTIL_HUGE_PAGES_H_
#define KVSIM_UTIL_HUGE_PAGES_H_

#include <cstddef>

namespace kvsim {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// True if a non-empty 2 MiB-aligned part of [data, data + bytes) was advised and the kernel accepted.
bool AdviseHugePages(void* data, size_t bytes);

}  // namespace kvsim

#endif  // KVSIM_UTIL_HUGE_PAGES_H_
