// File: util/index_bit_tree.h
//
// IndexBitTree: a set of non-negative integers (indices) kept as a 64-ary tree of bit words. Level 0 has
// one bit per index; each bit of level L+1 says whether the 64-bit word below it in level L has any bit
// set; the top level is one word. Insert, Erase and Contains touch one word per level, Max and Prev
// descend by count-leading-zeros: O(log_64 n) each, 4 levels for up to 16.7M indices. The tree grows
// to the largest index inserted (doubling, so the rebuilds cost O(1) amortised per index).
//
// Memory: (max index + 1) / 8 bytes at level 0, plus 1/63 of that above it.
//
// Example:
//   IndexBitTree set;
//   set.Insert(5); set.Insert(700);
//   set.Max();      // 700
//   set.Prev(700);  // 5
//   set.Prev(5);    // -1: none below
//
// Thread-safety: none; one owner.
#ifndef KVSIM_UTIL_INDEX_BIT_TREE_H_
#define KVSIM_UTIL_INDEX_BIT_TREE_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "util/check.h"

namespace kvsim {

class IndexBitTree {
 public:
  // Adds `index` (REQUIRES: >= 0, checked). Returns false, changing nothing, if it was present.
  bool Insert(int64_t index) {
    KVSIM_CHECK(index >= 0) << "IndexBitTree: negative index " << index;
    if (index >= capacity()) Grow(index);
    if (!SetBit(&levels_[0], index)) return false;
    ++size_;
    int64_t word = index >> 6;
    for (size_t level = 1; level < levels_.size(); ++level) {
      if (!SetBit(&levels_[level], word)) break;  // already marked: so are the levels above
      word >>= 6;
    }
    return true;
  }

  // Removes `index`. Returns false, changing nothing, if it was absent.
  bool Erase(int64_t index) {
    if (!Contains(index)) return false;
    --size_;
    int64_t position = index;
    for (size_t level = 0; level < levels_.size(); ++level) {
      uint64_t& word = levels_[level][position >> 6];
      word &= ~(uint64_t{1} << (position & 63));
      if (word != 0) break;  // the word still has bits: the levels above stay marked
      position >>= 6;
    }
    return true;
  }

  bool Contains(int64_t index) const {
    if (index < 0 || index >= capacity()) return false;
    return (levels_[0][index >> 6] >> (index & 63)) & 1;
  }

  bool empty() const { return size_ == 0; }
  int64_t size() const { return size_; }

  // The largest index in the set, or -1 if it is empty.
  int64_t Max() const {
    if (size_ == 0) return -1;
    return Descend(levels_.size() - 1, HighestBit(levels_.back()[0]));
  }

  // The largest index in the set below `index`, or -1 if there is none.
  int64_t Prev(int64_t index) const {
    if (size_ == 0 || index <= 0) return -1;
    if (index >= capacity()) return Max();
    // At each level, the bits below `position` in its word; none: the words before it, one level up.
    int64_t position = index;
    for (size_t level = 0; level < levels_.size(); ++level) {
      const int bit = static_cast<int>(position & 63);
      const int64_t word_index = position >> 6;
      const uint64_t below = bit == 0 ? 0 : levels_[level][word_index] & ((uint64_t{1} << bit) - 1);
      if (below != 0) return Descend(level, word_index * 64 + HighestBit(below));
      position = word_index;
      if (position == 0) return -1;
    }
    return -1;
  }

 private:
  static int HighestBit(uint64_t word) { return 63 - __builtin_clzll(word); }

  // Sets bit `index` of `words`; false if it was set already.
  static bool SetBit(std::vector<uint64_t>* words, int64_t index) {
    uint64_t& word = (*words)[index >> 6];
    const uint64_t mask = uint64_t{1} << (index & 63);
    if (word & mask) return false;
    word |= mask;
    return true;
  }

  // The largest index under bit `position` of `level` (a set bit).
  int64_t Descend(size_t level, int64_t position) const {
    while (level > 0) {
      --level;
      position = position * 64 + HighestBit(levels_[level][position]);
    }
    return position;
  }

  int64_t capacity() const { return levels_.empty() ? 0 : static_cast<int64_t>(levels_[0].size()) * 64; }

  // Makes room for `index` (at least doubling level 0) and rebuilds the levels above level 0.
  void Grow(int64_t index) {
    if (levels_.empty()) levels_.emplace_back();
    const size_t needed = static_cast<size_t>(index / 64 + 1);
    levels_[0].resize(std::max(needed, 2 * levels_[0].size()), 0);
    levels_.resize(1);
    while (levels_.back().size() > 1) {
      const std::vector<uint64_t>& below = levels_.back();
      std::vector<uint64_t> above((below.size() + 63) / 64, 0);
      for (size_t i = 0; i < below.size(); ++i) {
        if (below[i] != 0) above[i >> 6] |= uint64_t{1} << (i & 63);
      }
      levels_.push_back(std::move(above));
    }
  }

  std::vector<std::vector<uint64_t>> levels_;  // levels_[0]: one bit per index; back(): one word
  int64_t size_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_UTIL_INDEX_BIT_TREE_H_
