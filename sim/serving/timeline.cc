#include "sim/serving/timeline.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "util/file.h"

namespace kvsim {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

// The JSON value type (TimelineRecorder's own Json() accessor hides the name in its members).
using TraceEvent = Json;

// Microseconds from integer nanoseconds: the double nearest ns / 1000, which nlohmann prints as the
// shortest decimal that reads back to it, i.e. the exact value with at most three decimals.
double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// One event's common head, in the order Perfetto's examples write it.
TraceEvent Event(const char* name, const char* cat, const char* phase, int32_t pid) {
  TraceEvent event = TraceEvent::object();
  event["name"] = name;
  event["cat"] = cat;
  event["ph"] = phase;
  event["pid"] = pid;
  return event;
}

const char* Direction(const TierTransfer& transfer) {
  if (transfer.load_bytes > 0 && transfer.offload_bytes > 0) return "load+offload";
  return transfer.load_bytes > 0 ? "load" : "offload";
}

}  // namespace

TimelineRecorder::TimelineRecorder(const TimelineOptions& options, std::string path)
    : options_(options), path_(std::move(path)) {
  json_ = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  if (!path_.empty()) {
    temp_path_ = TempPathFor(path_);
    file_ = std::fopen(temp_path_.c_str(), "wb");
    write_failed_ = file_ == nullptr;
    json_.reserve(2 * kFlushBytes);
  }
}

TimelineRecorder::~TimelineRecorder() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

void TimelineRecorder::Flush() {
  if (file_ == nullptr) return;
  if (std::fwrite(json_.data(), 1, json_.size(), file_) != json_.size()) write_failed_ = true;
  json_.clear();
}

bool TimelineRecorder::InWindow(SimTime start_ns, SimTime end_ns) const {
  // Overlaps [window_start, window_end); an instant (start == end) counts when start is inside.
  return end_ns >= options_.window_start_ns && start_ns < options_.window_end_ns &&
         (end_ns > options_.window_start_ns || start_ns == end_ns);
}

void TimelineRecorder::Emit(const TraceEvent& event, SimTime now_ns) {
  if (num_events_ >= options_.max_events) {
    if (dropped_events_ == 0) truncated_at_ns_ = now_ns;
    ++dropped_events_;
    return;
  }
  if (json_.size() >= kFlushBytes) Flush();
  if (num_events_ > 0) json_ += ",\n";
  json_ += event.dump(-1, ' ', false, TraceEvent::error_handler_t::replace);
  ++num_events_;
}

absl::Status TimelineRecorder::Finish() {
  if (path_.empty()) return absl::OkStatus();
  if (file_ == nullptr) return absl::InternalError(absl::StrCat(temp_path_, ": cannot create"));
  Flush();
  std::FILE* file = file_;
  file_ = nullptr;
  if (write_failed_) {
    std::fclose(file);
    std::remove(temp_path_.c_str());
    return absl::InternalError(absl::StrCat(temp_path_, ": write failed"));
  }
  return CommitTempFile(file, temp_path_, path_);
}

void TimelineRecorder::Counter(int32_t replica, const char* name, const char* series, int64_t value, SimTime ts_ns,
                               SimTime now_ns) {
  TraceEvent event = TraceEvent::object();
  event["name"] = name;
  event["ph"] = "C";
  event["pid"] = replica;
  event["ts"] = Us(ts_ns);
  event["args"] = TraceEvent::object({{series, value}});
  Emit(event, now_ns);
}

void TimelineRecorder::OnIteration(const IterationRecord& r) {
  if (static_cast<size_t>(r.replica) >= counters_.size()) counters_.resize(r.replica + 1);
  ReplicaCounters& counters = counters_[r.replica];
  const SimTime now_ns = r.start_ns;
  // The replica idled between its last iteration's end and this start: its batch was empty.
  const SimTime idle_from_ns = counters.last_iteration_end_ns;
  counters.last_iteration_end_ns = r.start_ns + r.duration_ns;
  if (idle_from_ns >= 0 && idle_from_ns < r.start_ns && InWindow(idle_from_ns, idle_from_ns) &&
      counters.batch_size != 0) {
    counters.batch_size = 0;
    Counter(r.replica, "batch size", "sequences", 0, idle_from_ns, now_ns);
  }
  if (!InWindow(r.start_ns, r.start_ns + r.duration_ns)) return;

  TraceEvent iteration = Event("iteration", "iteration", "X", r.replica);
  iteration["tid"] = 0;
  iteration["ts"] = Us(r.start_ns);
  iteration["dur"] = Us(r.duration_ns);
  iteration["args"] = TraceEvent::object({{"batch_size", r.batch_size},
                                    {"prefill_tokens", r.prefill_tokens},
                                    {"decode_tokens", r.decode_tokens},
                                    {"gpu_blocks_used", r.gpu_blocks_used},
                                    {"queued", r.queued_requests}});
  Emit(iteration, now_ns);
  // The tiers' transfers run one after another (their times add up to transfer_ns).
  SimTime transfer_start_ns = r.start_ns;
  if (r.transfers != nullptr) {
    for (const TierTransfer& transfer : *r.transfers) {
      TraceEvent event = Event("transfer", "transfer", "X", r.replica);
      event["tid"] = 1;
      event["ts"] = Us(transfer_start_ns);
      event["dur"] = Us(transfer.duration_ns);
      event["args"] = TraceEvent::object({{"tier", std::string(transfer.tier_name)},
                                    {"direction", Direction(transfer)},
                                    {"bytes", transfer.load_bytes + transfer.offload_bytes},
                                    {"load_bytes", transfer.load_bytes},
                                    {"offload_bytes", transfer.offload_bytes}});
      Emit(event, now_ns);
      transfer_start_ns += transfer.duration_ns;
    }
  }
  if (r.evicted_blocks > 0) {
    TraceEvent evict = Event("evict", "eviction", "i", r.replica);
    evict["s"] = "t";
    evict["tid"] = 2;
    evict["ts"] = Us(r.start_ns);
    evict["args"] = TraceEvent::object({{"blocks", r.evicted_blocks}});
    Emit(evict, now_ns);
  }
  if (counters.gpu_blocks_used != r.gpu_blocks_used) {
    counters.gpu_blocks_used = r.gpu_blocks_used;
    Counter(r.replica, "GPU KV blocks used", "blocks", r.gpu_blocks_used, r.start_ns, now_ns);
  }
  if (counters.queued_requests != r.queued_requests) {
    counters.queued_requests = r.queued_requests;
    Counter(r.replica, "requests waiting", "requests", r.queued_requests, r.start_ns, now_ns);
  }
  if (counters.batch_size != r.batch_size) {
    counters.batch_size = r.batch_size;
    Counter(r.replica, "batch size", "sequences", r.batch_size, r.start_ns, now_ns);
  }
}

void TimelineRecorder::OnPreemption(SimTime now_ns, const RequestState& state) {
  if (!InWindow(now_ns, now_ns)) return;
  TraceEvent event = Event("preempt", "preemption", "i", state.replica);
  event["s"] = "t";
  event["tid"] = 2;
  event["ts"] = Us(now_ns);
  event["args"] = TraceEvent::object({{"request", state.request.request_id}, {"swapped", state.swapped}});
  Emit(event, now_ns);
}

void TimelineRecorder::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.rejected || !InWindow(state.arrival_ns, now_ns)) return;
  const uint64_t id = state.request.request_id;
  const std::string name = absl::StrCat("request ", id);
  auto common = [&](const char* phase, SimTime ts_ns) {
    TraceEvent event = TraceEvent::object();
    event["cat"] = "request";
    event["id"] = id;
    event["pid"] = state.replica;
    event["tid"] = 3;
    event["name"] = name;
    event["ph"] = phase;
    event["ts"] = Us(ts_ns);
    return event;
  };
  TraceEvent begin = common("b", state.arrival_ns);
  begin["args"] = TraceEvent::object({{"input_tokens", state.request.input_tokens},
                                {"output_tokens", state.generated_tokens},
                                {"reused_tokens", state.reused_tokens},
                                {"preemptions", state.preemptions}});
  Emit(begin, now_ns);
  if (state.first_token_ns >= 0) {
    TraceEvent first = common("n", state.first_token_ns);
    first["args"] = TraceEvent::object({{"event", "first token"}});
    Emit(first, now_ns);
  }
  Emit(common("e", now_ns), now_ns);
}

void TimelineRecorder::OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {
  // Each replica's batch empties when its last iteration ends.
  for (size_t r = 0; r < counters_.size(); ++r) {
    ReplicaCounters& counters = counters_[r];
    const SimTime last_end_ns = counters.last_iteration_end_ns;
    if (last_end_ns >= 0 && counters.batch_size > 0 && InWindow(last_end_ns, last_end_ns)) {
      counters.batch_size = 0;
      Counter(static_cast<int32_t>(r), "batch size", "sequences", 0, last_end_ns, end_ns);
    }
  }
  // Metadata: not counted against the cap, so the tracks are always named.
  std::string metadata;
  const char* tracks[] = {"iterations", "transfers", "evictions and preemptions", "requests"};
  for (size_t r = 0; r < replicas.size(); ++r) {
    TraceEvent process = TraceEvent::object();
    process["name"] = "process_name";
    process["ph"] = "M";
    process["pid"] = r;
    process["args"] = TraceEvent::object({{"name", absl::StrCat("replica ", r)}});
    absl::StrAppend(&metadata, metadata.empty() && num_events_ == 0 ? "" : ",\n", process.dump());
    for (int t = 0; t < 4; ++t) {
      TraceEvent thread = TraceEvent::object();
      thread["name"] = "thread_name";
      thread["ph"] = "M";
      thread["pid"] = r;
      thread["tid"] = t;
      thread["args"] = TraceEvent::object({{"name", tracks[t]}});
      absl::StrAppend(&metadata, ",\n", thread.dump());
    }
  }
  if (truncated()) {
    TraceEvent note = TraceEvent::object();
    note["name"] = "truncated";
    note["ph"] = "M";
    note["pid"] = 0;
    note["args"] = TraceEvent::object({{"after_events", num_events_},
                                      {"dropped_events", dropped_events_},
                                      {"stopped_at_us", Us(truncated_at_ns_)}});
    absl::StrAppend(&metadata, metadata.empty() && num_events_ == 0 ? "" : ",\n", note.dump());
  }
  json_ += metadata;
  json_ += "\n]}\n";
}

}  // namespace kvsim
