#include "sim/serving/session_chains.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kvsim {

absl::StatusOr<SessionChains> BuildSessionChains(const std::vector<Request>& requests, absl::string_view source) {
  const int32_t n = static_cast<int32_t>(requests.size());
  SessionChains chains;
  chains.predecessor.assign(n, -1);
  chains.think_ns.assign(n, 0);
  chains.successors.resize(n);
  absl::flat_hash_map<uint64_t, int32_t> index_of_id;
  absl::flat_hash_map<int64_t, int32_t> last_of_session;
  index_of_id.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    const Request& r = requests[i];
    if (!index_of_id.emplace(r.request_id, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": request_id ", r.request_id, " appears twice; closed-loop sessions need unique ids"));
    }
    int32_t pred = -1;
    if (r.session_id >= 0) {
      if (r.parent_id >= 0) {
        auto parent = index_of_id.find(static_cast<uint64_t>(r.parent_id));
        if (parent != index_of_id.end() && parent->second != i && requests[parent->second].session_id == r.session_id) {
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
    const Request& p = requests[pred];
    int64_t think = 0;
    if (!p.tool_calls.empty()) {
      for (const ToolCall& call : p.tool_calls) think += std::max<int64_t>(0, call.duration_ns);
    } else {
      think = std::max<int64_t>(0, r.arrival_ns - p.arrival_ns);
    }
    chains.predecessor[i] = pred;
    chains.think_ns[i] = think;
    chains.successors[pred].push_back(i);
  }
  return chains;
}

}  // namespace kvsim
