// File: traces/generators/block_chain.h
//
// BlockChain: prefix-chained block ids for a synthetic prompt that grows by appending segments of
// content (a system prompt, a user message, a response, a tool result). Generated prompts have no real
// tokens, so content is named: a segment is a 64-bit id plus a length, and token i of a segment is "the
// i-th token of that segment". Two prompts have equal tokens up to position p exactly when they consist
// of the same (segment id, offset, length) pieces up to p.
//
// What an id means: the id of block k (tokens [k*B, min((k+1)*B, n)) of an n-token prompt, B =
// block_tokens) is a hash of the previous block's id and the pieces that make up block k, including
// their lengths. So equal ids at position k mean equal prompts from token 0 through the end of block k,
// the meaning Request::block_hashes documents, and this holds for the partial last block too: a partial
// block's id names exactly its tokens (say 7 of 16). When the next chat turn re-reads that conversation,
// the same block position now holds 16 tokens (the 7 plus the start of the response), a different
// content, so it gets a different id: a cache never counts the partial block of one turn as a hit for the
// next. Only the full blocks of the previous turn's prompt are shared. (A partial block is shared only by
// a prompt with the identical prefix that also ends at the same token.)
//
// Example (B = 16):
//   BlockChain chain(16);
//   chain.Append(system_prompt_id, 40);  // blocks 0, 1 full; 8 tokens pending
//   chain.Append(user_message_id, 20);   // block 2 = 8 system + 8 user tokens; 12 tokens pending
//   std::vector<uint64_t> ids;
//   chain.BlockIds(&ids);                // 4 ids: 3 full blocks and the 12-token partial one
//
// Ids are 64-bit hashes (SplitMix64 finaliser); with n distinct blocks the chance of any collision is
// about n^2 / 2^65 (1e-7 for 2 billion blocks). Ownership: a value type. Thread-safety: none needed
// beyond the usual (one writer).
#ifndef KVSIM_TRACES_GENERATORS_BLOCK_CHAIN_H_
#define KVSIM_TRACES_GENERATORS_BLOCK_CHAIN_H_

#include <cstdint>
#include <vector>

namespace kvsim {

class BlockChain {
 public:
  // REQUIRES: block_tokens > 0.
  explicit BlockChain(int32_t block_tokens);

  // Appends tokens [0, num_tokens) of segment `segment_id`. REQUIRES: num_tokens >= 0.
  void Append(uint64_t segment_id, int64_t num_tokens);

  // Total tokens appended.
  int64_t num_tokens() const { return num_tokens_; }

  // Number of full blocks so far (their ids never change as the chain grows).
  int64_t num_full_blocks() const { return static_cast<int64_t>(full_.size()); }

  // Replaces *ids with the ids of all NumBlocks(num_tokens(), block_tokens) blocks: the full ones, then
  // the partial last block if num_tokens() is not a multiple of block_tokens.
  void BlockIds(std::vector<uint64_t>* ids) const;

  // Back to an empty prompt, keeping capacity.
  void Clear();

 private:
  struct Piece {
    uint64_t segment_id;
    int64_t offset;  // first token of the segment in this piece
    int64_t length;
  };
  static uint64_t HashPiece(uint64_t h, const Piece& piece);  // folds one piece into h
  uint64_t HashTail() const;                                  // id of a block made of tail_ after the last full block

  int32_t block_tokens_;
  int64_t num_tokens_ = 0;
  std::vector<uint64_t> full_;  // ids of the full blocks
  std::vector<Piece> tail_;     // pieces of the tokens after the last full block (< block_tokens_)
  int64_t tail_tokens_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_BLOCK_CHAIN_H_
