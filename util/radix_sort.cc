#include "util/radix_sort.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace kvsim {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;

uint64_t KeyOf(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return (bits & kSignBit) != 0 ? ~bits : bits | kSignBit;
}

double ValueOf(uint64_t key) {
  const uint64_t bits = (key & kSignBit) != 0 ? key & ~kSignBit : ~key;
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

}  // namespace

void SortDoubles(std::vector<double>* values) {
  const size_t n = values->size();
  if (static_cast<int64_t>(n) < kMinRadixValues) {
    std::sort(values->begin(), values->end());
    return;
  }
  std::vector<uint64_t> keys(n), scratch(n);
  // One pass for every byte's histogram.
  std::array<std::array<size_t, 256>, 8> counts{};
  for (size_t i = 0; i < n; ++i) {
    const uint64_t key = KeyOf((*values)[i]);
    keys[i] = key;
    for (int b = 0; b < 8; ++b) ++counts[b][key >> (8 * b) & 0xff];
  }
  for (int b = 0; b < 8; ++b) {
    std::array<size_t, 256>& count = counts[b];
    if (count[keys[0] >> (8 * b) & 0xff] == n) continue;  // every key has this byte: nothing moves
    size_t offset = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = offset;
      offset += here;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t key = keys[i];
      scratch[count[key >> (8 * b) & 0xff]++] = key;
    }
    keys.swap(scratch);
  }
  for (size_t i = 0; i < n; ++i) (*values)[i] = ValueOf(keys[i]);
}

}  // namespace kvsim
