#include "sim/serving/scheduler.h"

#include <algorithm>
#include <functional>

#include "util/check.h"
#include "util/status_macros.h"

// Data and invariants (true between calls):
// - running_ is in admission order (admit_order rises along it): admissions append, preemption takes the
//   back, so running_.back() is always the newest running request. waiting_ is FCFS, with preempted
//   requests pushed to the front.
// - A request's scheduled_tokens is > 0 exactly while it is in the plan FormIteration returned and
//   CompleteIteration has not yet applied, or in a decode run (run_plan_ set) whose counted iterations
//   EndRun has not yet applied; within FormIteration it marks what is already scheduled.
// - In a decode run, running_ is the run's batch in plan order (StartRun checks it; nothing enters or
//   leaves running_ until EndRun), run_iterations_ < run_finish_at_, and every entry of run_grows_ is
//   NextRunGrow of its request.
// - outstanding_tokens_ gains input + output tokens at Enqueue and loses the input tokens at the first
//   token and one per generated token; preemption leaves it alone.
// Order in FormIteration: decodes (oldest first), then running prefills, then admissions; with chunking
// NONE prefills first and decodes only if no prefill was scheduled. A decode that finds no block preempts
// from the back, which is never an earlier (already scheduled) entry; the KVSIM_CHECK in PreemptNewest
// holds that. The plan is priced only once complete, and TakeTransferNs runs after forming, so every
// reload, demotion and swap started while forming is charged to this iteration.
// Why it is fast:
// - The plan is reused across iterations (Clear keeps the vectors' capacity): no allocation per
//   iteration once warm. One IterationTimeNs call prices the whole iteration.
// - ADAPTIVE prices each prefill candidate once at its whole remaining prompt (capped by the budget); only
//   the one that does not fit is binary-searched, after which the iteration is full: O(prefills + log
//   budget) cost model calls per iteration. Candidates are priced on probe_, a scratch copy of the plan's
//   shape whose capacity is kept across iterations, so the plan itself is never disturbed.
// - AddPrefillPieces starts at the request's run cursor (run_index, run_offset): O(runs in the chunk).
// - Decode runs: an iteration of a run costs the grows due (a heap pop each), one increment per piece
//   and the run pricer's call (CostModel::StartDecodeRun: O(1) for the fitted model, which prices only
//   the decode attention anew); CompleteIteration counts it in O(1). The requests' states are
//   touched once per run (EndRun), not once per iteration.
// - Decode growth is BlockManager::Grow's inline test except when a new block is needed. Removing a
//   finished request is a linear find and erase in running_, the batch's size.

namespace kvsim {
namespace {

// One output token of `state` emitted at `end_ns`: its gap to the previous token (kept when
// `record_gap`) and the time of its last token.
void NoteToken(SimTime end_ns, bool record_gap, RequestState* state) {
  if (record_gap && state->last_token_ns >= 0) state->token_gaps_ns.push_back(end_ns - state->last_token_ns);
  state->last_token_ns = end_ns;
}

}  // namespace

void IterationPlan::Clear() {
  pieces.clear();
  shape.sequences.clear();
  preempted.clear();
  transfers.clear();
  compute_ns = transfer_ns = duration_ns = 0;
  prefill_tokens = decode_tokens = evicted_blocks = 0;
}

Scheduler::Scheduler(const proto::SchedulerConfig& config, bool overlap_transfers, const CostModel* cost_model,
                     BlockManager* blocks, RequestPool* pool, int32_t replica, bool record_token_gaps,
                     bool advance_decode_runs)
    : config_(config),
      overlap_transfers_(overlap_transfers),
      cost_model_(cost_model),
      blocks_(blocks),
      pool_(pool),
      replica_(replica),
      record_token_gaps_(record_token_gaps),
      advance_decode_runs_(advance_decode_runs) {
  KVSIM_CHECK(config_.max_num_batched_tokens() > 0 && config_.max_num_seqs() > 0);
}

void Scheduler::Enqueue(int32_t slot) {
  RequestState& state = pool_->at(slot);
  state.replica = replica_;
  state.prefill_target_tokens = state.request.input_tokens;
  outstanding_tokens_ += state.request.input_tokens + state.request.output_tokens;
  waiting_.push_back(slot);
}

absl::StatusOr<bool> Scheduler::FormIteration(SimTime now_ns, IterationPlan* plan) {
  const int64_t evicted_before = blocks_->tier_stats()[0].evicted_blocks;
  const bool waiting_blocked = waiting_.empty() || waiting_.front() == run_blocked_head_;
  if (run_plan_ == nullptr || run_plan_ != plan || !waiting_blocked || !AdvanceRun(now_ns, plan)) {
    if (run_plan_ != nullptr) {  // the run ends before this iteration: its requests are formed again below
      EndRun();
      for (int32_t slot : running_) pool_->at(slot).scheduled_tokens = 0;
    }
    plan->Clear();
    int64_t budget = config_.max_num_batched_tokens();
    if (config_.chunking() == proto::CHUNKING_MODE_NONE) {
      KVSIM_RETURN_IF_ERROR(SchedulePrefills(now_ns, plan, &budget));
      if (plan->prefill_tokens == 0) ScheduleDecodes(now_ns, plan, &budget);
    } else {
      ScheduleDecodes(now_ns, plan, &budget);
      KVSIM_RETURN_IF_ERROR(SchedulePrefills(now_ns, plan, &budget));
    }
    // A request swapped back in while decoding may have found no block for its next token; decoding
    // again preempts for it, so a replica with running requests always makes progress.
    if (plan->pieces.empty() && !running_.empty()) ScheduleDecodes(now_ns, plan, &budget);
    if (plan->pieces.empty()) return false;
    StartRun(*plan);
    KVSIM_ASSIGN_OR_RETURN(plan->compute_ns, cost_model_->IterationTimeNs(plan->shape));
  } else {
    KVSIM_ASSIGN_OR_RETURN(plan->compute_ns, run_pricer_->IterationTimeNs(run_iterations_, plan->shape));
  }
  plan->transfer_ns = blocks_->TakeTransferNs(&plan->transfers);
  plan->duration_ns =
      overlap_transfers_ ? std::max(plan->compute_ns, plan->transfer_ns) : plan->compute_ns + plan->transfer_ns;
  plan->evicted_blocks = blocks_->tier_stats()[0].evicted_blocks - evicted_before;
  return true;
}

void Scheduler::ScheduleDecodes(SimTime now_ns, IterationPlan* plan, int64_t* budget) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (static_cast<int64_t>(plan->pieces.size()) >= config_.max_num_seqs() || *budget <= 0) break;
    const int32_t slot = running_[i];
    RequestState& state = pool_->at(slot);
    if (state.phase() != RequestPhase::kDecode || state.scheduled_tokens > 0) continue;
    bool preempted_self = false;
    while (!blocks_->Grow(&state, GrowKvTokens(state.kv, state.request.input_tokens, state.kv_tokens + 1), now_ns)) {
      // The newest running request is at the back, never before `i`: nothing scheduled is preempted.
      if (PreemptNewest(now_ns, plan) == slot) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    state.scheduled_tokens = 1;
    plan->pieces.push_back(ScheduledPiece{slot, 1, false});
    AppendDecodeWork(state, &plan->shape);
    ++plan->decode_tokens;
    --*budget;
  }
}

void Scheduler::AppendDecodeWork(const RequestState& state, BatchShape* shape) {
  SequenceWork& work = shape->sequences.emplace_back();
  work.context_tokens = ReadKvTokens(state.kv, state.request.input_tokens, state.kv_tokens);
  work.new_tokens = 1;
  work.num_segments = state.kv_segments;
  work.kv_format = state.kv.format;
}

absl::StatusOr<int64_t> Scheduler::PrefillTokens(const RequestState& state, int64_t budget, bool first_prefill,
                                                 const IterationPlan& plan) {
  const int64_t remaining = state.remaining_compute_tokens();
  switch (config_.chunking()) {
    case proto::CHUNKING_MODE_NONE:
      return (first_prefill || remaining <= budget) ? remaining : 0;
    case proto::CHUNKING_MODE_ADAPTIVE:
      return AdaptiveTokens(state, std::min(remaining, budget), plan, first_prefill);
    default:
      return std::min({remaining, static_cast<int64_t>(config_.chunk_tokens()), budget});
  }
}

absl::Status Scheduler::SchedulePrefills(SimTime now_ns, IterationPlan* plan, int64_t* budget) {
  const bool prefill_first = config_.chunking() == proto::CHUNKING_MODE_NONE;
  adaptive_full_ = false;
  const int64_t max_seqs = config_.max_num_seqs();
  bool first = plan->prefill_tokens == 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (static_cast<int64_t>(plan->pieces.size()) >= max_seqs) break;
    const int32_t slot = running_[i];
    const RequestState& state = pool_->at(slot);
    if (state.phase() != RequestPhase::kPrefill || state.scheduled_tokens > 0) continue;
    KVSIM_ASSIGN_OR_RETURN(const int64_t tokens, PrefillTokens(state, *budget, first, *plan));
    if (tokens <= 0) break;
    AddPrefillPieces(slot, tokens, plan);
    *budget -= tokens;
    first = false;
  }
  while (!waiting_.empty() && static_cast<int64_t>(plan->pieces.size()) < max_seqs &&
         (*budget > 0 || (prefill_first && first))) {
    const int32_t slot = waiting_.front();
    RequestState& state = pool_->at(slot);
    if (prefill_first && !first && state.prefill_target_tokens > *budget) break;
    if (adaptive_full_) break;  // ADAPTIVE: the predicted time already reached the target
    const bool resume = state.swapped && state.swapped_while_decoding;
    if (!blocks_->Admit(&state, now_ns)) break;
    waiting_.pop_front();
    state.admit_order = next_admit_order_++;
    running_.push_back(slot);
    if (resume) {
      state.Resume(now_ns);
      state.swapped_while_decoding = false;
      if (*budget > 0 &&
          blocks_->Grow(&state, GrowKvTokens(state.kv, state.request.input_tokens, state.kv_tokens + 1), now_ns)) {
        state.scheduled_tokens = 1;
        plan->pieces.push_back(ScheduledPiece{slot, 1, false});
        AppendDecodeWork(state, &plan->shape);
        ++plan->decode_tokens;
        --*budget;
      }
      continue;
    }
    state.Admit(now_ns);
    KVSIM_ASSIGN_OR_RETURN(const int64_t tokens, PrefillTokens(state, *budget, first, *plan));
    if (tokens <= 0) continue;
    AddPrefillPieces(slot, tokens, plan);
    *budget -= tokens;
    first = false;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Scheduler::AdaptiveTokens(const RequestState& state, int64_t cap, const IterationPlan& plan,
                                                  bool first_prefill) {
  if (cap <= 0 || adaptive_full_) return 0;
  const int64_t target_ns = config_.target_iteration_ns();
  probe_.sequences.assign(plan.shape.sequences.begin(), plan.shape.sequences.end());
  const size_t base = probe_.sequences.size();
  auto fits = [&](int64_t tokens) -> absl::StatusOr<bool> {
    probe_.sequences.resize(base);
    AppendPrefillWork(state, tokens, &probe_);
    KVSIM_ASSIGN_OR_RETURN(CostBreakdown estimate, cost_model_->EstimateBreakdown(probe_));  // a probe, not run
    return estimate.total_ns <= target_ns;
  };
  KVSIM_ASSIGN_OR_RETURN(bool fit_cap, fits(cap));
  if (fit_cap) return cap;
  // The iteration is full after this request: no later prefill gets tokens.
  adaptive_full_ = true;
  // Largest count in [lo, cap) whose estimate fits; the iteration's first prefill gets at least a block
  // so prefills progress even when the decodes alone exceed the target.
  int64_t lo = first_prefill ? std::min<int64_t>(cap, blocks_->block_tokens()) : 0;
  int64_t hi = cap - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    KVSIM_ASSIGN_OR_RETURN(bool fit, fits(mid));
    if (fit) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

void Scheduler::AppendPrefillWork(const RequestState& state, int64_t tokens, BatchShape* shape) {
  // Only the chunk that completes the prefill samples a token (pays the LM head).
  const bool completes = tokens == state.remaining_compute_tokens();
  const std::vector<TokenRun>& runs = state.compute_runs();
  size_t index = state.run_index();
  int64_t offset = state.run_offset();
  while (tokens > 0) {
    const TokenRun& run = runs[index];
    const int64_t take = std::min(tokens, run.length - offset);
    SequenceWork& work = shape->sequences.emplace_back();
    work.context_tokens = run.start + offset;
    work.new_tokens = take;
    work.num_segments = run.num_segments;
    work.recompute = run.recompute;
    work.kv_format = state.kv.format;
    tokens -= take;
    work.samples_token = completes && tokens == 0;
    ++index;
    offset = 0;
  }
}

void Scheduler::AddPrefillPieces(int32_t slot, int64_t tokens, IterationPlan* plan) {
  RequestState& state = pool_->at(slot);
  state.scheduled_tokens = tokens;
  plan->pieces.push_back(ScheduledPiece{slot, tokens, true});
  plan->prefill_tokens += tokens;
  AppendPrefillWork(state, tokens, &plan->shape);
}

int32_t Scheduler::PreemptNewest(SimTime now_ns, IterationPlan* plan) {
  KVSIM_CHECK(!running_.empty());
  const int32_t slot = running_.back();
  running_.pop_back();
  RequestState& state = pool_->at(slot);
  KVSIM_CHECK(state.scheduled_tokens == 0) << "preempting a request already in the iteration";
  const bool swapped = config_.preemption() == proto::PREEMPTION_MODE_SWAP && blocks_->SwapOut(&state, now_ns);
  if (!swapped) {
    blocks_->Release(&state, now_ns);
    state.kv_tokens = 0;
    state.prefill_target_tokens = state.request.input_tokens + state.generated_tokens;
  }
  state.Preempt();
  state.ClearComputeRuns();
  waiting_.push_front(slot);
  plan->preempted.push_back(slot);
  return slot;
}

void Scheduler::RemoveRunning(int32_t slot) {
  auto it = std::find(running_.begin(), running_.end(), slot);
  KVSIM_CHECK(it != running_.end());
  running_.erase(it);
}

void Scheduler::StartRun(const IterationPlan& plan) {
  if (!advance_decode_runs_ || plan.prefill_tokens > 0 || plan.pieces.size() != running_.size()) return;
  int64_t fewest_left = 0;
  run_grows_.clear();
  for (size_t i = 0; i < running_.size(); ++i) {
    const RequestState& state = pool_->at(running_[i]);
    if (plan.pieces[i].slot != running_[i] || state.kv.has_budget()) return;
    const int64_t left = state.request.output_tokens - state.generated_tokens;
    fewest_left = i == 0 ? left : std::min(fewest_left, left);
    run_grows_.emplace_back(NextRunGrow(state), static_cast<int32_t>(i));
  }
  if (fewest_left < 2) return;  // a request finishes at the end of this iteration: no run
  std::make_heap(run_grows_.begin(), run_grows_.end(), std::greater<>());
  run_plan_ = &plan;
  run_iterations_ = 0;
  run_pricer_ = cost_model_->StartDecodeRun(plan.shape);
  run_finish_at_ = fewest_left;
  // A request left waiting by this iteration, formed in full, stays unadmitted while the run lasts (class
  // comment); one that arrives later, or a request this iteration preempted, ends the run.
  run_blocked_head_ = waiting_.empty() || !plan.preempted.empty() ? -1 : waiting_.front();
  run_ends_ns_.clear();
}

int64_t Scheduler::NextRunGrow(const RequestState& state) const {
  // At n counted iterations the next decode grows to kv_tokens + n + 1 tokens (no budget: GrowKvTokens
  // is the identity); the blocks cover input + tail_blocks x tail tokens, so n = that - kv_tokens.
  const int64_t tail_tokens = static_cast<int64_t>(blocks_->block_tokens()) * state.kv.block_factor;
  return state.request.input_tokens + state.tail_blocks * tail_tokens - state.kv_tokens;
}

bool Scheduler::AdvanceRun(SimTime now_ns, IterationPlan* plan) {
  run_due_.clear();
  while (!run_grows_.empty() && run_grows_.front().first <= run_iterations_) {
    std::pop_heap(run_grows_.begin(), run_grows_.end(), std::greater<>());
    run_due_.push_back(run_grows_.back());
    run_grows_.pop_back();
  }
  // Grow's test, for all of them at once: each block grown uses one unpinned block (free or evicted).
  if (static_cast<int64_t>(run_due_.size()) > blocks_->gpu_capacity_blocks() - blocks_->gpu_pinned_blocks()) {
    for (const auto& due : run_due_) {
      run_grows_.push_back(due);
      std::push_heap(run_grows_.begin(), run_grows_.end(), std::greater<>());
    }
    return false;
  }
  for (const auto& due : run_due_) {  // in batch order, as ScheduleDecodes grows them
    const int32_t i = due.second;
    RequestState& state = pool_->at(running_[i]);
    const bool grown = blocks_->Grow(&state, state.kv_tokens + run_iterations_ + 1, now_ns);
    KVSIM_CHECK(grown) << "a decode run's block boundary found no block";
    run_grows_.emplace_back(NextRunGrow(state), i);
    std::push_heap(run_grows_.begin(), run_grows_.end(), std::greater<>());
  }
  for (SequenceWork& work : plan->shape.sequences) ++work.context_tokens;
  plan->preempted.clear();
  ++run_advanced_iterations_;
  return true;
}

void Scheduler::EndRun() {
  for (int32_t slot : running_) {
    RequestState& state = pool_->at(slot);
    // What CompleteIteration does to a decode that does not finish, once per counted iteration.
    state.kv_tokens += run_iterations_;
    state.generated_tokens += run_iterations_;
    if (record_token_gaps_) {
      for (SimTime end_ns : run_ends_ns_) NoteToken(end_ns, true, &state);
    } else if (run_iterations_ > 0) {
      NoteToken(run_last_end_ns_, false, &state);  // without gaps only the last token's time is kept
    }
  }
  run_plan_ = nullptr;
  run_iterations_ = 0;
  run_pricer_.reset();  // its iterations' counts go to the cost model's Accuracy()
}

void Scheduler::CompleteIteration(SimTime now_ns, const IterationPlan& plan, std::vector<int32_t>* finished) {
  if (run_plan_ != nullptr) {
    if (run_iterations_ + 1 < run_finish_at_) {  // no request finishes: count the iteration
      ++run_iterations_;
      run_last_end_ns_ = now_ns;
      if (record_token_gaps_) run_ends_ns_.push_back(now_ns);
      outstanding_tokens_ -= static_cast<int64_t>(running_.size());
      return;
    }
    EndRun();  // then this iteration as any other
  }
  for (const ScheduledPiece& piece : plan.pieces) {
    RequestState& state = pool_->at(piece.slot);
    KVSIM_CHECK(state.scheduled_tokens == piece.tokens);
    state.scheduled_tokens = 0;
    if (piece.prefill) {
      state.AdvanceCompute(piece.tokens);
      blocks_->Publish(&state, now_ns);
      if (state.remaining_compute_tokens() > 0) continue;
      state.kv_tokens = state.prefill_target_tokens;
      if (state.kv.prompt_keep_tokens >= 0) blocks_->CutToBudget(&state);
      if (state.first_token_ns < 0) {
        state.first_token_ns = now_ns;
        outstanding_tokens_ -= state.request.input_tokens;
      }
    } else {
      ++state.kv_tokens;
    }
    if (state.generated_tokens < state.request.output_tokens) {
      ++state.generated_tokens;
      NoteToken(now_ns, record_token_gaps_, &state);
      --outstanding_tokens_;
    }
    if (state.generated_tokens >= state.request.output_tokens) {
      blocks_->Release(&state, now_ns);
      blocks_->EndRequest(state, now_ns);
      RemoveRunning(piece.slot);
      state.Finish(now_ns);
      finished->push_back(piece.slot);
    } else if (piece.prefill) {
      state.FinishPrefill();
    }
  }
}

}  // namespace kvsim
