#include "traces/generators/block_chain.h"

#include <algorithm>

#include "traces/generators/portable_random.h"
#include "util/check.h"
#include "util/mix64.h"

namespace kvsim {
namespace {

constexpr uint64_t kFirstParent = 0x6b7673696d2d6731ULL;  // the "previous id" of block 0

}  // namespace

BlockChain::BlockChain(int32_t block_tokens) : block_tokens_(block_tokens) {
  KVSIM_CHECK(block_tokens > 0) << block_tokens;
}

void BlockChain::Append(uint64_t segment_id, int64_t num_tokens) {
  KVSIM_CHECK(num_tokens >= 0) << num_tokens;
  num_tokens_ += num_tokens;
  int64_t offset = 0;
  while (offset < num_tokens) {
    if (tail_tokens_ == 0 && num_tokens - offset >= block_tokens_) {
      // Fast path for a block made of one piece: HashTail() of {segment_id, offset, block_tokens_}.
      full_.push_back(
          HashPiece(Mix64(full_.empty() ? kFirstParent : full_.back()), {segment_id, offset, block_tokens_}));
      offset += block_tokens_;
      continue;
    }
    const int64_t take = std::min<int64_t>(num_tokens - offset, block_tokens_ - tail_tokens_);
    tail_.push_back({segment_id, offset, take});
    tail_tokens_ += take;
    offset += take;
    if (tail_tokens_ == block_tokens_) {
      full_.push_back(HashTail());
      tail_.clear();
      tail_tokens_ = 0;
    }
  }
}

uint64_t BlockChain::HashPiece(uint64_t h, const Piece& piece) {
  h = Mix64(h ^ piece.segment_id);
  h = Mix64(h ^ static_cast<uint64_t>(piece.offset));
  return Mix64(h ^ static_cast<uint64_t>(piece.length));
}

uint64_t BlockChain::HashTail() const {
  uint64_t h = Mix64(full_.empty() ? kFirstParent : full_.back());
  for (const Piece& piece : tail_) h = HashPiece(h, piece);
  return h;
}

void BlockChain::BlockIds(std::vector<uint64_t>* ids) const {
  ids->assign(full_.begin(), full_.end());
  if (tail_tokens_ > 0) ids->push_back(HashTail());
}

void BlockChain::Clear() {
  num_tokens_ = 0;
  full_.clear();
  tail_.clear();
  tail_tokens_ = 0;
}

}  // namespace kvsim
