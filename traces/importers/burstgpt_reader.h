// File: traces/importers/burstgpt_reader.h
//
// The BurstGPT CSV importer ("burstgpt"), for the Azure OpenAI GPT traces of BurstGPT (HPMLL). Columns
// (found by name, any order; others ignored):
//   Timestamp         seconds since the trace start, decimal (required)
//   Model             e.g. "ChatGPT", "GPT-4" (required) -> Request::model
//   Request tokens    prompt tokens >= 0 (required)
//   Response tokens   generated tokens >= 0 (required); 0 marks a failed request: the row is kept with
//                     failed = true and counted in a warning, so users can filter it
//   Total tokens      (required by the format, not checked against the sum)
//   Log Type          "Conversation log" -> REQUEST_TYPE_CONVERSATION, "API log" -> REQUEST_TYPE_API
//   Session ID        (optional) integer >= 0 -> session_id; any other non-empty text -> a 63-bit hash
//                     of it; empty = no session. Within a session, turn counts 1, 2, ... in file order
//                     and parent_id is the session's previous request (a map per session: memory grows
//                     with the number of sessions)
//   Elapsed time      (optional, the service's response time; not part of a request: ignored)
// request_id = 0-based row index; arrival_ns = Timestamp - the earliest, exact to the ns; no block
// hashes (block_tokens 0). Detected by the Timestamp, Request tokens and Response tokens columns.
#ifndef KVSIM_TRACES_IMPORTERS_BURSTGPT_READER_H_
#define KVSIM_TRACES_IMPORTERS_BURSTGPT_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenBurstGptTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeBurstGpt(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_BURSTGPT_READER_H_
