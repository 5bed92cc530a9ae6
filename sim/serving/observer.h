// File: sim/serving/observer.h
//
// EngineObserver: how metrics, timelines and checks watch a run without living inside the engine's loop
// (ramulator2's plugin hooks). Every hook does nothing by default; an observer overrides the ones it needs.
// The engine calls the hooks in event order, on its own thread; states passed in are valid only during
// the call.
//
// Example:
//   class CountFinished : public EngineObserver {
//    public:
//     void OnRequestFinished(SimTime, const RequestState&) override { ++count; }
//     int64_t count = 0;
//   };
//   engine->AddObserver(&counter);
#ifndef KVSIM_SIM_SERVING_OBSERVER_H_
#define KVSIM_SIM_SERVING_OBSERVER_H_

#include <cstdint>
#include <vector>

#include "sim/serving/block_manager.h"
#include "sim/serving/clock.h"
#include "sim/serving/request_state.h"
#include "sim/serving/scheduler.h"

namespace kvsim {

// One iteration as it starts.
struct IterationRecord {
  int32_t replica = 0;
  SimTime start_ns = 0;
  int64_t duration_ns = 0;
  int64_t compute_ns = 0;
  int64_t transfer_ns = 0;
  const std::vector<TierTransfer>* transfers = nullptr;  // per lower tier; valid during OnIteration only
  int32_t batch_size = 0;                                // sequences
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t evicted_blocks = 0;
  int32_t preemptions = 0;
  int64_t gpu_blocks_used = 0;
  int64_t gpu_blocks_pinned = 0;
  int64_t gpu_capacity_blocks = 0;
  int64_t host_blocks_used = 0;
  int64_t queued_requests = 0;
  int64_t running_requests = 0;
  // The iteration's plan and the states its pieces' slots name; valid during OnIteration only. In a
  // decode run (sim/serving/scheduler.h) a decode piece's token counts and times lag until the run ends.
  const IterationPlan* plan = nullptr;
  const RequestPool* pool = nullptr;
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;

  // A request reached the router; state.replica is set.
  virtual void OnArrival(SimTime now_ns, const RequestState& state) {}
  // A replica starts an iteration.
  virtual void OnIteration(const IterationRecord& record) {}
  // A running request was preempted (state.swapped tells how).
  virtual void OnPreemption(SimTime now_ns, const RequestState& state) {}
  // A request finished, or was rejected on arrival (state.rejected) because it can never fit.
  virtual void OnRequestFinished(SimTime now_ns, const RequestState& state) {}
  // The run ended at `end_ns` (the last event); `replicas` are the block managers, by replica index.
  virtual void OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) {}
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_OBSERVER_H_
