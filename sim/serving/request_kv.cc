#include "sim/serving/request_kv.h"

#include <utility>

#include "traces/generators/portable_random.h"
#include "util/check.h"
#include "util/mix64.h"

namespace kvsim {
namespace {

// Blocks of different formats never share a hash (with probability 1 - 2^-64 per pair).
uint64_t MixHash(uint64_t hash, uint64_t salt) { return Mix64(hash ^ Mix64(salt)); }

}  // namespace

void RegroupBlocks(int32_t block_factor, uint64_t hash_salt, int32_t block_tokens, Request* request) {
  KVSIM_CHECK(block_factor >= 1 && block_tokens > 0);
  if (block_factor == 1 && hash_salt == 0) return;
  std::vector<uint64_t>& hashes = request->block_hashes;
  if (block_factor == 1) {
    for (uint64_t& hash : hashes) hash = MixHash(hash, hash_salt);
    return;
  }
  const int64_t n = static_cast<int64_t>(hashes.size());
  const bool variable = !request->block_token_counts.empty();
  std::vector<uint64_t> grouped_hashes;
  std::vector<int32_t> grouped_counts;
  int64_t start = 0;  // prompt tokens before block k
  for (int64_t k = 0; k < n; k += block_factor) {
    const int64_t last = std::min<int64_t>(n, k + block_factor) - 1;
    int64_t tokens = 0;
    for (int64_t j = k; j <= last; ++j) {
      tokens += variable ? request->block_token_counts[j]
                         : std::min<int64_t>(block_tokens, request->input_tokens - (start + tokens));
    }
    start += tokens;
    grouped_hashes.push_back(hash_salt == 0 ? hashes[last] : MixHash(hashes[last], hash_salt));
    grouped_counts.push_back(static_cast<int32_t>(tokens));
  }
  hashes = std::move(grouped_hashes);
  request->block_token_counts = std::move(grouped_counts);
}

}  // namespace kvsim
