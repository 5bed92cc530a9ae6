// File: traces/importers/chunk_hash_reader.h
//
// The hash-per-chunk JSONL importer ("chunk_hash"): traces in the layout of LMBench's trace replayer
// (LMCache/LMBench 3-workloads/trace-replayer/traces/*.jsonl) and of content-hash-per-chunk exports,
// where each id is the content hash of one chunk of the prompt, chunks differ in size (a tokenizer's
// chunking, about 30-37 tokens, not a fixed block size), and ids are not prefix-chained (the same id
// follows different predecessors; an id may repeat inside one request). One object a line:
//   {"timestamp": "1718000000123456789", "input_length": 100, "output_length": 5, "hash_ids": [7, 9, 7]}
//   timestamp      an integer, or a string of one; unit: TraceOptions::timestamp_unit_ns (flag
//                  --trace_timestamp_unit=ns|us|ms|s), else detected from the first record's magnitude
//                  |t|: >= 1e17 ns, >= 1e14 us, >= 1e11 ms, >= 1e8 s (Unix-epoch times of 1973..2286 in
//                  each unit); smaller values (times relative to the trace start) are ms, as Mooncake's
//   input_length   prompt tokens, integer >= 1 (a zero-token prompt is refused: replay could not run it)
//   output_length  generated tokens, integer >= 0
//   hash_ids       n >= 1 ids (integers, or strings of decimal integers), n <= input_length
// Tokens per id: the n ids share the input_length L tokens as floor(L / n) each, the last id taking the
// remainder L - (n - 1) x floor(L / n); they go into Request::block_token_counts (variable blocks).
// Chaining (TraceOptions::chain_hashes, flag --chain_hashes; ON by default for this format, turn it off
// with --chain_hashes=false): id'_0 = H(0, id_0), id'_k = H(id'_{k-1}, id_k) (ChainBlockHash of
// traces/importers/hashed_reader.h), so equal id'_k means equal chunks 0..k and prefix reuse is sound.
// Unchained, the ids stay content hashes (segment-reuse semantics; a warning says so).
// The trace's nominal block size (TraceInfo::block_tokens, what the serving simulator sizes its KV slots
// and generated-token blocks by) is TraceOptions::block_tokens (--trace_block_tokens) if > 0, else the
// rounded mean tokens per id over the first kChunkHashScanRecords records (at least 1).
// request_id = 0-based record index; arrival_ns = (timestamp - the earliest) x unit.
//
// Detection (the Mooncake reader shares the four keys): the first non-blank line is an object with
// "timestamp", "input_length", "output_length" and "hash_ids", without "block_size" (that is "hashed")
// or "chat_id" (Qwen-Bailian), and either its timestamp is a JSON string, or its id count differs from
// ceil(input_length / 512). A Mooncake file has integer timestamps and exactly ceil(input_length / 512)
// ids on every line, so no valid Mooncake file is taken for this format; a hash-per-chunk file whose
// first record happens to fit 512-token blocks and has integer timestamps needs --trace_format=chunk_hash.
#ifndef KVSIM_TRACES_IMPORTERS_CHUNK_HASH_READER_H_
#define KVSIM_TRACES_IMPORTERS_CHUNK_HASH_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Records read ahead by the opener to fix the nominal block size.
inline constexpr int kChunkHashScanRecords = 1000;

absl::StatusOr<std::unique_ptr<TraceReader>> OpenChunkHashTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeChunkHash(absl::string_view head);

// The tokens of each of `num_ids` ids sharing `input_tokens` tokens by the rule above.
// REQUIRES: 1 <= num_ids <= input_tokens.
void SplitChunkTokens(int64_t input_tokens, int64_t num_ids, std::vector<int32_t>* counts);

// Nanoseconds per unit for the first timestamp `t` by the magnitude rule above.
int64_t DetectTimestampUnitNs(int64_t t);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_CHUNK_HASH_READER_H_
