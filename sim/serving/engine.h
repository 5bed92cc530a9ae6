// File: sim/serving/engine.h
//
// Engine: the discrete-event loop of the serving simulator. It streams requests from a TraceReader (one
// arrival event ahead, so memory does not grow with the trace), routes each arrival to a replica, and runs
// each replica's iterations: a replica forms an iteration with its Scheduler, prices it with the
// CostModel, and applies it when the iteration-end event fires. Observers (metrics, timeline) watch
// through EngineObserver hooks.
//
// Event order at equal times: iteration ends, then arrivals, then scheduling (sim/serving/event_queue.h), so an
// iteration formed at time t sees every request that arrived at t.
//
// A decode run's iteration that finishes no request (Scheduler::CompletionOnlyCounts) and ends strictly
// before every queued event is completed where it starts, and the replica's next iteration formed at
// its end, without an iteration-end event: the same steps in the same order as the event would take
// (nothing else is due by then), so the results are those of the event loop.
//
// Input checks (InvalidArgument naming the trace and request): prompt of at least one token, output
// tokens >= 0, arrivals in non-decreasing order, block hashes matching the prompt's block count and the
// trace's block size. A request whose prompt and output can never fit on one GPU is rejected (reported,
// not run). At the end every replica's BlockManager must be idle (no leaked block).
//
// Closed loop (config.workload.closed_loop_sessions): the whole trace is read and checked first (the
// requests written to a temporary file, sim/serving/request_spill.h, and read back as they are issued;
// what stays in memory is about 28 bytes per request: its offset there and its chain, and about 40 more
// while the chains are built, sim/serving/session_chains.h); roots
// (sim/serving/session_chains.h) arrive at their trace times, streamed one ahead as in open loop, and
// each other request arrives when its predecessor finishes (or is rejected) plus its think time, both
// scaled by workload.time_scale. RequestState::arrival_ns is then the issue time.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto engine, Engine::Create(config, cost_model.get(), reader->info().block_tokens));
//   engine->AddObserver(&metrics);
//   KVSIM_RETURN_IF_ERROR(engine->Run(reader.get()));
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_ENGINE_H_
#define KVSIM_SIM_SERVING_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cost_models/cost_model.h"
#include "proto/config.pb.h"
#include "sim/serving/block_manager.h"
#include "sim/serving/event_queue.h"
#include "sim/serving/gpu_block_directory.h"
#include "sim/serving/observer.h"
#include "sim/serving/request_kv.h"
#include "sim/serving/request_spill.h"
#include "sim/serving/request_state.h"
#include "sim/serving/router.h"
#include "sim/serving/scheduler.h"
#include "sim/serving/session_chains.h"
#include "traces/trace_reader.h"

namespace kvsim {

struct EngineOptions {
  // Keep each request's inter-token gaps (RequestState::token_gaps_ns) for the observers; off, nothing is
  // stored per output token.
  bool record_token_gaps = false;
  // Advance runs of decode-only iterations together (Scheduler, "Decode runs"); false steps every
  // iteration in full: the same results, byte for byte, more slowly (the reference for tests).
  bool advance_decode_runs = true;
};

class Engine {
 public:
  // `config` is resolved (config/experiment_config.h); `cost_model` must outlive the engine. `block_tokens` is the
  // trace's hash block size, or 0 for traces without hashes (then config.cache.block_tokens is used).
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const proto::ExperimentConfig& config,
                                                        const CostModel* cost_model, int32_t block_tokens,
                                                        const EngineOptions& options = {});

  // Per-request KV configurations (sim/serving/request_kv.h): each request read from the trace gets
  // `assigner`'s configuration (an error for a request it has none for ends the run). A budgeted request
  // shares no block; the others' blocks are regrouped and salted (RegroupBlocks), so cached blocks are
  // shared only between requests of the same format. Needs PREEMPTION_MODE_RECOMPUTE (InvalidArgument
  // otherwise). Not owned; call before Run. nullptr (the default) = every request at the replica's format.
  absl::Status SetRequestKv(const RequestKvAssigner* assigner);

  // Observers are called in the order added; not owned.
  void AddObserver(EngineObserver* observer) { observers_.push_back(observer); }

  // Replays the whole trace. May be called once.
  absl::Status Run(TraceReader* reader);

  int32_t block_tokens() const { return block_tokens_; }
  const BlockManager& block_manager(int32_t replica) const { return *blocks_[replica]; }
  // Iterations formed by continuing a decode run, over all replicas (Scheduler::run_advanced_iterations).
  int64_t run_advanced_iterations() const;
  // Of all iterations, those completed where they started (a decode run's, before every queued event).
  int64_t inline_completed_iterations() const { return inline_completed_iterations_; }

 private:
  Engine(const proto::ExperimentConfig& config, const CostModel* cost_model, int32_t block_tokens);

  absl::Status ReadNextArrival(TraceReader* reader);
  absl::Status CheckRequest(const TraceReader& reader, RequestState* state) const;
  // Sets state->kv from request_kv_ (if any) and regroups the request's blocks for it.
  absl::Status AssignRequestKv(RequestState* state) const;
  absl::Status HandleArrival(const Event& event);
  // Closed loop: reads and checks the whole trace into session_spill_, builds the chains, issues the
  // first root.
  absl::Status LoadSessions(TraceReader* reader);
  // Closed loop: request `index` (its chain record `chain`) arrives at `issue_ns` (< 0: a root, at its
  // trace time); returns its slot. Errors: the spill file's.
  absl::StatusOr<int32_t> IssueSessionRequest(int32_t index, const SessionChainRecord& chain, SimTime issue_ns);
  absl::Status IssueNextRoot();
  // Closed loop: the request in `slot` ended at `now_ns`: its successors are issued.
  absl::Status SessionRequestEnded(int32_t slot, SimTime now_ns);
  // Starts the replica's next iteration unless one is running (a schedule event, or EndIteration).
  absl::Status StartIteration(int32_t replica, SimTime now_ns);
  // Forms the replica's next iteration at `now_ns` and tells the observers. Returns its end time when it
  // is to be applied at once (a decode run's iteration that finishes no request and ends before every
  // queued event: see the class comment), else -1: the replica is idle, or its end is now an event.
  // REQUIRES: the replica is not busy.
  absl::StatusOr<SimTime> BeginIteration(int32_t replica, SimTime now_ns);
  // Applies the replica's iteration that ends at `now_ns` and starts its next one: at once when no other
  // event is due at `now_ns` (the schedule event would be the next one popped), else through a schedule
  // event; and so on while BeginIteration says its iterations are to be applied at once.
  absl::Status EndIteration(int32_t replica, SimTime now_ns);
  void RequestSchedule(int32_t replica, SimTime now_ns);

  const proto::ExperimentConfig config_;
  const CostModel* const cost_model_;
  const int32_t block_tokens_;
  EventQueue queue_;
  RequestPool pool_;
  std::unique_ptr<GpuBlockDirectory> directory_;  // cache-aware routing over 2..16 replicas; else null
  std::vector<std::unique_ptr<BlockManager>> blocks_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::unique_ptr<Router> router_;
  std::vector<IterationPlan> plans_;
  std::vector<uint8_t> busy_;
  int64_t inline_completed_iterations_ = 0;
  std::vector<uint8_t> schedule_pending_;
  std::vector<int32_t> finished_;
  std::vector<EngineObserver*> observers_;
  const RequestKvAssigner* request_kv_ = nullptr;
  int64_t requests_read_ = 0;
  const bool closed_loop_;
  // Closed loop: the whole trace, checked, each request with its RequestState::unique_blocks and kv, on
  // disk; the chains (on disk too) know each request's offset there.
  RequestSpill session_spill_;
  SessionChains chains_;
  std::vector<int32_t> successors_;  // scratch of SessionRequestEnded
  int32_t next_root_ = 0;
  int32_t root_slot_ = -1;           // the root arrival scheduled one ahead
  std::vector<int32_t> slot_index_;  // closed loop: slot -> index in session_requests_
  SimTime last_arrival_ns_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_ENGINE_H_
