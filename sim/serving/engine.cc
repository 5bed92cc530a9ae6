#include "sim/serving/engine.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const proto::ExperimentConfig& config,
                                                       const CostModel* cost_model, int32_t block_tokens,
                                                       const EngineOptions& engine_options) {
  if (cost_model == nullptr) return absl::InvalidArgumentError("engine: no cost model");
  if (block_tokens < 0) return absl::InvalidArgumentError("engine: block_tokens must be >= 0");
  if (block_tokens == 0) block_tokens = config.cache().block_tokens();
  if (config.scheduler().preemption() == proto::PREEMPTION_MODE_SWAP && config.cache().lower_tiers().empty()) {
    return absl::InvalidArgumentError(
        "scheduler.preemption: PREEMPTION_MODE_SWAP needs a host tier in cache.lower_tiers");
  }
  const int32_t num_replicas = config.cluster().num_replicas();
  if (num_replicas <= 0) return absl::InvalidArgumentError("cluster.num_replicas must be > 0");
  std::unique_ptr<Engine> engine(new Engine(config, cost_model, block_tokens));
  KVSIM_ASSIGN_OR_RETURN(BlockManagerOptions options, BlockManagerOptionsFromConfig(config, block_tokens));
  std::vector<std::unique_ptr<BlockManager>> block_managers;
  for (int32_t r = 0; r < num_replicas; ++r) {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<BlockManager> blocks, BlockManager::Create(options, cost_model));
    block_managers.push_back(std::move(blocks));
  }
  // Cache-aware routing over several replicas reads one directory of their GPU blocks (beyond its limits
  // the router probes each replica's cache: the same choices).
  if (config.cluster().router() == proto::ROUTER_KIND_CACHE_AWARE && num_replicas > 1 &&
      num_replicas <= GpuBlockDirectory::kMaxReplicas &&
      block_managers[0]->max_entries() <= GpuBlockDirectory::kMaxEntries) {
    engine->directory_ = std::make_unique<GpuBlockDirectory>(num_replicas);
  }
  std::vector<const Scheduler*> replicas;
  for (int32_t r = 0; r < num_replicas; ++r) {
    std::unique_ptr<BlockManager>& blocks = block_managers[r];
    if (engine->directory_ != nullptr) blocks->ShareGpuDirectory(engine->directory_.get(), r);
    engine->schedulers_.push_back(std::make_unique<Scheduler>(
        config.scheduler(), config.cost_model().overlap_transfers(), cost_model, blocks.get(), &engine->pool_, r,
        engine_options.record_token_gaps, engine_options.advance_decode_runs));
    engine->blocks_.push_back(std::move(blocks));
    replicas.push_back(engine->schedulers_.back().get());
  }
  engine->router_ = std::make_unique<Router>(config.cluster(), std::move(replicas), engine->directory_.get());
  engine->plans_.resize(num_replicas);
  engine->busy_.assign(num_replicas, 0);
  engine->schedule_pending_.assign(num_replicas, 0);
  return engine;
}

Engine::Engine(const proto::ExperimentConfig& config, const CostModel* cost_model, int32_t block_tokens)
    : config_(config),
      cost_model_(cost_model),
      block_tokens_(block_tokens),
      closed_loop_(config.workload().closed_loop_sessions()) {}

absl::Status Engine::SetRequestKv(const RequestKvAssigner* assigner) {
  if (assigner != nullptr && config_.scheduler().preemption() == proto::PREEMPTION_MODE_SWAP) {
    return absl::InvalidArgumentError(
        "scheduler.preemption: per-request KV configurations support PREEMPTION_MODE_RECOMPUTE only");
  }
  request_kv_ = assigner;
  return absl::OkStatus();
}

absl::Status Engine::AssignRequestKv(RequestState* state) const {
  if (request_kv_ == nullptr) return absl::OkStatus();
  AssignFreshHashesIfNone(block_tokens_, &state->request);  // regrouped below
  KVSIM_ASSIGN_OR_RETURN(state->kv, request_kv_->Assign(state->request));
  if (state->kv.block_factor < 1) return absl::InternalError("request KV configuration: block_factor < 1");
  if (state->kv.prompt_keep_tokens >= 0) {
    state->unique_blocks = true;  // its KV after prefill is not its prompt's: nothing to share
  }
  RegroupBlocks(state->kv.block_factor, state->unique_blocks ? 0 : state->kv.hash_salt, block_tokens_,
                &state->request);
  return absl::OkStatus();
}

absl::Status Engine::Run(TraceReader* reader) {
  if (closed_loop_) {
    KVSIM_RETURN_IF_ERROR(LoadSessions(reader));
  } else {
    KVSIM_RETURN_IF_ERROR(ReadNextArrival(reader));
  }
  while (!queue_.empty()) {
    const Event event = queue_.PopNext();
    switch (event.type) {
      case EventType::kArrival:
        KVSIM_RETURN_IF_ERROR(HandleArrival(event));
        if (!closed_loop_) {
          KVSIM_RETURN_IF_ERROR(ReadNextArrival(reader));
        } else if (static_cast<int32_t>(event.payload) == root_slot_) {
          KVSIM_RETURN_IF_ERROR(IssueNextRoot());
        }
        break;
      case EventType::kIterationEnd:
        KVSIM_RETURN_IF_ERROR(EndIteration(event.replica, event.time_ns));
        break;
      case EventType::kSchedule:
        KVSIM_RETURN_IF_ERROR(StartIteration(event.replica, event.time_ns));
        break;
    }
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  std::vector<const BlockManager*> managers;
  for (size_t r = 0; r < blocks_.size(); ++r) {
    if (schedulers_[r]->num_waiting() + schedulers_[r]->num_running() != 0) {
      return absl::InternalError(absl::StrCat("replica ", r, " ended with unfinished requests"));
    }
    managers.push_back(blocks_[r].get());
  }
  KVSIM_RETURN_IF_ERROR(BlockManager::CheckAllIdle(managers));  // one pass over a shared directory
  if (pool_.in_use() != 0) return absl::InternalError("requests left in flight at the end");
  for (EngineObserver* observer : observers_) observer->OnRunEnd(queue_.now_ns(), managers);
  return absl::OkStatus();
}

int64_t Engine::run_advanced_iterations() const {
  int64_t total = 0;
  for (const std::unique_ptr<Scheduler>& scheduler : schedulers_) total += scheduler->run_advanced_iterations();
  return total;
}

absl::Status Engine::CheckRequest(const TraceReader& reader, RequestState* state) const {
  Request* request = &state->request;
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(reader.info().path, ": request ", request->request_id, ": ", what));
  };
  if (request->input_tokens <= 0) return error(absl::StrCat("input_tokens must be > 0, got ", request->input_tokens));
  if (request->output_tokens < 0)
    return error(absl::StrCat("output_tokens must be >= 0, got ", request->output_tokens));
  if (absl::Status limits = CheckRequestLimits(*request, block_tokens_); !limits.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(reader.info().path, ": ", limits.message()));
  }
  if (request->block_hashes.empty()) {  // blocks without ids, all private (BlockManager::Admit)
    state->unique_blocks = true;
    return absl::OkStatus();
  }
  if (request->block_tokens != block_tokens_) {
    return error(
        absl::StrCat("block size ", request->block_tokens, " tokens differs from the trace's ", block_tokens_));
  }
  if (!request->block_token_counts.empty()) {  // variable blocks: each id covers its own tokens
    if (absl::Status counts = CheckBlockTokenCounts(*request); !counts.ok()) return error(counts.message());
    return absl::OkStatus();
  }
  const int64_t expected = NumBlocks(request->input_tokens, block_tokens_);
  if (static_cast<int64_t>(request->block_hashes.size()) != expected) {
    return error(absl::StrCat(request->block_hashes.size(), " block hashes for ", request->input_tokens,
                              " tokens; expected ", expected, " blocks of ", block_tokens_, " tokens"));
  }
  return absl::OkStatus();
}

absl::Status Engine::ReadNextArrival(TraceReader* reader) {
  const int64_t max_requests = config_.workload().max_requests();
  if (max_requests > 0 && requests_read_ >= max_requests) return absl::OkStatus();
  const int32_t slot = pool_.Allocate();
  RequestState& state = pool_.at(slot);
  if (!reader->Next(&state.request)) {
    pool_.Free(slot);
    return absl::OkStatus();
  }
  ++requests_read_;
  KVSIM_RETURN_IF_ERROR(CheckRequest(*reader, &state));
  KVSIM_RETURN_IF_ERROR(AssignRequestKv(&state));
  const double scale = config_.workload().time_scale();
  const SimTime arrival_ns = static_cast<SimTime>(std::llround(state.request.arrival_ns * scale));
  if (arrival_ns < last_arrival_ns_) {
    return absl::InvalidArgumentError(absl::StrCat(reader->info().path, ": request ", state.request.request_id,
                                                   ": arrival ", arrival_ns, " ns before the previous request's ",
                                                   last_arrival_ns_));
  }
  last_arrival_ns_ = arrival_ns;
  state.arrival_ns = arrival_ns;
  queue_.Schedule(arrival_ns, kPriorityArrival, EventType::kArrival, -1, slot);
  return absl::OkStatus();
}

absl::Status Engine::LoadSessions(TraceReader* reader) {
  const int64_t max_requests = config_.workload().max_requests();
  const double scale = config_.workload().time_scale();
  RequestState scratch;
  SimTime last_ns = 0;
  while ((max_requests <= 0 || chains_.size() < max_requests) &&
         reader->Next(&scratch.request)) {
    KVSIM_RETURN_IF_ERROR(CheckRequest(*reader, &scratch));
    KVSIM_RETURN_IF_ERROR(AssignRequestKv(&scratch));
    const SimTime arrival_ns = static_cast<SimTime>(std::llround(scratch.request.arrival_ns * scale));
    if (arrival_ns < last_ns) {
      return absl::InvalidArgumentError(absl::StrCat(reader->info().path, ": request ", scratch.request.request_id,
                                                     ": arrival ", arrival_ns, " ns before the previous request's ",
                                                     last_ns));
    }
    last_ns = arrival_ns;
    // What the chains need of the request; the rest is spilled.
    chains_.Add(SessionLinkOf(scratch.request),
                session_spill_.Append(scratch.request, scratch.unique_blocks, scratch.kv));
    scratch.request.Clear();
    scratch.unique_blocks = false;
    scratch.kv = RequestKv();
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  requests_read_ = chains_.size();
  KVSIM_RETURN_IF_ERROR(chains_.Build(reader->info().path));
  return IssueNextRoot();
}

absl::StatusOr<int32_t> Engine::IssueSessionRequest(int32_t index, const SessionChainRecord& chain,
                                                    SimTime issue_ns) {
  const int32_t slot = pool_.Allocate();
  RequestState& state = pool_.at(slot);
  bool unique_blocks = false;
  if (absl::Status read = session_spill_.Read(chain.spill_offset, &state.request, &unique_blocks, &state.kv);
      !read.ok()) {
    pool_.Free(slot);
    return read;
  }
  state.unique_blocks = unique_blocks;
  if (issue_ns < 0) {  // a root: at its trace time
    issue_ns = static_cast<SimTime>(std::llround(state.request.arrival_ns * config_.workload().time_scale()));
  }
  state.arrival_ns = issue_ns;
  if (slot >= static_cast<int32_t>(slot_index_.size())) slot_index_.resize(slot + 1, -1);
  slot_index_[slot] = index;
  queue_.Schedule(issue_ns, kPriorityArrival, EventType::kArrival, -1, slot);
  return slot;
}

absl::Status Engine::IssueNextRoot() {
  root_slot_ = -1;
  if (next_root_ >= chains_.num_roots()) return absl::OkStatus();
  KVSIM_ASSIGN_OR_RETURN(const int32_t index, chains_.root(next_root_++));
  KVSIM_ASSIGN_OR_RETURN(const SessionChainRecord chain, chains_.Get(index));
  KVSIM_ASSIGN_OR_RETURN(root_slot_, IssueSessionRequest(index, chain, /*issue_ns=*/-1));
  return absl::OkStatus();
}

absl::Status Engine::SessionRequestEnded(int32_t slot, SimTime now_ns) {
  const int32_t index = slot_index_[slot];
  slot_index_[slot] = -1;
  const double scale = config_.workload().time_scale();
  KVSIM_RETURN_IF_ERROR(chains_.Successors(index, &successors_));
  for (int32_t next : successors_) {
    KVSIM_ASSIGN_OR_RETURN(const SessionChainRecord record, chains_.Get(next));
    KVSIM_RETURN_IF_ERROR(
        IssueSessionRequest(next, record, now_ns + static_cast<SimTime>(std::llround(record.think_ns * scale)))
            .status());
  }
  return absl::OkStatus();
}

absl::Status Engine::HandleArrival(const Event& event) {
  const int32_t slot = static_cast<int32_t>(event.payload);
  RequestState& state = pool_.at(slot);
  const int32_t replica = router_->Route(state.request);
  state.replica = replica;
  for (EngineObserver* observer : observers_) observer->OnArrival(event.time_ns, state);
  if (blocks_[replica]->BlocksToComplete(state) > blocks_[replica]->gpu_capacity_blocks()) {
    state.rejected = true;
    for (EngineObserver* observer : observers_) observer->OnRequestFinished(event.time_ns, state);
    absl::Status ended = closed_loop_ ? SessionRequestEnded(slot, event.time_ns) : absl::OkStatus();
    pool_.Free(slot);
    return ended;
  }
  schedulers_[replica]->Enqueue(slot);
  RequestSchedule(replica, event.time_ns);
  return absl::OkStatus();
}

void Engine::RequestSchedule(int32_t replica, SimTime now_ns) {
  if (busy_[replica] || schedule_pending_[replica]) return;
  schedule_pending_[replica] = 1;
  queue_.Schedule(now_ns, kPrioritySchedule, EventType::kSchedule, replica, 0);
}

absl::Status Engine::StartIteration(int32_t replica, SimTime now_ns) {
  schedule_pending_[replica] = 0;
  if (busy_[replica]) return absl::OkStatus();
  KVSIM_ASSIGN_OR_RETURN(const SimTime inline_end_ns, BeginIteration(replica, now_ns));
  return inline_end_ns < 0 ? absl::OkStatus() : EndIteration(replica, inline_end_ns);
}

absl::StatusOr<SimTime> Engine::BeginIteration(int32_t replica, SimTime now_ns) {
  Scheduler& scheduler = *schedulers_[replica];
  IterationPlan& plan = plans_[replica];
  KVSIM_ASSIGN_OR_RETURN(bool busy, scheduler.FormIteration(now_ns, &plan));
  for (int32_t slot : plan.preempted) {
    for (EngineObserver* observer : observers_) observer->OnPreemption(now_ns, pool_.at(slot));
  }
  if (!busy) {
    if (scheduler.num_waiting() + scheduler.num_running() > 0) {
      return absl::InternalError(absl::StrCat("replica ", replica, " stalled at ", now_ns, " ns with ",
                                              scheduler.num_waiting(), " waiting requests"));
    }
    return -1;
  }
  busy_[replica] = 1;
  const BlockManager& blocks = *blocks_[replica];
  // Every field named, in order: the record is then written once, not zeroed first (a `rep stos`).
  const IterationRecord record{.replica = replica,
                               .start_ns = now_ns,
                               .duration_ns = plan.duration_ns,
                               .compute_ns = plan.compute_ns,
                               .transfer_ns = plan.transfer_ns,
                               .transfers = &plan.transfers,
                               .batch_size = static_cast<int32_t>(plan.pieces.size()),
                               .prefill_tokens = plan.prefill_tokens,
                               .decode_tokens = plan.decode_tokens,
                               .evicted_blocks = plan.evicted_blocks,
                               .preemptions = static_cast<int32_t>(plan.preempted.size()),
                               .gpu_blocks_used = blocks.gpu_used_blocks(),
                               .gpu_blocks_pinned = blocks.gpu_pinned_blocks(),
                               .gpu_capacity_blocks = blocks.gpu_capacity_blocks(),
                               .host_blocks_used = blocks.host_used_blocks(),
                               .queued_requests = scheduler.num_waiting(),
                               .running_requests = scheduler.num_running(),
                               .plan = &plan,
                               .pool = &pool_};
  for (EngineObserver* observer : observers_) observer->OnIteration(record);
  const SimTime end_ns = now_ns + plan.duration_ns;
  if (scheduler.CompletionOnlyCounts() && (queue_.empty() || queue_.next_time_ns() > end_ns)) {
    ++inline_completed_iterations_;
    return end_ns;  // nothing is due before it ends: the caller applies it (EndIteration) without an event
  }
  queue_.Schedule(end_ns, kPriorityIterationEnd, EventType::kIterationEnd, replica, 0);
  return -1;
}

absl::Status Engine::EndIteration(int32_t replica, SimTime now_ns) {
  while (true) {
    finished_.clear();
    schedulers_[replica]->CompleteIteration(now_ns, plans_[replica], &finished_);
    for (int32_t slot : finished_) {
      for (EngineObserver* observer : observers_) observer->OnRequestFinished(now_ns, pool_.at(slot));
      absl::Status ended = closed_loop_ ? SessionRequestEnded(slot, now_ns) : absl::OkStatus();
      pool_.Free(slot);
      KVSIM_RETURN_IF_ERROR(ended);
    }
    busy_[replica] = 0;
    if (!queue_.empty() && queue_.next_time_ns() <= now_ns) {
      RequestSchedule(replica, now_ns);
      return absl::OkStatus();
    }
    schedule_pending_[replica] = 0;  // StartIteration's first step (busy_ is 0)
    KVSIM_ASSIGN_OR_RETURN(now_ns, BeginIteration(replica, now_ns));
    if (now_ns < 0) return absl::OkStatus();  // idle, or its end is an event
  }
}

}  // namespace kvsim
