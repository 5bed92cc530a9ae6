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
// Input checks (InvalidArgument naming the trace and request): prompt of at least one token, output
// tokens >= 0, arrivals in non-decreasing order, block hashes matching the prompt's block count and the
// trace's block size. A request whose prompt and output can never fit on one GPU is rejected (reported,
// not run). At the end every replica's BlockManager must be idle (no leaked block).
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
#include "sim/serving/observer.h"
#include "sim/serving/request_state.h"
#include "sim/serving/router.h"
#include "sim/serving/scheduler.h"
#include "traces/trace_reader.h"

namespace kvsim {

class Engine {
 public:
  // `config` is resolved (config/experiment_config.h); `cost_model` must outlive the engine. `block_tokens` is the
  // trace's hash block size, or 0 for traces without hashes (then config.cache.block_tokens is used).
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const proto::ExperimentConfig& config,
                                                        const CostModel* cost_model, int32_t block_tokens);

  // Observers are called in the order added; not owned.
  void AddObserver(EngineObserver* observer) { observers_.push_back(observer); }

  // Replays the whole trace. May be called once.
  absl::Status Run(TraceReader* reader);

  int32_t block_tokens() const { return block_tokens_; }
  const BlockManager& block_manager(int32_t replica) const { return *blocks_[replica]; }

 private:
  Engine(const proto::ExperimentConfig& config, const CostModel* cost_model, int32_t block_tokens);

  absl::Status ReadNextArrival(TraceReader* reader);
  absl::Status CheckRequest(const TraceReader& reader, RequestState* state) const;
  void HandleArrival(const Event& event);
  absl::Status StartIteration(int32_t replica, SimTime now_ns);
  void EndIteration(int32_t replica, SimTime now_ns);
  void RequestSchedule(int32_t replica, SimTime now_ns);

  const proto::ExperimentConfig config_;
  const CostModel* const cost_model_;
  const int32_t block_tokens_;
  EventQueue queue_;
  RequestPool pool_;
  std::vector<std::unique_ptr<BlockManager>> blocks_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::unique_ptr<Router> router_;
  std::vector<IterationPlan> plans_;
  std::vector<uint8_t> busy_;
  std::vector<uint8_t> schedule_pending_;
  std::vector<int32_t> finished_;
  std::vector<EngineObserver*> observers_;
  int64_t requests_read_ = 0;
  SimTime last_arrival_ns_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_ENGINE_H_
