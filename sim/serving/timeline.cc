#include "sim/serving/timeline.h"

#include <unistd.h>

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

// An event's common head, in the order Perfetto's examples write it; the values are placeholders.
// Instants (phase "i") carry scope "s": "t" (the thread's track).
TraceEvent Event(const char* name, const char* cat, const char* phase, int tid) {
  TraceEvent event = TraceEvent::object();
  event["name"] = name;
  event["cat"] = cat;
  event["ph"] = phase;
  if (phase == absl::string_view("i")) event["s"] = "t";
  event["pid"] = 0;
  event["tid"] = tid;
  event["ts"] = 0.0;
  return event;
}

TraceEvent CounterEvent(const char* name, const char* series) {
  TraceEvent event = TraceEvent::object();
  event["name"] = name;
  event["ph"] = "C";
  event["pid"] = 0;
  event["ts"] = 0.0;
  event["args"] = TraceEvent::object({{series, 0}});
  return event;
}

TraceEvent RequestEvent(const char* phase) {
  TraceEvent event = TraceEvent::object();
  event["cat"] = "request";
  event["id"] = 0;
  event["pid"] = 0;
  event["tid"] = 3;
  event["name"] = "";
  event["ph"] = phase;
  event["ts"] = 0.0;
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
    write_status_ = file_.Open(path_);
    json_.reserve(2 * kFlushBytes);
  }
  iteration_ = Event("iteration", "iteration", "X", 0);
  iteration_["dur"] = 0.0;
  iteration_["args"] = TraceEvent::object(
      {{"batch_size", 0}, {"prefill_tokens", 0}, {"decode_tokens", 0}, {"gpu_blocks_used", 0}, {"queued", 0}});
  transfer_ = Event("transfer", "transfer", "X", 1);
  transfer_["dur"] = 0.0;
  transfer_["args"] =
      TraceEvent::object({{"tier", ""}, {"direction", ""}, {"bytes", 0}, {"load_bytes", 0}, {"offload_bytes", 0}});
  evict_ = Event("evict", "eviction", "i", 2);
  evict_["args"] = TraceEvent::object({{"blocks", 0}});
  preempt_ = Event("preempt", "preemption", "i", 2);
  preempt_["args"] = TraceEvent::object({{"request", 0}, {"swapped", false}});
  blocks_counter_ = CounterEvent("GPU KV blocks used", "blocks");
  waiting_counter_ = CounterEvent("requests waiting", "requests");
  batch_counter_ = CounterEvent("batch size", "sequences");
  request_begin_ = RequestEvent("b");
  request_begin_["args"] =
      TraceEvent::object({{"input_tokens", 0}, {"output_tokens", 0}, {"reused_tokens", 0}, {"preemptions", 0}});
  request_first_token_ = RequestEvent("n");
  request_first_token_["args"] = TraceEvent::object({{"event", "first token"}});
  request_end_ = RequestEvent("e");
}

void TimelineRecorder::Flush() {
  if (!file_.is_open()) return;
  if (write_status_.ok()) write_status_ = file_.Put(json_);
  json_.clear();
}

bool TimelineRecorder::InWindow(SimTime start_ns, SimTime end_ns) const {
  // Overlaps [window_start, window_end); an instant (start == end) counts when start is inside.
  return end_ns >= options_.window_start_ns && start_ns < options_.window_end_ns &&
         (end_ns > options_.window_start_ns || start_ns == end_ns);
}

bool TimelineRecorder::Accept(SimTime now_ns) {
  if (num_events_ < options_.max_events) return true;
  if (dropped_events_ == 0) truncated_at_ns_ = now_ns;
  ++dropped_events_;
  return false;
}

void TimelineRecorder::Write(const TraceEvent& event) {
  if (json_.size() >= kFlushBytes) Flush();
  if (num_events_ > 0) json_ += ",\n";
  json_ += event.dump(-1, ' ', false, TraceEvent::error_handler_t::replace);
  ++num_events_;
}

absl::Status TimelineRecorder::Finish() {
  if (path_.empty()) return absl::OkStatus();
  Flush();
  if (!write_status_.ok()) {
    file_.Discard();
    return write_status_;
  }
  return file_.Commit();
}

void TimelineRecorder::Counter(TraceEvent* counter, int32_t replica, int64_t value, SimTime ts_ns, SimTime now_ns) {
  if (!Accept(now_ns)) return;
  TraceEvent& event = *counter;
  event["pid"] = replica;
  event["ts"] = Us(ts_ns);
  event["args"].begin().value() = value;
  Write(event);
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
    Counter(&batch_counter_, r.replica, 0, idle_from_ns, now_ns);
  }
  if (!InWindow(r.start_ns, r.start_ns + r.duration_ns)) return;

  if (Accept(now_ns)) {
    TraceEvent& event = iteration_;
    event["pid"] = r.replica;
    event["ts"] = Us(r.start_ns);
    event["dur"] = Us(r.duration_ns);
    TraceEvent& args = event["args"];
    args["batch_size"] = r.batch_size;
    args["prefill_tokens"] = r.prefill_tokens;
    args["decode_tokens"] = r.decode_tokens;
    args["gpu_blocks_used"] = r.gpu_blocks_used;
    args["queued"] = r.queued_requests;
    Write(event);
  }
  // The tiers' transfers run one after another (their times add up to transfer_ns).
  SimTime transfer_start_ns = r.start_ns;
  if (r.transfers != nullptr) {
    for (const TierTransfer& transfer : *r.transfers) {
      if (Accept(now_ns)) {
        TraceEvent& event = transfer_;
        event["pid"] = r.replica;
        event["ts"] = Us(transfer_start_ns);
        event["dur"] = Us(transfer.duration_ns);
        TraceEvent& args = event["args"];
        args["tier"] = transfer.tier_name;
        args["direction"] = Direction(transfer);
        args["bytes"] = transfer.load_bytes + transfer.offload_bytes;
        args["load_bytes"] = transfer.load_bytes;
        args["offload_bytes"] = transfer.offload_bytes;
        Write(event);
      }
      transfer_start_ns += transfer.duration_ns;
    }
  }
  if (r.evicted_blocks > 0 && Accept(now_ns)) {
    evict_["pid"] = r.replica;
    evict_["ts"] = Us(r.start_ns);
    evict_["args"]["blocks"] = r.evicted_blocks;
    Write(evict_);
  }
  if (counters.gpu_blocks_used != r.gpu_blocks_used) {
    counters.gpu_blocks_used = r.gpu_blocks_used;
    Counter(&blocks_counter_, r.replica, r.gpu_blocks_used, r.start_ns, now_ns);
  }
  if (counters.queued_requests != r.queued_requests) {
    counters.queued_requests = r.queued_requests;
    Counter(&waiting_counter_, r.replica, r.queued_requests, r.start_ns, now_ns);
  }
  if (counters.batch_size != r.batch_size) {
    counters.batch_size = r.batch_size;
    Counter(&batch_counter_, r.replica, r.batch_size, r.start_ns, now_ns);
  }
}

void TimelineRecorder::OnPreemption(SimTime now_ns, const RequestState& state) {
  if (!InWindow(now_ns, now_ns) || !Accept(now_ns)) return;
  preempt_["pid"] = state.replica;
  preempt_["ts"] = Us(now_ns);
  preempt_["args"]["request"] = state.request.request_id;
  preempt_["args"]["swapped"] = state.swapped;
  Write(preempt_);
}

void TimelineRecorder::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.rejected || !InWindow(state.arrival_ns, now_ns)) return;
  const uint64_t id = state.request.request_id;
  const std::string name = absl::StrCat("request ", id);
  const auto write = [&](TraceEvent* event, SimTime ts_ns) {
    (*event)["id"] = id;
    (*event)["pid"] = state.replica;
    (*event)["name"] = name;
    (*event)["ts"] = Us(ts_ns);
    Write(*event);
  };
  if (Accept(now_ns)) {
    TraceEvent& args = request_begin_["args"];
    args["input_tokens"] = state.request.input_tokens;
    args["output_tokens"] = state.generated_tokens;
    args["reused_tokens"] = state.reused_tokens;
    args["preemptions"] = state.preemptions;
    write(&request_begin_, state.arrival_ns);
  }
  if (state.first_token_ns >= 0 && Accept(now_ns)) write(&request_first_token_, state.first_token_ns);
  if (Accept(now_ns)) write(&request_end_, now_ns);
}

void TimelineRecorder::OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {
  // Each replica's batch empties when its last iteration ends.
  for (size_t r = 0; r < counters_.size(); ++r) {
    ReplicaCounters& counters = counters_[r];
    const SimTime last_end_ns = counters.last_iteration_end_ns;
    if (last_end_ns >= 0 && counters.batch_size > 0 && InWindow(last_end_ns, last_end_ns)) {
      counters.batch_size = 0;
      Counter(&batch_counter_, static_cast<int32_t>(r), 0, last_end_ns, end_ns);
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
    note["args"] = TraceEvent::object(
        {{"after_events", num_events_}, {"dropped_events", dropped_events_}, {"stopped_at_us", Us(truncated_at_ns_)}});
    absl::StrAppend(&metadata, metadata.empty() && num_events_ == 0 ? "" : ",\n", note.dump());
  }
  json_ += metadata;
  json_ += "\n]}\n";
}

}  // namespace kvsim
