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
// BuildSessionChains reads each request's SessionLink (its ids, arrival and tool-call time: what the rule
// above needs), not the request, so a closed-loop replay holds about 40 bytes per request while it builds
// the chains and 20 after (think_ns, predecessor and the successors' two arrays), not the trace.
//
// Example:
//   links.push_back(SessionLinkOf(request));  // per request, in trace order
//   KVSIM_ASSIGN_OR_RETURN(SessionChains chains, BuildSessionChains(links, "trace.jsonl"));
//   for (int32_t root : chains.roots) ...;  on finish of i: for (int32_t next : chains.successors(i)) ...
//
// Thread-safety: immutable after construction.
#ifndef KVSIM_SIM_SERVING_SESSION_CHAINS_H_
#define KVSIM_SIM_SERVING_SESSION_CHAINS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "traces/request.h"

namespace kvsim {

// What the chains need of a request.
struct SessionLink {
  uint64_t request_id = 0;
  int64_t session_id = -1;
  int64_t parent_id = -1;
  int64_t arrival_ns = 0;
  int64_t tool_ns = -1;  // the sum of its tool calls' durations (each at least 0); -1 = no tool calls
};
SessionLink SessionLinkOf(const Request& request);

struct SessionChains {
  std::vector<int32_t> roots;        // indices issued at their trace times, in trace order
  std::vector<int32_t> predecessor;  // per request; -1 for roots
  std::vector<int64_t> think_ns;     // per request; 0 for roots
  // The successors of request i, in trace order: successor_list[successor_begin[i] .. successor_begin[i + 1]).
  std::vector<int32_t> successor_begin;  // per request, plus one
  std::vector<int32_t> successor_list;

  absl::Span<const int32_t> successors(int32_t i) const {
    return absl::MakeConstSpan(successor_list).subspan(successor_begin[i], successor_begin[i + 1] - successor_begin[i]);
  }
};

// Chains of the requests whose links are `links` (in trace order). InvalidArgument naming `source` for a
// repeated request_id (the first request, in trace order, that repeats one).
absl::StatusOr<SessionChains> BuildSessionChains(const std::vector<SessionLink>& links, absl::string_view source);

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SESSION_CHAINS_H_
