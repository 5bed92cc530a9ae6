#include "sim/serving/request_state.h"

#include <algorithm>

#include "util/check.h"

namespace kvsim {

const char* RequestPhaseName(RequestPhase phase) {
  switch (phase) {
    case RequestPhase::kQueued:
      return "queued";
    case RequestPhase::kPrefill:
      return "prefill";
    case RequestPhase::kDecode:
      return "decode";
    case RequestPhase::kPreempted:
      return "preempted";
    case RequestPhase::kFinished:
      return "finished";
  }
  return "?";
}

void RequestState::Reset() {
  std::vector<int32_t> entries = std::move(block_entries);
  std::vector<TokenRun> runs = std::move(compute_runs_);
  std::vector<int64_t> gaps = std::move(token_gaps_ns);
  *this = RequestState();
  entries.clear();
  runs.clear();
  gaps.clear();
  token_gaps_ns = std::move(gaps);
  block_entries = std::move(entries);
  compute_runs_ = std::move(runs);
}

void RequestState::Admit(SimTime now_ns) {
  KVSIM_CHECK(phase_ == RequestPhase::kQueued || phase_ == RequestPhase::kPreempted)
      << "request " << request.request_id << ": admit from " << RequestPhaseName(phase_);
  phase_ = RequestPhase::kPrefill;
  if (first_scheduled_ns < 0) first_scheduled_ns = now_ns;
}

void RequestState::Resume(SimTime now_ns) {
  KVSIM_CHECK(phase_ == RequestPhase::kPreempted)
      << "request " << request.request_id << ": resume from " << RequestPhaseName(phase_);
  phase_ = RequestPhase::kDecode;
}

void RequestState::FinishPrefill() {
  KVSIM_CHECK(phase_ == RequestPhase::kPrefill)
      << "request " << request.request_id << ": decode from " << RequestPhaseName(phase_);
  KVSIM_CHECK(remaining_compute_tokens_ == 0) << "request " << request.request_id;
  phase_ = RequestPhase::kDecode;
}

void RequestState::Preempt() {
  KVSIM_CHECK(phase_ == RequestPhase::kPrefill || phase_ == RequestPhase::kDecode)
      << "request " << request.request_id << ": preempt from " << RequestPhaseName(phase_);
  phase_ = RequestPhase::kPreempted;
  ++preemptions;
}

void RequestState::Finish(SimTime now_ns) {
  KVSIM_CHECK(phase_ == RequestPhase::kPrefill || phase_ == RequestPhase::kDecode)
      << "request " << request.request_id << ": finish from " << RequestPhaseName(phase_);
  phase_ = RequestPhase::kFinished;
  finish_ns = now_ns;
}

void RequestState::ClearComputeRuns() {
  compute_runs_.clear();
  run_index_ = 0;
  run_offset_ = 0;
  remaining_compute_tokens_ = 0;
}

void RequestState::AddComputeRun(int64_t start, int64_t length, int32_t num_segments, bool recompute) {
  KVSIM_CHECK(length > 0);
  if (!compute_runs_.empty()) {
    TokenRun& last = compute_runs_.back();
    KVSIM_CHECK(start >= last.start + last.length) << "runs out of order";
    if (last.start + last.length == start && last.num_segments == num_segments && last.recompute == recompute) {
      last.length += length;
      remaining_compute_tokens_ += length;
      return;
    }
  }
  compute_runs_.push_back(TokenRun{start, length, num_segments, recompute});
  remaining_compute_tokens_ += length;
}

void RequestState::AdvanceCompute(int64_t tokens) {
  KVSIM_CHECK(tokens >= 0 && tokens <= remaining_compute_tokens_)
      << "request " << request.request_id << ": advance " << tokens << " of " << remaining_compute_tokens_;
  remaining_compute_tokens_ -= tokens;
  while (tokens > 0) {
    const TokenRun& run = compute_runs_[run_index_];
    const int64_t take = std::min(tokens, run.length - run_offset_);
    run_offset_ += take;
    tokens -= take;
    if (run_offset_ == run.length) {
      ++run_index_;
      run_offset_ = 0;
    }
  }
}

int64_t RequestState::frontier_tokens() const {
  if (run_index_ < compute_runs_.size()) return compute_runs_[run_index_].start + run_offset_;
  return prefill_target_tokens;
}

int32_t RequestPool::Allocate() {
  int32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<int32_t>(states_.size());
    states_.push_back(std::make_unique<RequestState>());
  }
  states_[slot]->Reset();
  return slot;
}

void RequestPool::Free(int32_t slot) {
  KVSIM_CHECK(slot >= 0 && slot < static_cast<int32_t>(states_.size()));
  free_.push_back(slot);
}

}  // namespace kvsim
