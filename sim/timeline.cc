#include "sim/timeline.h"

#include "absl/strings/str_cat.h"

namespace kvsim {
namespace {

// Microseconds with three decimals, from integer nanoseconds.
std::string Us(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  if (ns < 0) ns = -ns;
  return absl::StrCat(sign, ns / 1000, ".", absl::Dec(ns % 1000, absl::kZeroPad3));
}

}  // namespace

TimelineRecorder::TimelineRecorder(int64_t max_events) : max_events_(max_events) {
  json_ = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
}

bool TimelineRecorder::Begin() {
  if (num_events_ >= max_events_) {
    truncated_ = true;
    return false;
  }
  if (num_events_ > 0) json_ += ",\n";
  ++num_events_;
  return true;
}

void TimelineRecorder::OnIteration(const IterationRecord& r) {
  if (!Begin()) return;
  absl::StrAppend(&json_, "{\"name\":\"iteration\",\"cat\":\"iteration\",\"ph\":\"X\",\"pid\":", r.replica,
                  ",\"tid\":0,\"ts\":", Us(r.start_ns), ",\"dur\":", Us(r.duration_ns),
                  ",\"args\":{\"batch_size\":", r.batch_size, ",\"prefill_tokens\":", r.prefill_tokens,
                  ",\"decode_tokens\":", r.decode_tokens, ",\"gpu_blocks_used\":", r.gpu_blocks_used,
                  ",\"queued\":", r.queued_requests, "}}");
  if (r.transfer_ns > 0 && Begin()) {
    absl::StrAppend(&json_, "{\"name\":\"transfer\",\"cat\":\"transfer\",\"ph\":\"X\",\"pid\":", r.replica,
                    ",\"tid\":1,\"ts\":", Us(r.start_ns), ",\"dur\":", Us(r.transfer_ns), "}");
  }
  if (r.evicted_blocks > 0 && Begin()) {
    absl::StrAppend(&json_, "{\"name\":\"evict\",\"cat\":\"eviction\",\"ph\":\"i\",\"s\":\"t\",\"pid\":",
                    r.replica, ",\"tid\":2,\"ts\":", Us(r.start_ns), ",\"args\":{\"blocks\":",
                    r.evicted_blocks, "}}");
  }
}

void TimelineRecorder::OnPreemption(SimTime now_ns, const RequestState& state) {
  if (!Begin()) return;
  absl::StrAppend(&json_, "{\"name\":\"preempt\",\"cat\":\"preemption\",\"ph\":\"i\",\"s\":\"t\",\"pid\":",
                  state.replica, ",\"tid\":2,\"ts\":", Us(now_ns), ",\"args\":{\"request\":",
                  state.request.request_id, ",\"swapped\":", state.swapped ? "true" : "false", "}}");
}

void TimelineRecorder::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.rejected) return;
  const uint64_t id = state.request.request_id;
  const std::string common = absl::StrCat("\"cat\":\"request\",\"id\":", id, ",\"pid\":", state.replica,
                                          ",\"tid\":3,\"name\":\"request ", id, "\"");
  if (!Begin()) return;
  absl::StrAppend(&json_, "{", common, ",\"ph\":\"b\",\"ts\":", Us(state.arrival_ns),
                  ",\"args\":{\"input_tokens\":", state.request.input_tokens,
                  ",\"output_tokens\":", state.generated_tokens, ",\"reused_tokens\":", state.reused_tokens,
                  ",\"preemptions\":", state.preemptions, "}}");
  if (state.first_token_ns >= 0 && Begin()) {
    absl::StrAppend(&json_, "{", common, ",\"ph\":\"n\",\"ts\":", Us(state.first_token_ns),
                    ",\"args\":{\"event\":\"first token\"}}");
  }
  if (Begin()) absl::StrAppend(&json_, "{", common, ",\"ph\":\"e\",\"ts\":", Us(now_ns), "}");
}

void TimelineRecorder::OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {
  const int64_t saved_max = num_events_;
  for (size_t r = 0; r < replicas.size(); ++r) {
    const char* tracks[] = {"iterations", "transfers", "evictions and preemptions", "requests"};
    if (num_events_ > 0) json_ += ",\n";
    absl::StrAppend(&json_, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", r,
                    ",\"args\":{\"name\":\"replica ", r, "\"}}");
    for (int t = 0; t < 4; ++t) {
      absl::StrAppend(&json_, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":", r, ",\"tid\":", t,
                      ",\"args\":{\"name\":\"", tracks[t], "\"}}");
    }
    ++num_events_;
  }
  if (truncated_) {
    absl::StrAppend(&json_, ",\n{\"name\":\"truncated\",\"ph\":\"M\",\"pid\":0,\"args\":{\"after_events\":",
                    saved_max, "}}");
  }
  json_ += "\n]}\n";
}

}  // namespace kvsim
