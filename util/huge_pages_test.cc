#include "util/huge_pages.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(AdviseHugePagesTest, SmallOrNullBuffersAreLeftAlone) {
  std::vector<char> small(100000, 'x');  // < 2 MiB: no whole huge page inside
  EXPECT_FALSE(AdviseHugePages(small.data(), small.size()));
  EXPECT_FALSE(AdviseHugePages(nullptr, 8 * kHugePageBytes));
  EXPECT_FALSE(AdviseHugePages(small.data(), 0));
}

TEST(AdviseHugePagesTest, KeepsTheContents) {
  // 6 MiB hold at least two aligned huge pages wherever the allocation starts.
  const size_t n = 6 * kHugePageBytes / sizeof(uint32_t);
  std::unique_ptr<uint32_t[]> data(new uint32_t[n]);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);
  const bool advised = AdviseHugePages(data.get(), n * sizeof(uint32_t));
#if defined(__linux__)
  // Where the kernel offers THP on request, the advice must be accepted.
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (std::getline(mode, line) &&
      (line.find("[madvise]") != std::string::npos || line.find("[always]") != std::string::npos)) {
    EXPECT_TRUE(advised) << line;
  }
#else
  EXPECT_FALSE(advised);
#endif
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], static_cast<uint32_t>(i * 2654435761u)) << i;
}

}  // namespace
}  // namespace kvsim
