// File: sim/serving/session_chains.h
//
// SessionChains: the order of a trace's sessions for closed-loop replay (WorkloadConfig.
// closed_loop_sessions). A request's predecessor is the request its parent_id names when that is an
// earlier request of the same session, else the previous request of its session in trace order; a
// request with session_id -1, or the first of its session, is a root and is issued at its trace time.
// Every other request is issued when its predecessor finishes plus its think time:
//   think = the sum of the predecessor's tool_calls durations, when it has tool calls (agent calls: the
//           tool runs between the response and the next call);
//         = max(0, arrival - predecessor's arrival) otherwise (chat turns: the trace's gap; the formats
//           kvsim reads record no service latency to subtract, so the whole gap counts as think time).
// Several requests may follow one predecessor (parallel calls); each gets its own think time.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(SessionChains chains, BuildSessionChains(requests, "trace.jsonl"));
//   for (int32_t root : chains.roots) ...;  on finish of i: for (int32_t next : chains.successors[i]) ...
//
// Thread-safety: immutable after construction.
#ifndef KVSIM_SIM_SERVING_SESSION_CHAINS_H_
#define KVSIM_SIM_SERVING_SESSION_CHAINS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/request.h"

namespace kvsim {

struct SessionChains {
  std::vector<int32_t> roots;                    // indices issued at their trace times, in trace order
  std::vector<int32_t> predecessor;              // per request; -1 for roots
  std::vector<int64_t> think_ns;                 // per request; 0 for roots
  std::vector<std::vector<int32_t>> successors;  // per request, in trace order
};

// Chains of `requests` (in trace order). InvalidArgument naming `source` for a repeated request_id.
absl::StatusOr<SessionChains> BuildSessionChains(const std::vector<Request>& requests, absl::string_view source);

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SESSION_CHAINS_H_
