// File: traces/importers/hashed_reader.h
//
// The hash-per-block JSONL importer ("hashed"): traces whose block ids are content hashes of each
// block on its own (equal id = equal 16/64/...-token content), not prefix-chained ids. One object a line:
//   {"timestamp": "1718000000123456789", "input_length": 40, "output_length": 5, "block_size": 16,
//    "hash_ids": [8172631, 99, 12]}
//   timestamp      epoch ns, as an integer or as a string of one (JSON numbers lose precision past 2^53)
//   input_length, output_length   token counts >= 0
//   block_size     tokens per block, > 0; optional when TraceOptions::block_tokens gives it (then equal)
//   hash_ids       one id per block: integers, or strings of decimal integers; count must be
//                  ceil(input_length / block_size)
// With TraceOptions::chain_hashes (flag --chain_hashes) the ids become prefix ids:
//   id'_0 = H(0, id_0), id'_k = H(id'_{k-1}, id_k), H(p, x) = M(M(p) xor x),
// M the SplitMix64 finaliser (a bijection), so equal id'_k means (with probability 1 - 2^-64 per pair)
// equal content in blocks 0..k: what prefix caching needs. Without it the ids are kept as they are
// (segment-reuse semantics) and the reader warns once. request_id = 0-based record index;
// arrival_ns = timestamp - the earliest. Detected when the first line has "hash_ids" and either a
// "block_size" key or a string "timestamp" (a file without "block_size" that has Mooncake's four keys is
// taken first by "chunk_hash", variable tokens per id: traces/importers/chunk_hash_reader.h; name
// --trace_format=hashed --trace_block_tokens=N for fixed blocks).
#ifndef KVSIM_TRACES_IMPORTERS_HASHED_READER_H_
#define KVSIM_TRACES_IMPORTERS_HASHED_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenHashedTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeHashed(absl::string_view head);

// H(p, x) above.
uint64_t ChainBlockHash(uint64_t previous, uint64_t content);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_HASHED_READER_H_
