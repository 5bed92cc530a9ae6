#include "util/heap_tuning.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "util/huge_pages.h"

namespace kvsim {

bool TuneHeapForBatchRun(int64_t huge_bytes) {
#if defined(__GLIBC__)
  // Blocks up to 32 MiB (glibc's most) from the heap, not from an mmap/munmap each, no trimming,
  // growth in `huge_bytes` steps.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, static_cast<int>(huge_bytes));
  // Grow the heap now (an allocation larger than what is left at its top), then mark the new range for
  // huge pages.
  char* start = static_cast<char*>(sbrk(0));
  void* volatile probe = std::malloc(1 << 20);  // volatile: the pair must not be optimised away
  char* end = static_cast<char*>(sbrk(0));
  std::free(probe);
  return end > start && AdviseHugePages(start, static_cast<size_t>(end - start));
#else
  (void)huge_bytes;
  return false;
#endif
}

}  // namespace kvsim
