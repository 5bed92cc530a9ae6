// File: tests/cache_reference.h
//
// Brute-force reference caches for the golden tests, written independently of policies/ and sim/: plain
// vectors scanned linearly (O(accesses x capacity)), following the textbook definitions. testonly.
//   LRU: a recency-ordered vector; a hit moves the block to the front; a miss with a full cache drops
//        the back.
//   FIFO: an insertion-ordered vector; hits change nothing.
//   Belady (MIN with bypass): on a miss with a full cache, look up each resident block's next use and
//        the incoming block's by scanning the future accesses; drop the one used furthest in the future
//        (never again = infinity); if that is the incoming block it is not inserted.
//
// Example:
//   ReferenceResult r = ReferenceLru(stream, 1000);  // r.hits, r.prefix_hits
#ifndef KVSIM_TESTS_CACHE_REFERENCE_H_
#define KVSIM_TESTS_CACHE_REFERENCE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/request.h"
#include "traces/trace_io.h"
#include "traces/trace_reader.h"

namespace kvsim {

// The access stream: block ids in order, and where each request starts.
struct ReferenceStream {
  std::vector<uint64_t> blocks;
  std::vector<size_t> request_starts;  // plus blocks.size() at the end
};

inline ReferenceStream StreamOf(const std::vector<Request>& requests) {
  ReferenceStream s;
  for (const Request& r : requests) {
    s.request_starts.push_back(s.blocks.size());
    s.blocks.insert(s.blocks.end(), r.block_hashes.begin(), r.block_hashes.end());
  }
  s.request_starts.push_back(s.blocks.size());
  return s;
}

// Every request of a trace file (fresh hashes of 16 tokens where there are none).
inline absl::StatusOr<std::vector<Request>> LoadRequests(const std::string& path) {
  auto reader = OpenTrace(path, {});
  if (!reader.ok()) return reader.status();
  std::vector<Request> requests;
  Request r;
  while ((*reader)->Next(&r)) {
    if (r.block_hashes.empty()) AssignFreshBlockHashes(16, &r);
    requests.push_back(r);
  }
  if (!(*reader)->status().ok()) return (*reader)->status();
  return requests;
}

struct ReferenceResult {
  int64_t hits = 0;
  int64_t prefix_hits = 0;
};

// kind: "lru", "fifo" or "belady".
inline ReferenceResult ReferenceRun(const ReferenceStream& s, const std::string& kind, size_t capacity) {
  ReferenceResult result;
  std::vector<uint64_t> cache;  // front = most recent (LRU) / newest (FIFO)
  // For Belady: the future positions of each block, consumed as the stream advances.
  std::unordered_map<uint64_t, std::vector<size_t>> positions;
  std::unordered_map<uint64_t, size_t> consumed;
  if (kind == "belady") {
    for (size_t i = 0; i < s.blocks.size(); ++i) positions[s.blocks[i]].push_back(i);
  }
  auto next_use = [&](uint64_t block, size_t now) {
    // The first position of `block` after `now`, scanning its list from the consumed mark.
    const std::vector<size_t>& p = positions[block];
    size_t& k = consumed[block];
    while (k < p.size() && p[k] <= now) ++k;
    return k < p.size() ? p[k] : std::numeric_limits<size_t>::max();
  };
  for (size_t r = 0; r + 1 < s.request_starts.size(); ++r) {
    bool prefix = true;
    for (size_t i = s.request_starts[r]; i < s.request_starts[r + 1]; ++i) {
      const uint64_t b = s.blocks[i];
      auto it = std::find(cache.begin(), cache.end(), b);
      if (it != cache.end()) {
        ++result.hits;
        if (prefix) ++result.prefix_hits;
        if (kind == "lru") {
          cache.erase(it);
          cache.insert(cache.begin(), b);
        }
        continue;
      }
      prefix = false;
      if (cache.size() >= capacity) {
        if (kind == "belady") {
          size_t worst = 0, worst_next = 0;
          for (size_t j = 0; j < cache.size(); ++j) {
            const size_t n = next_use(cache[j], i);
            if (j == 0 || n > worst_next) {
              worst = j;
              worst_next = n;
            }
          }
          if (next_use(b, i) >= worst_next) continue;  // bypass: the incoming block is needed last
          cache.erase(cache.begin() + worst);
        } else {
          cache.pop_back();
        }
      }
      cache.insert(cache.begin(), b);
    }
  }
  return result;
}

}  // namespace kvsim

#endif  // KVSIM_TESTS_CACHE_REFERENCE_H_
