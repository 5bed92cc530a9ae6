#include "sim/serving/session_metrics.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/serving/metrics.h"
#include "util/sorted_spill.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {

static_assert(sizeof(int64_t) * 6 == 48, "a spilled record is six 64-bit integers");

SessionMetrics::SessionMetrics(const SessionMetricsOptions& options) : options_(options) {
  KVSIM_CHECK(options.memory_records >= 1);
}

SessionMetrics::~SessionMetrics() {
  if (file_ != nullptr) std::fclose(file_);
}

void SessionMetrics::Combine(const Record& part, Record* into) {
  into->num_requests += part.num_requests;
  into->finished = into->finished && part.finished ? 1 : 0;
  into->first_arrival_ns = std::min(into->first_arrival_ns, part.first_arrival_ns);
  into->last_finish_ns = std::max(into->last_finish_ns, part.last_finish_ns);
  into->queueing_ns += part.queueing_ns;
}

proto::SessionResult SessionMetrics::ToProto(const Record& job) {
  proto::SessionResult result;
  result.set_session_id(job.session_id);
  result.set_num_requests(static_cast<int32_t>(job.num_requests));
  result.set_finished(job.finished != 0);
  result.set_first_arrival_ns(job.first_arrival_ns);
  result.set_last_finish_ns(job.last_finish_ns);
  result.set_completion_ns(job.last_finish_ns - job.first_arrival_ns);
  result.set_queueing_ns(job.queueing_ns);
  return result;
}

void SessionMetrics::OnRequestFinished(SimTime now_ns, const RequestState& state) {
  if (state.request.session_id < 0) return;
  ++requests_;
  Record part;
  part.session_id = state.request.session_id;
  part.num_requests = 1;
  part.finished = state.rejected ? 0 : 1;
  part.first_arrival_ns = state.arrival_ns;
  part.last_finish_ns = now_ns;
  part.queueing_ns = state.rejected ? 0 : state.first_scheduled_ns - state.arrival_ns;
  auto [it, inserted] = jobs_.try_emplace(part.session_id, part);
  if (!inserted) {
    Combine(part, &it->second);
  } else if (static_cast<int64_t>(jobs_.size()) > options_.memory_records) {
    jobs_.erase(it);
    SpillRun();
    jobs_.emplace(part.session_id, part);
  }
}

void SessionMetrics::SpillRun() {
  if (jobs_.empty()) return;
  if (!failed_ && file_ == nullptr) {
    file_ = std::tmpfile();
    failed_ = file_ == nullptr;
  }
  if (!failed_) {
    std::vector<Record> run;
    run.reserve(jobs_.size());
    for (const auto& [id, job] : jobs_) run.push_back(job);
    failed_ = std::fseek(file_, file_records_ * static_cast<int64_t>(sizeof(Record)), SEEK_SET) != 0 ||
              std::fwrite(run.data(), sizeof(Record), run.size(), file_) != run.size();
    runs_.push_back({file_records_, static_cast<int64_t>(run.size())});
    file_records_ += static_cast<int64_t>(run.size());
  }
  jobs_.clear();  // after a failure too: memory stays bounded; Fill reports the failure
}

absl::Status SessionMetrics::Fill(bool closed_loop, proto::Results* results) {
  if (failed_) {
    return absl::InternalError(absl::StrCat("session records: cannot create or write their temporary spill file "
                                            "(std::tmpfile, in TMPDIR): ",
                                            std::strerror(errno)));
  }
  if (requests_ == 0) return absl::OkStatus();
  if (file_ != nullptr && std::fflush(file_) != 0) {
    return absl::InternalError("session records: cannot flush their temporary spill file");
  }

  // Sources of the merge: each spilled run, read kReadRecords at a time, then the jobs still held.
  struct Source {
    int64_t next = 0, end = 0;  // in records, in file_ (a run); unused for the held jobs
    std::vector<Record> buffer;
    size_t pos = 0;
  };
  std::vector<Source> sources(runs_.size() + 1);
  for (size_t i = 0; i < runs_.size(); ++i) {
    sources[i].next = runs_[i].offset;
    sources[i].end = runs_[i].offset + runs_[i].count;
  }
  Source& held = sources.back();
  held.buffer.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) held.buffer.push_back(job);
  bool read_failed = false;
  auto refill = [&](size_t i) {  // false when source i is exhausted (or could not be read)
    Source& s = sources[i];
    if (s.pos < s.buffer.size()) return true;
    if (i + 1 == sources.size() || s.next >= s.end) return false;
    const int64_t n = std::min(kReadRecords, s.end - s.next);
    s.buffer.resize(static_cast<size_t>(n));
    s.pos = 0;
    if (std::fseek(file_, s.next * static_cast<int64_t>(sizeof(Record)), SEEK_SET) != 0 ||
        std::fread(s.buffer.data(), sizeof(Record), s.buffer.size(), file_) != s.buffer.size()) {
      read_failed = true;
      return false;
    }
    s.next += n;
    return true;
  };
  using Head = std::pair<int64_t, size_t>;  // (session_id, source)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (refill(i)) heap.push({sources[i].buffer[sources[i].pos].session_id, i});
  }

  SortedSpill completion_ms(options_.memory_records), queueing_ms(options_.memory_records);
  int64_t jobs = 0;
  while (!heap.empty() && !read_failed) {
    Record job = sources[heap.top().second].buffer[sources[heap.top().second].pos];
    bool first = true;
    while (!heap.empty() && heap.top().first == job.session_id) {
      const size_t i = heap.top().second;
      heap.pop();
      if (!first) Combine(sources[i].buffer[sources[i].pos], &job);
      first = false;
      ++sources[i].pos;
      if (refill(i)) heap.push({sources[i].buffer[sources[i].pos].session_id, i});
    }
    ++jobs;
    const proto::SessionResult result = ToProto(job);
    if (options_.sink != nullptr) {
      options_.sink->AddSession(result);
    } else {
      *results->add_sessions() = result;
    }
    if (!result.finished()) continue;
    completion_ms.Add(result.completion_ns() / 1e6);
    queueing_ms.Add(result.queueing_ns() / 1e6);
  }
  if (read_failed) return absl::InternalError("session records: cannot read back their temporary spill file");

  proto::SessionSummary& summary = *results->mutable_summary()->mutable_sessions();
  summary.set_num_jobs(jobs);
  summary.set_finished_jobs(completion_ms.size());
  summary.set_mean_requests_per_job(static_cast<double>(requests_) / static_cast<double>(jobs));
  KVSIM_ASSIGN_OR_RETURN(*summary.mutable_job_completion_ms(), DistributeSpill(&completion_ms));
  KVSIM_ASSIGN_OR_RETURN(*summary.mutable_job_queueing_ms(), DistributeSpill(&queueing_ms));
  summary.set_closed_loop(closed_loop);
  return absl::OkStatus();
}

}  // namespace kvsim
