// File: util/radix_sort.h
//
// SortDoubles: sorts doubles ascending by a least-significant-digit radix sort on their bits, in O(n):
// the latency distributions' sort (util/sorted_spill.h), where std::sort's O(n log n) comparisons were
// 3-4% of a whole replay. The order is std::sort's for every value that compares: equal values are
// identical bits, except that -0.0 comes before +0.0 (std::sort leaves the two in either order). NaNs
// (which std::sort cannot order) go after +inf if positive and before -inf if negative, by their bits.
//
// Each double maps to a 64-bit key that orders as the value does (positive: sign bit set; negative:
// every bit flipped), then eight passes of 8 bits, each a counting sort into a scratch buffer of n keys;
// a pass whose byte is the same in every key is skipped. Below kMinRadixValues values std::sort is used
// (same result, cheaper there).
//
// Memory: n x 8 bytes of scratch while sorting. Thread-safety: none needed (no shared state).
//
// Example:
//   std::vector<double> ms = ...;
//   SortDoubles(&ms);
#ifndef KVSIM_UTIL_RADIX_SORT_H_
#define KVSIM_UTIL_RADIX_SORT_H_

#include <cstdint>
#include <vector>

namespace kvsim {

inline constexpr int64_t kMinRadixValues = 256;

void SortDoubles(std::vector<double>* values);

}  // namespace kvsim

#endif  // KVSIM_UTIL_RADIX_SORT_H_
