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
// Memory is bounded, whatever the trace's length: Add writes what the rule needs of each request
// (SessionLink) to temporary files and sorted spills (SortedRecordSpill), Build joins them by external
// sorts (request ids with parent ids, sessions with their requests, predecessors with their successors)
// into three files of fixed-size records (per request: where it was spilled, its think time and its
// successors' range; the successor lists; the roots), and Get / successors / root read them back through
// a small cache of pages. About 30 MiB at most while building, 2 MiB after; disk about 150 bytes per
// request while building, 32 after.
//
// Example:
//   SessionChains chains;
//   chains.Add(SessionLinkOf(request), spill_offset);  // per request, in trace order
//   KVSIM_RETURN_IF_ERROR(chains.Build("trace.jsonl"));
//   KVSIM_ASSIGN_OR_RETURN(int32_t first, chains.root(0));  ... on finish of i: chains.Successors(i, &next)
//
// Thread-safety: none (reads fill the page cache).
#ifndef KVSIM_SIM_SERVING_SESSION_CHAINS_H_
#define KVSIM_SIM_SERVING_SESSION_CHAINS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// What closed-loop replay reads of request i once the chains are built.
struct SessionChainRecord {
  int64_t spill_offset = 0;     // as given to Add
  int64_t think_ns = 0;         // 0 for roots
  int32_t successor_begin = 0;  // its successors: successor list [begin, begin + count), in trace order
  int32_t successor_count = 0;
};

class SessionChains {
 public:
  struct Options {
    int64_t run_records = int64_t{1} << 18;  // records each sorted spill holds in memory
    int64_t page_records = 1024;             // records per cached page
    int64_t cache_pages = 64;                // pages cached per file (direct-mapped)
  };
  SessionChains();
  explicit SessionChains(const Options& options);
  ~SessionChains();
  SessionChains(const SessionChains&) = delete;
  SessionChains& operator=(const SessionChains&) = delete;

  // Adds the next request in trace order, with where the caller spilled it. REQUIRES: before Build; fewer
  // than 2^31 requests. A failure to write a temporary file is remembered and returned by Build.
  void Add(const SessionLink& link, int64_t spill_offset);
  // Requests added.
  int32_t size() const { return size_; }

  // Builds the chains of the requests added. InvalidArgument naming `source` for a repeated request_id (the
  // first request, in trace order, that repeats one); Internal if a temporary file failed. Call once.
  absl::Status Build(absl::string_view source);

  // After Build: the number of roots, root k (in trace order), request i's record, and request i's
  // successors (in trace order, appended to *out after clearing it). Internal if a file read failed.
  int32_t num_roots() const { return num_roots_; }
  absl::StatusOr<int32_t> root(int32_t k);
  absl::StatusOr<SessionChainRecord> Get(int32_t i);
  absl::Status Successors(int32_t i, std::vector<int32_t>* out);

 private:
  struct Files;  // the temporary files and spills (session_chains.cc)

  const Options options_;
  int32_t size_ = 0;
  int32_t num_roots_ = 0;
  bool built_ = false;
  std::unique_ptr<Files> files_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SESSION_CHAINS_H_
