// File: traces/importers/azure_reader.h
//
// The Azure LLM inference trace importer ("azure"), for the 2023 (Splitwise) and 2024 (DynamoLLM)
// releases. CSV with a header naming at least these columns (others are ignored):
//   TIMESTAMP        wall clock "YYYY-MM-DD HH:MM:SS.fffffff" (up to 9 fractional digits, optional zone
//                    suffix such as "+00:00"; no zone = UTC)
//   ContextTokens    prompt tokens, integer >= 0
//   GeneratedTokens  generated tokens, integer >= 0
// No block hashes, sessions or ids: request_id = 0-based row index, block_tokens = 0 (the simulator
// assigns fresh blocks), arrival_ns = TIMESTAMP - the earliest TIMESTAMP, exact to 100 ns (7 digits).
// Order follows ImportReader (traces/text/import_reader.h). Detected by the three column names in the header.
#ifndef KVSIM_TRACES_IMPORTERS_AZURE_READER_H_
#define KVSIM_TRACES_IMPORTERS_AZURE_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenAzureTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeAzure(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_AZURE_READER_H_
