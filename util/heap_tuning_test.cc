#include "util/heap_tuning.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// VmFlags of the mapping of /proc/self/smaps that contains `address`, or "" if none does.
std::string VmFlagsAt(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    if (line.rfind("VmFlags:", 0) == 0) {
      if (inside) return line;
    } else if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find('-') < 17) {
      inside = address >= begin && address < end;
    }
  }
  return "";
}

TEST(HeapTuningTest, MarksTheGrownHeapForHugePagesAndLargeBlocksComeFromIt) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  const auto heap_top_before = reinterpret_cast<uintptr_t>(sbrk(0));
  ASSERT_TRUE(TuneHeapForBatchRun(int64_t{16} << 20));
  // The heap grew by at least the pad asked for (16 MiB).
  const auto heap_top_after = reinterpret_cast<uintptr_t>(sbrk(0));
  EXPECT_GE(heap_top_after - heap_top_before, uintptr_t{16} << 20);
  // The kernel records the advice: "hg" in the VmFlags of the marked mapping. The marked range is the
  // growth's whole 2 MiB pages, so it contains the address 2 MiB below the new top.
  const std::string flags = VmFlagsAt(heap_top_after - (uintptr_t{2} << 20));
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  // A 4 MiB block (above glibc's default 128 KiB mmap threshold) now comes from the heap: it ends below
  // the heap's top, not in a mapping of its own far above it.
  void* volatile block = std::malloc(4 << 20);
  const auto address = reinterpret_cast<uintptr_t>(block);
  const auto top = reinterpret_cast<uintptr_t>(sbrk(0));
  EXPECT_LE(address + (4 << 20), top);
  EXPECT_LT(top - address, uintptr_t{1} << 30);
  std::free(block);
}

}  // namespace
}  // namespace kvsim
