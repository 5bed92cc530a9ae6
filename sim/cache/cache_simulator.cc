#include "sim/cache/cache_simulator.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <type_traits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "policies/arc_policy.h"
#include "policies/belady_policy.h"
#include "policies/clock_policy.h"
#include "policies/fifo_policy.h"
#include "policies/lru_policy.h"
#include "policies/policy_factory.h"
#include "policies/s3fifo_policy.h"
#include "policies/sieve_policy.h"
#include "util/check.h"
#include "util/parallel.h"
#include "util/status_macros.h"

// Data and invariants (true between ProcessRequest calls):
// - num_resident_ is the number of resident blocks and never exceeds capacity_blocks_. Residency is the
//   policy's own index when it exposes one (residency_), else resident_; exactly one of them is used.
// - clock_ counts the accesses processed, so an access's clock is its index in the stream, the same
//   index ComputeNextUse writes into next_use (the runs start at request 0 of the compiled trace).
// - CompiledTrace is a struct of arrays: request r's accesses are [request_begin[r], request_begin[r+1]),
//   and request_begin has one entry more than requests.
// Order per access: residency test; a hit counts (a prefix hit while no miss came before in the request)
// and calls OnAccess; a miss in a full cache first asks ShouldAdmit (a refusal is a bypass: no insert,
// the clock still advances); an admitted miss calls OnMiss, then evicts (SelectVictim, OnRemove) while the
// cache is full or the policy reports EvictionPending (S3-FIFO's step can evict two), *before* OnInsert,
// so the count never passes the capacity. OnRequestEnd follows the request's last block.
// Why it is fast:
// - With the policy's index there is one residency structure and one lookup per access, not a second set
//   kept in step. Its entries for the blocks kPrefetchAhead (16) accesses ahead are prefetched: the
//   lookups are random over a table larger than the CPU caches, and a request's blocks are known.
// - The loop is compiled once per common policy class (LRU, FIFO, SIEVE, CLOCK, ARC, S3-FIFO, Belady:
//   each final, so its callbacks are direct calls and its residency test and prefetch inline) and once
//   through the EvictionPolicy interface for every other policy, wrapper or the simulator's own index:
//   the same callbacks in the same order either way (cache_simulator_test compares the two).
// - One AccessInfo per request; only the per-access fields are rewritten. resident_ is reserved at the
//   capacity (capped at 2^26), so it never rehashes.
// - ComputeNextUse is one backward pass, O(accesses), over a map reserved up front. RequestView points
//   into the compiled arrays: nothing is copied per request. Compiled runs go one simulator per task of
//   ParallelFor over the shared read-only trace; streaming reads the trace once for all simulators,
//   in chunks of 4,096 requests that the simulators replay in parallel (one ParallelFor per chunk).

namespace kvsim {
namespace {}  // namespace

template <typename... Policies>
CacheSimulator::ReplayFn CacheSimulator::ReplayFor(EvictionPolicy* policy) {
  // Each class is final: a successful cast is the exact type, whose residency() is the policy itself.
  ReplayFn replay = &CacheSimulator::ReplayAs<EvictionPolicy>;
  ((dynamic_cast<Policies*>(policy) != nullptr && (replay = &CacheSimulator::ReplayAs<Policies>, true)) || ...);
  return replay;
}

absl::Status PrepareRequestForReplay(const CacheReplayOptions& options, Request* request) {
  KVSIM_RETURN_IF_ERROR(CheckRequestLimits(*request, options.block_tokens));
  if (request->block_hashes.empty()) {
    AssignFreshBlockHashes(options.block_tokens, request);
  } else if (request->block_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("request ", request->request_id, ": has ",
                                                   request->block_hashes.size(), " block hashes but block_tokens ",
                                                   request->block_tokens, " (expected > 0)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateReplayOptions(const CacheReplayOptions& options) {
  if (options.block_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_tokens must be > 0 (tokens per block), got ", options.block_tokens));
  }
  if (options.max_requests < 0) return absl::InvalidArgumentError("max_requests must be >= 0");
  return absl::OkStatus();
}

namespace {

// Creates the simulators of `specs`, validating each.
absl::StatusOr<std::vector<std::unique_ptr<CacheSimulator>>> CreateSimulators(const std::vector<CacheRunSpec>& specs,
                                                                              const CacheReplayOptions& options) {
  std::vector<std::unique_ptr<CacheSimulator>> simulators;
  for (const CacheRunSpec& spec : specs) {
    const std::string label = absl::StrCat(PolicyLabel(spec.policy), " @ ", spec.capacity_blocks);
    if (spec.capacity_blocks <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("run ", label, ": capacity_blocks must be > 0"));
    }
    auto policy = CreateEvictionPolicyFromConfig(spec.policy);
    if (!policy.ok()) {
      return absl::Status(policy.status().code(), absl::StrCat("run ", label, ": ", policy.status().message()));
    }
    simulators.push_back(std::make_unique<CacheSimulator>(std::move(*policy), spec.capacity_blocks,
                                                          ResolveRestoreCost(options.restore_cost, spec.policy)));
  }
  return simulators;
}

std::vector<CacheRunResult> Collect(const std::vector<CacheRunSpec>& specs,
                                    const std::vector<std::unique_ptr<CacheSimulator>>& simulators) {
  std::vector<CacheRunResult> results;
  for (size_t i = 0; i < specs.size(); ++i) {
    results.push_back({specs[i], PolicyLabel(specs[i].policy), simulators[i]->stats()});
  }
  return results;
}

}  // namespace

void BlockTokens(const Request& request, std::vector<int32_t>* tokens) {
  const int64_t n = static_cast<int64_t>(request.block_hashes.size());
  if (!request.block_token_counts.empty()) {  // variable blocks: each counts its own tokens
    tokens->assign(request.block_token_counts.begin(), request.block_token_counts.end());
    return;
  }
  const int32_t bt = request.block_tokens;
  tokens->assign(n, bt);
  if (n == 0) return;
  const int64_t last = request.input_tokens - (n - 1) * static_cast<int64_t>(bt);
  if (last > 0 && last <= bt) tokens->back() = static_cast<int32_t>(last);
}

RequestView CompiledTrace::View(int64_t r) const {
  const RequestMeta& meta = requests[r];
  const int64_t begin = request_begin[r];
  RequestView view;
  view.request_id = meta.request_id;
  view.arrival_ns = meta.arrival_ns;
  view.session_id = meta.session_id;
  view.block_tokens = meta.block_tokens;
  view.blocks = blocks.data() + begin;
  view.tokens = tokens.data() + begin;
  view.next_use = next_use.empty() ? nullptr : next_use.data() + begin;
  view.dense_blocks = dense_blocks.empty() ? nullptr : dense_blocks.data() + begin;
  view.num_blocks = request_begin[r + 1] - begin;
  view.end = meta.end;
  return view;
}

absl::StatusOr<CompiledTrace> CompileTrace(TraceReader* reader, const CacheReplayOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(options));
  CompiledTrace trace;
  Request request;
  std::vector<int32_t> tokens;
  trace.request_begin.push_back(0);
  while ((options.max_requests == 0 || trace.num_requests() < options.max_requests) && reader->Next(&request)) {
    KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(options, &request));
    BlockTokens(request, &tokens);
    trace.blocks.insert(trace.blocks.end(), request.block_hashes.begin(), request.block_hashes.end());
    trace.tokens.insert(trace.tokens.end(), tokens.begin(), tokens.end());
    trace.request_begin.push_back(trace.num_accesses());
    CompiledTrace::RequestMeta meta;
    meta.request_id = request.request_id;
    meta.arrival_ns = request.arrival_ns;
    meta.session_id = request.session_id;
    meta.block_tokens = request.block_tokens;
    meta.end = MakeRequestEndInfo(request, request.arrival_ns);
    trace.requests.push_back(std::move(meta));
    options.ReportProgress(trace.num_requests(), options.max_requests);
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  AssignDenseIds(&trace);
  return trace;
}

void AssignDenseIds(CompiledTrace* trace) {
  const int64_t n = trace->num_accesses();
  trace->dense_blocks.clear();
  trace->distinct_blocks.clear();
  // Ids in order of first use.
  std::vector<uint32_t> dense(n);
  std::vector<BlockId> first_seen;
  {
    absl::flat_hash_map<BlockId, uint32_t> ids;
    for (int64_t i = 0; i < n; ++i) {
      auto [it, inserted] = ids.try_emplace(trace->blocks[i], static_cast<uint32_t>(first_seen.size()));
      if (inserted) {
        if (first_seen.size() >= std::numeric_limits<uint32_t>::max()) return;
        first_seen.push_back(trace->blocks[i]);
      }
      dense[i] = it->second;
    }
  }
  trace->distinct_blocks = std::move(first_seen);
  trace->dense_blocks = std::move(dense);
}

void ComputeNextUse(CompiledTrace* trace) {
  const int64_t n = trace->num_accesses();
  trace->next_use.assign(n, AccessInfo::kNever);
  if (trace->dense_blocks.size() == trace->blocks.size()) {
    std::vector<int64_t> next(trace->distinct_blocks.size(), AccessInfo::kNever);
    for (int64_t i = n - 1; i >= 0; --i) {
      int64_t& later = next[trace->dense_blocks[i]];
      trace->next_use[i] = later;
      later = i;
    }
    return;
  }
  absl::flat_hash_map<BlockId, int64_t> next;
  next.reserve(static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 24)));
  for (int64_t i = n - 1; i >= 0; --i) {
    auto [it, inserted] = next.try_emplace(trace->blocks[i], i);
    if (!inserted) {
      trace->next_use[i] = it->second;
      it->second = i;
    }
  }
}

bool IsCostAwarePolicy(const proto::EvictionPolicyConfig& policy) {
  return absl::EqualsIgnoreCase(policy.name(), "asym") || absl::EqualsIgnoreCase(policy.name(), "gdsf");
}

RestoreCost ResolveRestoreCost(RestoreCost cost, const proto::EvictionPolicyConfig& policy) {
  if (cost != RestoreCost::kAuto) return cost;
  return IsCostAwarePolicy(policy) ? RestoreCost::kPosition : RestoreCost::kUniform;
}

CacheSimulator::CacheSimulator(std::unique_ptr<EvictionPolicy> policy, int64_t capacity_blocks,
                               RestoreCost restore_cost, bool own_index)
    : policy_(std::move(policy)),
      capacity_blocks_(capacity_blocks),
      restore_cost_(restore_cost == RestoreCost::kAuto ? RestoreCost::kUniform : restore_cost),
      residency_(own_index ? nullptr : policy_->residency()) {
  KVSIM_CHECK(capacity_blocks_ > 0);
  if (residency_ == nullptr) {
    resident_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_blocks_, int64_t{1} << 26)) + 1);
  }
  policy_->SetCapacity(capacity_blocks_);
  // The classes with a loop of their own (with their own index).
  replay_ = residency_ == nullptr
                ? &CacheSimulator::ReplayAs<EvictionPolicy>
                : ReplayFor<LruPolicy, FifoPolicy, SievePolicy, ClockPolicy, ArcPolicy, S3FifoPolicy, BeladyPolicy>(
                      policy_.get());
}

void CacheSimulator::UseDenseIds(const std::vector<BlockId>* distinct_blocks) {
  KVSIM_CHECK(stats_.accesses == 0) << "UseDenseIds after the first access";
  distinct_ = distinct_blocks;
  policy_->SetDenseIds(static_cast<int64_t>(distinct_->size()));
  if (residency_ == nullptr) {
    resident_ = {};
    resident_dense_.assign(distinct_->size(), 0);
  }
}

void CacheSimulator::ProcessRequest(const RequestView& request) { (this->*replay_)(request); }

template <typename Policy>
void CacheSimulator::ReplayAs(const RequestView& request) {
  Policy* const policy = static_cast<Policy*>(policy_.get());
  // A final policy class is its own residency index (residency_ == policy); through EvictionPolicy the
  // index is residency_ or the simulator's own.
  constexpr bool kTyped = !std::is_same<Policy, EvictionPolicy>::value;
  auto resident = [&](BlockId block) {
    if constexpr (kTyped) {
      return policy->IsResident(block);
    } else {
      return IsResident(block);
    }
  };
  auto prefetch = [&](BlockId block) {
    if constexpr (kTyped) {
      policy->Prefetch(block);
    } else {
      if (residency_ != nullptr) residency_->Prefetch(block);
    }
  };
  ++stats_.requests;
  bool in_prefix = true;
  AccessInfo info;
  info.time_ns = request.arrival_ns;
  info.request_id = request.request_id;
  info.session_id = request.session_id;
  // The policy's index entries of the next blocks are loaded ahead (a hint: the accesses are random
  // in a table larger than the CPU caches, and a request's blocks are known in advance).
  constexpr int64_t kPrefetchAhead = 16;
  // Dense ids only after UseDenseIds; a simulator without them reads the hashes of any view.
  const uint32_t* dense = distinct_ != nullptr ? request.dense_blocks : nullptr;
  KVSIM_CHECK(request.num_blocks == 0 || (dense != nullptr) == (distinct_ != nullptr))
      << "the simulator uses dense ids but request " << request.request_id << " has none";
  auto id = [&](int64_t k) -> BlockId { return dense != nullptr ? dense[k] : request.blocks[k]; };
  for (int64_t k = 0; k < std::min(kPrefetchAhead, request.num_blocks); ++k) prefetch(id(k));
  for (int64_t k = 0; k < request.num_blocks; ++k) {
    if (k + kPrefetchAhead < request.num_blocks) prefetch(id(k + kPrefetchAhead));
    const BlockId block = id(k);
    const int32_t tokens = request.tokens[k];
    info.clock = clock_++;
    info.block_index = static_cast<int32_t>(k);
    info.position_tokens = k * static_cast<int64_t>(request.block_tokens);
    const int64_t position_cost = PositionRestoreCost(info.position_tokens, tokens);
    info.restore_ns = restore_cost_ == RestoreCost::kPosition ? position_cost : 0;
    stats_.restore_cost += position_cost;
    info.next_access_clock = request.next_use != nullptr ? request.next_use[k] : -1;
    info.has_parent = k > 0;
    info.parent = k > 0 ? id(k - 1) : 0;
    ++stats_.accesses;
    stats_.tokens += tokens;
    if (resident(block)) {
      ++stats_.hits;
      stats_.hit_tokens += tokens;
      stats_.restore_cost_saved += position_cost;
      if (in_prefix) {
        ++stats_.prefix_hits;
        stats_.prefix_hit_tokens += tokens;
      }
      policy->OnAccess(block, info);
      continue;
    }
    in_prefix = false;
    if (num_resident_ >= capacity_blocks_ && !policy->ShouldAdmit(block, info)) {
      ++stats_.bypasses;
      continue;
    }
    policy->OnMiss(block, info);
    while (num_resident_ >= capacity_blocks_ || policy->EvictionPending()) {
      const BlockId victim = policy->SelectVictim([](BlockId) { return true; });
      if (kTyped || residency_ != nullptr) {
        KVSIM_CHECK(resident(victim)) << policy->Name() << " chose non-resident victim " << victim;
      } else if (distinct_ != nullptr) {
        KVSIM_CHECK(resident_dense_[victim] != 0) << policy->Name() << " chose non-resident victim " << victim;
        resident_dense_[victim] = 0;
      } else {
        KVSIM_CHECK(resident_.erase(victim) == 1) << policy->Name() << " chose non-resident victim " << victim;
      }
      policy->OnRemove(victim);
      --num_resident_;
      ++stats_.evictions;
      if (victims_ != nullptr) victims_->push_back(distinct_ != nullptr ? (*distinct_)[victim] : victim);
    }
    if (!kTyped && residency_ == nullptr) {
      if (distinct_ != nullptr) {
        resident_dense_[block] = 1;
      } else {
        resident_.insert(block);
      }
    }
    ++num_resident_;
    policy->OnInsert(block, info);
  }
  policy->OnRequestEnd(request.end);
}

absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplaysOnTrace(CompiledTrace* trace,
                                                                   const std::vector<CacheRunSpec>& specs,
                                                                   const CacheReplayOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<CacheSimulator>> simulators, CreateSimulators(specs, options));
  bool oracle = false;
  for (const CacheRunSpec& spec : specs) oracle |= PolicyNeedsOracle(spec.policy);
  if (trace->dense_blocks.size() != trace->blocks.size()) AssignDenseIds(trace);
  if (oracle && trace->next_use.size() != trace->blocks.size()) ComputeNextUse(trace);
  const bool dense = !trace->blocks.empty() && trace->dense_blocks.size() == trace->blocks.size();
  // Progress in requests x runs, reported every kProgressStride requests of a run.
  constexpr int64_t kProgressStride = 4096;
  const int64_t progress_total = trace->num_requests() * static_cast<int64_t>(simulators.size());
  std::mutex progress_mutex;
  int64_t progress_done = 0;
  auto report = [&](int64_t requests) {
    if (!options.progress || requests == 0) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    progress_done += requests;
    options.progress(progress_done, progress_total);
  };
  ParallelFor(ResolveThreadCount(options.num_threads), simulators.size(), [&](size_t i, int) {
    if (dense) simulators[i]->UseDenseIds(&trace->distinct_blocks);
    int64_t unreported = 0;
    for (int64_t r = 0; r < trace->num_requests(); ++r) {
      simulators[i]->ProcessRequest(trace->View(r));
      if (++unreported == kProgressStride) {
        report(unreported);
        unreported = 0;
      }
    }
    report(unreported);
  });
  return Collect(specs, simulators);
}

absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplays(TraceReader* reader, const std::vector<CacheRunSpec>& specs,
                                                            const CacheReplayOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateReplayOptions(options));
  bool oracle = false;
  for (const CacheRunSpec& spec : specs) oracle |= PolicyNeedsOracle(spec.policy);
  if (oracle) {
    KVSIM_ASSIGN_OR_RETURN(CompiledTrace trace, CompileTrace(reader, options));
    return RunCacheReplaysOnTrace(&trace, specs, options);
  }
  // Streaming: the requests are read in chunks of kStreamChunk, and the simulators replay each chunk on
  // options.num_threads threads (each simulator sees every request in trace order).
  KVSIM_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<CacheSimulator>> simulators, CreateSimulators(specs, options));
  constexpr size_t kStreamChunk = 4096;
  std::vector<Request> chunk(kStreamChunk);
  std::vector<std::vector<int32_t>> tokens(kStreamChunk);
  std::vector<RequestView> views(kStreamChunk);
  const int threads = ResolveThreadCount(options.num_threads);
  int64_t num_requests = 0;
  bool more = true;
  while (more) {
    size_t n = 0;
    while (n < kStreamChunk && (options.max_requests == 0 || num_requests < options.max_requests)) {
      Request& request = chunk[n];
      if (!reader->Next(&request)) {
        more = false;
        break;
      }
      ++num_requests;
      KVSIM_RETURN_IF_ERROR(PrepareRequestForReplay(options, &request));
      BlockTokens(request, &tokens[n]);
      RequestView& view = views[n];
      view = RequestView();
      view.request_id = request.request_id;
      view.arrival_ns = request.arrival_ns;
      view.session_id = request.session_id;
      view.block_tokens = request.block_tokens;
      view.blocks = request.block_hashes.data();
      view.tokens = tokens[n].data();
      view.num_blocks = static_cast<int64_t>(request.block_hashes.size());
      view.end = MakeRequestEndInfo(request, request.arrival_ns);
      ++n;
    }
    if (n < kStreamChunk) more = false;  // the reader or max_requests ended the stream
    ParallelFor(threads, simulators.size(), [&](size_t i, int) {
      for (size_t r = 0; r < n; ++r) simulators[i]->ProcessRequest(views[r]);
    });
    options.ReportProgress(num_requests, options.max_requests);
  }
  KVSIM_RETURN_IF_ERROR(reader->status());
  return Collect(specs, simulators);
}

}  // namespace kvsim
