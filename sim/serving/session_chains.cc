#include "sim/serving/session_chains.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kvsim {

SessionLink SessionLinkOf(const Request& request) {
  SessionLink link;
  link.request_id = request.request_id;
  link.session_id = request.session_id;
  link.parent_id = request.parent_id;
  link.arrival_ns = request.arrival_ns;
  if (!request.tool_calls.empty()) {
    link.tool_ns = 0;
    for (const ToolCall& call : request.tool_calls) link.tool_ns += std::max<int64_t>(0, call.duration_ns);
  }
  return link;
}

absl::StatusOr<SessionChains> BuildSessionChains(const std::vector<SessionLink>& links, absl::string_view source) {
  const int32_t n = static_cast<int32_t>(links.size());
  SessionChains chains;
  chains.predecessor.assign(n, -1);
  chains.think_ns.assign(n, 0);
  {
    absl::flat_hash_map<uint64_t, int32_t> index_of_id;
    absl::flat_hash_map<int64_t, int32_t> last_of_session;
    index_of_id.reserve(n);
    for (int32_t i = 0; i < n; ++i) {
      const SessionLink& r = links[i];
      if (!index_of_id.emplace(r.request_id, i).second) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": request_id ", r.request_id,
                                                       " appears twice; closed-loop sessions need unique ids"));
      }
      int32_t pred = -1;
      if (r.session_id >= 0) {
        if (r.parent_id >= 0) {
          auto parent = index_of_id.find(static_cast<uint64_t>(r.parent_id));
          if (parent != index_of_id.end() && parent->second != i && links[parent->second].session_id == r.session_id) {
            pred = parent->second;
          }
        }
        if (pred < 0) {
          auto last = last_of_session.find(r.session_id);
          if (last != last_of_session.end()) pred = last->second;
        }
        last_of_session[r.session_id] = i;
      }
      if (pred < 0) {
        chains.roots.push_back(i);
        continue;
      }
      const SessionLink& p = links[pred];
      chains.predecessor[i] = pred;
      chains.think_ns[i] = p.tool_ns >= 0 ? p.tool_ns : std::max<int64_t>(0, r.arrival_ns - p.arrival_ns);
    }
  }
  // Successors grouped by predecessor (a counting sort: within a group, in trace order).
  chains.successor_begin.assign(static_cast<size_t>(n) + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    if (chains.predecessor[i] >= 0) ++chains.successor_begin[chains.predecessor[i] + 1];
  }
  for (int32_t i = 0; i < n; ++i) chains.successor_begin[i + 1] += chains.successor_begin[i];
  chains.successor_list.resize(chains.successor_begin[n]);
  std::vector<int32_t> next(chains.successor_begin.begin(), chains.successor_begin.end() - 1);
  for (int32_t i = 0; i < n; ++i) {
    if (chains.predecessor[i] >= 0) chains.successor_list[next[chains.predecessor[i]]++] = i;
  }
  return chains;
}

}  // namespace kvsim
