// File: traces/importers/mooncake_reader.h
//
// The Mooncake JSONL importer ("mooncake"). One JSON object per line:
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, ...]}
//   timestamp      integer ms since the trace start (required)
//   input_length   prompt tokens, integer >= 0 (required)
//   output_length  generated tokens, integer >= 0 (required)
//   hash_ids       prefix-chained ids of the prompt's 512-token blocks, the last one partial (required);
//                  len(hash_ids) must be ceil(input_length / 512), otherwise the line is an error
// Other keys are ignored. Requests get block_tokens = 512, request_id = 0-based line index among the
// records, arrival_ns = (timestamp - earliest timestamp) * 1e6; order and ids follow ImportReader
// (traces/text/import_reader.h). Detected when the first line is an object with "timestamp",
// "input_length", "output_length" and "hash_ids" and no "chat_id" (that is Qwen-Bailian).
#ifndef KVSIM_TRACES_IMPORTERS_MOONCAKE_READER_H_
#define KVSIM_TRACES_IMPORTERS_MOONCAKE_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

inline constexpr int32_t kMooncakeBlockTokens = 512;

absl::StatusOr<std::unique_ptr<TraceReader>> OpenMooncakeTrace(const std::string& path, const TraceOptions& options);

// True if `head` (a file's beginning) looks like a Mooncake trace.
bool LooksLikeMooncake(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_MOONCAKE_READER_H_
