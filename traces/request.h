// File: traces/request.h
//
// Request: one record of a workload trace, in the plain form the simulator replays (the hot path never
// touches protos; proto::TraceRecord is the interchange form). Readers fill a caller-owned Request, so a
// replay reuses one object and its vectors' capacity for every record.
//
// Blocks: `block_hashes` are prefix-chained ids of the prompt's blocks of `block_tokens` tokens (the last
// one partial): equal id at position k means equal prompt prefix through block k. A consumer that needs
// ids for a request whose trace has none gives it fresh ones, distinct from every other request's, with
// AssignFreshBlockHashes() (the cache simulator does); one that never looks such blocks up counts them
// with PromptBlocks() (the serving simulator does).
//
// Variable blocks: traces whose ids each cover their own number of tokens (hash-per-chunk traces, see
// traces/importers/chunk_hash_reader.h) set `block_token_counts`, one entry > 0 per id, summing to
// input_tokens; `block_tokens` is then the trace's nominal block size (the serving simulator's slot size
// for capacity and generated tokens). Empty = uniform blocks of `block_tokens`. Use BlockTokensAt() and
// BlockStartTokens() instead of arithmetic on block_tokens, so both kinds work.
#ifndef KVSIM_TRACES_REQUEST_H_
#define KVSIM_TRACES_REQUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/trace.pb.h"

namespace kvsim {

struct ToolCall {
  std::string name;         // empty if unknown
  int64_t duration_ns = 0;  // time the tool runs before the session's next call
};

struct Request {
  uint64_t request_id = 0;  // unique in the trace (0-based record index when the source has none)
  int64_t arrival_ns = 0;   // since the trace's first arrival
  int64_t session_id = -1;  // -1 = no session
  int64_t parent_id = -1;   // request_id of the previous call in the session; -1 = first
  int32_t turn = 0;         // 1-based turn in the session; 0 = unknown
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int32_t block_tokens = 0;  // tokens per hash block; 0 = no hashes
  std::vector<uint64_t> block_hashes;
  // Tokens of each block when blocks differ in size; empty = uniform (see above).
  std::vector<int32_t> block_token_counts;
  proto::RequestType type = proto::REQUEST_TYPE_UNSPECIFIED;
  bool failed = false;  // the source marks it failed (e.g. BurstGPT 0 response tokens)
  std::string model;    // model named by the source; empty if none
  std::vector<ToolCall> tool_calls;

  // Resets every field to its default, keeping the vectors' capacity.
  void Clear();
};

// Every field of `request` as bytes in the host's byte order (lists and strings after their lengths),
// appended to *out: the record of temporary files (sim/serving/request_spill.h) and of digests of a
// trace's contents (sim/sweep/capacity_search.h). Not a file format: ReadRequestBytes of the same build
// reads it back.
void AppendRequestBytes(const Request& request, std::string* out);

// Reads the record AppendRequestBytes wrote at data[*pos...] into *request and advances *pos past it;
// false (nothing else defined) if the record is cut short.
bool ReadRequestBytes(absl::string_view data, size_t* pos, Request* request);

// Blocks of `block_tokens` tokens needed for `tokens` tokens (the last one partial): ceil(tokens / bt).
// REQUIRES: block_tokens > 0, tokens >= 0.
inline int64_t NumBlocks(int64_t tokens, int64_t block_tokens) { return (tokens + block_tokens - 1) / block_tokens; }

// Tokens of block k of `request`: block_token_counts[k] if set, else min(block_tokens, input_tokens -
// k x block_tokens). REQUIRES: 0 <= k < block_hashes.size(), block_tokens > 0.
inline int64_t BlockTokensAt(const Request& request, int64_t k) {
  if (!request.block_token_counts.empty()) return request.block_token_counts[k];
  const int64_t bt = request.block_tokens;
  const int64_t rest = request.input_tokens - k * bt;
  return rest < bt ? rest : bt;
}

// Prompt tokens before block k (k in [0, n]; k = n gives input_tokens for well-formed requests):
// the sum of the counts before k when set (O(k)), else min(k x block_tokens, input_tokens).
int64_t BlockStartTokens(const Request& request, int64_t k);

// OK if block_token_counts is empty, or has one entry > 0 per block hash and sums to input_tokens;
// else InvalidArgument saying which.
absl::Status CheckBlockTokenCounts(const Request& request);

// Largest prompt (and output) token count of one request accepted from any source: 2^24 = 16,777,216
// tokens, above the longest context window of any published model. A replay allocates one block per
// block_tokens prompt tokens, so without a limit one record could make it allocate gigabytes.
inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 24;

// Largest number of blocks of one request (hashes given by the trace or assigned at its block size).
inline constexpr int64_t kMaxRequestBlocks = kMaxRequestTokens;

// OK if the request's input and output tokens are within [0, kMaxRequestTokens] and its blocks (the
// hashes it carries, or NumBlocks(input_tokens, block_tokens) if it has none) at most kMaxRequestBlocks.
// Otherwise InvalidArgument "request ID: FIELD N exceeds the limit of ... (it would allocate ...)".
// REQUIRES: block_tokens > 0.
absl::Status CheckRequestLimits(const Request& request, int64_t block_tokens);

// Fills `request->block_hashes` with NumBlocks(input_tokens, block_tokens) ids unique to this request
// (a mix of request_id and block index with the top bit set, so they never equal a trace's small
// sequential ids), and sets request->block_tokens. Deterministic. REQUIRES: block_tokens > 0.
void AssignFreshBlockHashes(int32_t block_tokens, Request* request);
// AssignFreshBlockHashes if `request` has no block hashes (its fresh ids depend only on its id, so they
// are the same whenever they are assigned).
inline void AssignFreshHashesIfNone(int32_t block_tokens, Request* request) {
  if (request->block_hashes.empty()) AssignFreshBlockHashes(block_tokens, request);
}
// The prompt's blocks: one per hash, or for a request without hashes the NumBlocks(input_tokens,
// block_tokens) that AssignFreshBlockHashes would give it (a consumer that never looks its blocks up, as
// the serving simulator does not, need not make their ids). REQUIRES: block_tokens > 0.
inline int64_t PromptBlocks(const Request& request, int64_t block_tokens) {
  return request.block_hashes.empty() ? NumBlocks(request.input_tokens, block_tokens)
                                      : static_cast<int64_t>(request.block_hashes.size());
}

// Conversions between the plain and the interchange form; lossless for every field.
void RequestToProto(const Request& request, proto::TraceRecord* record);
void RequestFromProto(const proto::TraceRecord& record, int32_t block_tokens, Request* request);

}  // namespace kvsim

#endif  // KVSIM_TRACES_REQUEST_H_
