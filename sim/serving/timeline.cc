#include "sim/serving/timeline.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/file.h"

namespace kvsim {
namespace {

// Appends to one growing string with amortized growth (append only; no temporary strings per event).
class Out {
 public:
  explicit Out(std::string* s) : s_(s) {}
  Out& operator<<(absl::string_view text) {
    s_->append(text.data(), text.size());
    return *this;
  }
  Out& operator<<(int64_t v) {
    char buf[absl::numbers_internal::kFastToBufferSize];
    s_->append(buf, absl::numbers_internal::FastIntToBuffer(v, buf) - buf);
    return *this;
  }
  Out& operator<<(uint64_t v) {
    char buf[absl::numbers_internal::kFastToBufferSize];
    s_->append(buf, absl::numbers_internal::FastIntToBuffer(v, buf) - buf);
    return *this;
  }
  Out& operator<<(int32_t v) { return *this << static_cast<int64_t>(v); }
  // Microseconds with three decimals, from integer nanoseconds (no rounding).
  Out& Us(int64_t ns) {
    if (ns < 0) {
      *this << "-";
      ns = -ns;
    }
    *this << ns / 1000;
    const int64_t frac = ns % 1000;
    const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                            static_cast<char>('0' + frac % 10)};
    s_->append(digits, 4);
    return *this;
  }

 private:
  std::string* s_;
};

}  // namespace

constexpr size_t kFlushBytes = 1 << 20;

TimelineRecorder::TimelineRecorder(int64_t max_events, std::string path)
    : max_events_(max_events), path_(std::move(path)) {
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

bool TimelineRecorder::Begin() {
  if (num_events_ >= max_events_) {
    truncated_ = true;
    return false;
  }
  if (json_.size() >= kFlushBytes) Flush();
  if (num_events_ > 0) json_ += ",\n";
  ++num_events_;
  return true;
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

void TimelineRecorder::OnIteration(const IterationRecord& r) {
  if (!Begin()) return;
  Out out(&json_);
  out << "{\"name\":\"iteration\",\"cat\":\"iteration\",\"ph\":\"X\",\"pid\":" << r.replica << ",\"tid\":0,\"ts\":";
  out.Us(r.start_ns) << ",\"dur\":";
  out.Us(r.duration_ns) << ",\"args\":{\"batch_size\":" << r.batch_size << ",\"prefill_tokens\":" << r.prefill_tokens
                        << ",\"decode_tokens\":" << r.decode_tokens << ",\"gpu_blocks_used\":" << r.gpu_blocks_used
                        << ",\"queued\":" << r.queued_requests << "}}";
  if (r.transfer_ns > 0 && Begin()) {
    out << "{\"name\":\"transfer\",\"cat\":\"transfer\",\"ph\":\"X\",\"pid\":" << r.replica << ",\"tid\":1,\"ts\":";
    out.Us(r.start_ns) << ",\"dur\":";
    out.Us(r.transfer_ns) << "}";
  }
  if (r.evicted_blocks > 0 && Begin()) {
    out << "{\"name\":\"evict\",\"cat\":\"eviction\",\"ph\":\"i\",\"s\":\"t\",\"pid\":" << r.replica
        << ",\"tid\":2,\"ts\":";
    out.Us(r.start_ns) << ",\"args\":{\"blocks\":" << r.evicted_blocks << "}}";
  }
}

void TimelineRecorder::OnPreemption(SimTime now_ns, const RequestState& state) {
  if (!Begin()) return;
  Out out(&json_);
  out << "{\"name\":\"preempt\",\"cat\":\"preemption\",\"ph\":\"i\",\"s\":\"t\",\"pid\":" << state.replica
      << ",\"tid\":2,\"ts\":";
  out.Us(now_ns) << ",\"args\":{\"request\":" << state.request.request_id
                 << ",\"swapped\":" << (state.swapped ? "true" : "false") << "}}";
}

void TimelineRecorder::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.rejected) return;
  const uint64_t id = state.request.request_id;
  Out out(&json_);
  auto common = [&](absl::string_view phase) {
    out << "{\"cat\":\"request\",\"id\":" << id << ",\"pid\":" << state.replica << ",\"tid\":3,\"name\":\"request "
        << id << "\",\"ph\":\"" << phase << "\",\"ts\":";
  };
  if (!Begin()) return;
  common("b");
  out.Us(state.arrival_ns) << ",\"args\":{\"input_tokens\":" << state.request.input_tokens
                           << ",\"output_tokens\":" << state.generated_tokens
                           << ",\"reused_tokens\":" << state.reused_tokens << ",\"preemptions\":" << state.preemptions
                           << "}}";
  if (state.first_token_ns >= 0 && Begin()) {
    common("n");
    out.Us(state.first_token_ns) << ",\"args\":{\"event\":\"first token\"}}";
  }
  if (Begin()) {
    common("e");
    out.Us(now_ns) << "}";
  }
}

void TimelineRecorder::OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {
  const int64_t saved_max = num_events_;
  for (size_t r = 0; r < replicas.size(); ++r) {
    const char* tracks[] = {"iterations", "transfers", "evictions and preemptions", "requests"};
    if (num_events_ > 0) json_ += ",\n";
    absl::StrAppend(&json_, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", r, ",\"args\":{\"name\":\"replica ", r,
                    "\"}}");
    for (int t = 0; t < 4; ++t) {
      absl::StrAppend(&json_, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":", r, ",\"tid\":", t,
                      ",\"args\":{\"name\":\"", tracks[t], "\"}}");
    }
    ++num_events_;
  }
  if (truncated_) {
    absl::StrAppend(&json_, ",\n{\"name\":\"truncated\",\"ph\":\"M\",\"pid\":0,\"args\":{\"after_events\":", saved_max,
                    "}}");
  }
  json_ += "\n]}\n";
}

}  // namespace kvsim
