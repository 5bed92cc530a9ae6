// File: sim/serving/scheduler.h
//
// Scheduler: continuous batching for one replica (vLLM / Sarathi style). Each iteration:
//   1. decodes of running requests, oldest admission first (each grows its KV by one token; when no block
//      can be freed the newest running request is preempted, by recompute or swap as configured);
//   2. prefill chunks of running requests whose prompt is not done;
//   3. admission of waiting requests, first come first served, while sequences, the token budget and
//      GPU blocks allow (a request that does not fit stops admission: strict FCFS).
// Chunking: NONE (prefill-first: an iteration with prefill work runs whole prompts and no decodes; the
// first prompt may exceed max_num_batched_tokens), FIXED (each prefill takes at most chunk_tokens, all
// together at most max_num_batched_tokens), ADAPTIVE (the iteration's total prefill tokens, over all
// requests, are the most that keep the cost model's predicted compute time of the whole iteration, its
// decodes and every prefill piece at its real context included, at or under target_iteration_ns; prefills
// are filled in scheduling order, each priced whole first and the one that overflows binary-searched; the
// iteration's first prefill gets at least one block so prefills progress when decodes alone exceed the
// target; chunk_tokens is ignored; tier transfers are not part of the target).
//
// Preempted requests go back to the front of the waiting queue (they were admitted before the others).
//
// Decode runs (advance_decode_runs): once an iteration is decode-only and holds every running request, in
// running order, none with a KV budget, each next iteration is the same batch with every context one
// token longer, for as long as no request finishes, the requests that reach a block boundary find blocks
// to grow into, and no request waits but the one the run's first iteration could not admit. That one
// (the head of the queue: arrivals join behind it) stays unadmitted while the run lasts, as stepping
// would find: the sequence limit and the token budget left by the batch's decodes do not change, and
// its blocks do not fit on the GPU any better as the run only pins more blocks (growth) and unpins none,
// its cached prefix only shrinking by evictions; a failed admission changes nothing. Within such a run
// FormIteration only grows those requests (a heap of each one's next boundary) and lengthens the batch's
// contexts, and CompleteIteration only counts the iteration; the run's tokens (kv_tokens,
// generated_tokens, last_token_ns, token_gaps_ns) are applied to its requests together when the run
// ends: before a request finishes, before anything is admitted or preempted. Every cost-model call, block
// allocation and eviction happens at the same iteration and in the same order as stepping one iteration at
// a time, and outstanding_tokens() stays exact per iteration, so results are byte-identical to
// advance_decode_runs = false (the reference the run path is tested against, tests/decode_runs_test.cc).
// Until a run ends, those four fields of its requests lag by the iterations counted.
//
// Per-request KV configurations (RequestState::kv, sim/serving/request_kv.h): each piece is priced at the
// request's format (SequenceWork::kv_format); a decode reads ReadKvTokens of its KV and grows its blocks to
// GrowKvTokens; when the prefill of a request with a kept-prompt budget ends, its blocks are cut to the
// budget (BlockManager::CutToBudget) and the freed blocks go back to the pool.
//
// Example:
//   Scheduler scheduler(config.scheduler(), cost_model, blocks.get(), &pool, /*replica=*/0);
//   scheduler.Enqueue(slot);
//   IterationPlan plan;
//   KVSIM_ASSIGN_OR_RETURN(bool busy, scheduler.FormIteration(now_ns, &plan));
//   ... at now_ns + plan.duration_ns: scheduler.CompleteIteration(end_ns, plan, &finished);
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_SCHEDULER_H_
#define KVSIM_SIM_SERVING_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cost_models/cost_model.h"
#include "proto/config.pb.h"
#include "sim/serving/block_manager.h"
#include "sim/serving/clock.h"
#include "sim/serving/request_state.h"

namespace kvsim {

struct ScheduledPiece {
  int32_t slot = 0;
  int64_t tokens = 0;  // prefill tokens, or 1 for a decode
  bool prefill = false;
};

// One iteration of one replica, as formed by the scheduler.
struct IterationPlan {
  std::vector<ScheduledPiece> pieces;
  BatchShape shape;                // what the cost model priced
  std::vector<int32_t> preempted;  // slots preempted while forming it
  int64_t compute_ns = 0;
  int64_t transfer_ns = 0;              // tier transfers started for it (reloads, demotions, swaps)
  std::vector<TierTransfer> transfers;  // the same, per lower tier (BlockManager::TakeTransferNs)
  int64_t duration_ns = 0;              // compute + transfer, or their max when transfers overlap compute
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t evicted_blocks = 0;  // GPU evictions while forming it
  void Clear();
};

class Scheduler {
 public:
  // Does not take ownership; all must outlive the scheduler. `config` is resolved (defaults filled).
  // `record_token_gaps`: each request's RequestState::token_gaps_ns gets the gap before each of its output
  // tokens but the first; false leaves them empty (nothing stored per output token).
  // `advance_decode_runs`: decode runs as above; false forms and applies every iteration in full.
  Scheduler(const proto::SchedulerConfig& config, bool overlap_transfers, const CostModel* cost_model,
            BlockManager* blocks, RequestPool* pool, int32_t replica, bool record_token_gaps,
            bool advance_decode_runs);

  // A new request for this replica (phase kQueued).
  void Enqueue(int32_t slot);

  // Forms the next iteration at `now_ns` into `plan`. Returns false if there is nothing to run. Errors
  // come from the cost model. A decode run continues only in the plan that FormIteration returned last.
  absl::StatusOr<bool> FormIteration(SimTime now_ns, IterationPlan* plan);

  // Applies the iteration that ends at `now_ns`: advances prefills, emits tokens, finishes requests
  // (appended to `finished`; their blocks are released, their slots not freed).
  void CompleteIteration(SimTime now_ns, const IterationPlan& plan, std::vector<int32_t>* finished);

  // True if CompleteIteration of the plan FormIteration returned last will only count it: a decode run's
  // iteration that finishes no request (class comment).
  bool CompletionOnlyCounts() const { return run_plan_ != nullptr && run_iterations_ + 1 < run_finish_at_; }

  // Prompt tokens not yet computed plus output tokens not yet generated, over queued and running requests.
  int64_t outstanding_tokens() const { return outstanding_tokens_; }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  BlockManager* blocks() const { return blocks_; }
  // Iterations formed by continuing a decode run (0 with advance_decode_runs off).
  int64_t run_advanced_iterations() const { return run_advanced_iterations_; }

 private:
  void ScheduleDecodes(SimTime now_ns, IterationPlan* plan, int64_t* budget);
  absl::Status SchedulePrefills(SimTime now_ns, IterationPlan* plan, int64_t* budget);
  // ADAPTIVE: the most tokens in [0, cap] of `state`'s prefill that keep plan + those tokens at or under
  // the target (see the class comment); sets adaptive_full_ when fewer than `cap` fit.
  absl::StatusOr<int64_t> AdaptiveTokens(const RequestState& state, int64_t cap, const IterationPlan& plan,
                                         bool first_prefill);
  // Appends the pieces of `state`'s next `tokens` prefill tokens (from its run cursor) to `shape`.
  static void AppendPrefillWork(const RequestState& state, int64_t tokens, BatchShape* shape);
  // Appends `state`'s next decode: context = the KV it reads (ReadKvTokens), at its own KV format.
  static void AppendDecodeWork(const RequestState& state, BatchShape* shape);
  void AddPrefillPieces(int32_t slot, int64_t tokens, IterationPlan* plan);
  absl::StatusOr<int64_t> PrefillTokens(const RequestState& state, int64_t budget, bool first_prefill,
                                        const IterationPlan& plan);
  // Preempts the newest running request; returns its slot.
  int32_t PreemptNewest(SimTime now_ns, IterationPlan* plan);
  void RemoveRunning(int32_t slot);
  // Decode runs (class comment). StartRun makes `plan`, just formed in full, a run's first iteration if it
  // qualifies. AdvanceRun makes `plan` the run's next iteration (grows, longer contexts) and returns
  // true, or returns false, changing nothing, when the requests due a block cannot all grow. EndRun
  // applies the counted iterations' tokens to the running requests (not scheduled_tokens) and leaves the
  // run.
  void StartRun(const IterationPlan& plan);
  // The run_iterations_ count at which running `state` next needs a block.
  int64_t NextRunGrow(const RequestState& state) const;
  bool AdvanceRun(SimTime now_ns, IterationPlan* plan);
  void EndRun();

  const proto::SchedulerConfig config_;
  const bool overlap_transfers_;
  const CostModel* const cost_model_;
  BlockManager* const blocks_;
  RequestPool* const pool_;
  const int32_t replica_;
  const bool record_token_gaps_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;  // in admission order
  int64_t next_admit_order_ = 0;
  int64_t outstanding_tokens_ = 0;
  bool adaptive_full_ = false;  // ADAPTIVE: this iteration's predicted time reached the target
  BatchShape probe_;            // ADAPTIVE: the plan's shape plus one candidate prefill, priced in the search
  // Decode run; its batch is running_ (nothing is admitted, preempted or finished during a run).
  const bool advance_decode_runs_;
  const IterationPlan* run_plan_ = nullptr;  // the run's plan; null = no run
  int64_t run_iterations_ = 0;               // iterations completed in the run, not yet applied
  int64_t run_finish_at_ = 0;                // the count whose iteration finishes a request (fewest left)
  int32_t run_blocked_head_ = -1;            // the waiting request the run's first iteration left (-1: none)
  SimTime run_last_end_ns_ = 0;              // end of the last counted iteration
  std::vector<SimTime> run_ends_ns_;         // every counted iteration's end (record_token_gaps_ only)
  // Min-heap of (run_iterations_ at which running_[i] next needs a block, i).
  std::vector<std::pair<int64_t, int32_t>> run_grows_;
  std::vector<std::pair<int64_t, int32_t>> run_due_;  // scratch: the entries due at this iteration
  int64_t run_advanced_iterations_ = 0;
  // Prices the run's iterations after its first (CostModel::StartDecodeRun); reset when the run ends.
  std::unique_ptr<DecodeRunPricer> run_pricer_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_SCHEDULER_H_
