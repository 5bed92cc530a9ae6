// File: traces/importers/bailian_reader.h
//
// The Qwen-Bailian JSONL importer ("bailian"), for Alibaba's anonymised Bailian (Qwen) usage traces
// (e.g. qwen_traceA_blksz_16.jsonl). One JSON object per line:
//   {"chat_id": 159, "parent_chat_id": 55, "timestamp": 61.114, "input_length": 521, "output_length": 132,
//    "type": "text", "turn": 2, "hash_ids": [1089, 1090, ...]}
//   chat_id         integer >= 0, unique in the trace (required)
//   parent_chat_id  chat_id of the previous turn of the conversation, -1 for a first turn (required)
//   timestamp       seconds, fractional (required)
//   input_length, output_length   token counts >= 0 (required)
//   type            "text" | "image" | "file" | "search" (optional; another string, as newer traces may
//                   use, gives REQUEST_TYPE_OTHER, its names and counts in a warning; not a string: error)
//   turn            integer >= 0 (optional; 0 = unknown)
//   hash_ids        ids of the prompt's 16-token blocks (salted hashes, prefix-chained); the count must be
//                   ceil(input_length / 16) (required)
// Mapping to Request: request_id = chat_id; parent_id = parent_chat_id (or -1); session_id = the chat_id
// of the conversation's first turn, found by following parent_chat_id through the chats read before
// (a map of 16 bytes per chat: memory grows with the number of chats, not with their size). A parent
// that does not appear earlier in the file starts its own session, keyed by the parent's id, and is
// counted in a warning. block_tokens = 16; arrival_ns = round(timestamp * 1e9) - the earliest.
// Detected by the "chat_id" and "parent_chat_id" keys on the first line.
#ifndef KVSIM_TRACES_IMPORTERS_BAILIAN_READER_H_
#define KVSIM_TRACES_IMPORTERS_BAILIAN_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

inline constexpr int32_t kBailianBlockTokens = 16;

absl::StatusOr<std::unique_ptr<TraceReader>> OpenBailianTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeBailian(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_BAILIAN_READER_H_
