// File: traces/importers/vidur_reader.h
//
// The Vidur request-trace CSV importer ("vidur"), so that users of the Vidur simulator can bring their
// traces. Columns (by name; others ignored):
//   arrived_at          arrival in seconds, decimal (required)
//   num_prefill_tokens  prompt tokens >= 0 (required)
//   num_decode_tokens   generated tokens >= 0 (required)
// request_id = 0-based row index; arrival_ns = arrived_at - the earliest, exact to the ns; no block
// hashes. Detected by the three column names.
#ifndef KVSIM_TRACES_IMPORTERS_VIDUR_READER_H_
#define KVSIM_TRACES_IMPORTERS_VIDUR_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/trace_reader.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenVidurTrace(const std::string& path, const TraceOptions& options);

bool LooksLikeVidur(absl::string_view head);

}  // namespace kvsim

#endif  // KVSIM_TRACES_IMPORTERS_VIDUR_READER_H_
