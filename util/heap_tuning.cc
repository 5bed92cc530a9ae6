#include "util/heap_tuning.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace kvsim {

int64_t TuneHeapForBatchRun(int64_t huge_bytes) {
#if defined(__GLIBC__)
  constexpr int64_t kHugePage = int64_t{2} << 20;
  // Blocks up to 32 MiB (glibc's most) from the heap, not from an mmap/munmap each, no trimming,
  // growth in `huge_bytes` steps.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, static_cast<int>(huge_bytes));
  // Grow the heap now (an allocation larger than what is left at its top), then mark the new range for
  // huge pages.
  const auto start = reinterpret_cast<uintptr_t>(sbrk(0));
  void* volatile probe = std::malloc(1 << 20);  // volatile: the pair must not be optimised away
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  std::free(probe);
  const uintptr_t aligned = (start + kHugePage - 1) & ~static_cast<uintptr_t>(kHugePage - 1);
  if (end <= aligned + kHugePage) return 0;
  const uintptr_t length = (end - aligned) & ~static_cast<uintptr_t>(kHugePage - 1);
  if (madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE) != 0) return 0;
  return static_cast<int64_t>(length);
#else
  (void)huge_bytes;
  return 0;
#endif
}

}  // namespace kvsim
