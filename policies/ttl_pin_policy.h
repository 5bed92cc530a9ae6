// File: policies/ttl_pin_policy.h
//
// TtlPinPolicy: a wrapper that pins an agent session's blocks while its tool runs, after Continuum
// (Li et al., "Continuum: Efficient and Robust Multi-Turn LLM Agent Scheduling with KV Cache
// Time-to-Live", arXiv 2511.02230). Rule implemented:
//   When a request of a session (session_id >= 0) ends in a tool call to tool f at time t
//   (OnRequestEnd), the blocks that request inserted or hit and that are still resident are pinned until
//   t + tau*, where
//     tau* = argmax over tau in {0} U {observed durations of f} of  P_f(tau) x (T x eta + C) - tau,
//   P_f = the empirical CDF of f's observed durations (fallback: all tools' durations; with no
//   observation at all, tau* = 0: no pin), T = params.queueing_delay_ns, eta = params.queueing_weight,
//   C = the request's reload cost = sum over its blocks of AccessInfo::restore_ns (a block with 0 counts
//   params.default_restore_ns), tau* capped at params.max_ttl_ns; ties go to the smaller tau.
//   A pinned block is not offered to the inner policy while now < its expiry, where now is the latest
//   time_ns seen; a pin ends early when a later request of the same session accesses the block.
// Simplifications (documented against the paper): T and eta are fixed parameters, not measured online
// (Continuum measures the mean queueing delay and eta = -Corr(k, N - k)); a duration enters the history
// only when that tool call has returned (at t + duration, as the trace records it), so no decision uses
// the future; pins are soft: when every evictable block is pinned, the inner policy chooses among all of
// them (Continuum would instead hold the request in the queue); no scheduling priority changes.
// Under LRU a pin rarely changes a victim: the pinned blocks are the ones just released, the most recently
// used, and LRU reaches them within tau* only when the replica evicts more than its older resident blocks
// in that window (README, AsymCache study).
//
// Example:
//   proto::TtlPinParams params;  // defaults: 1 ms per block, no queueing term, 600 s cap
//   auto policy = std::make_unique<TtlPinPolicy>(std::make_unique<LruPolicy>(), params);
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_TTL_PIN_POLICY_H_
#define KVSIM_POLICIES_TTL_PIN_POLICY_H_

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "policies/eviction_policy.h"
#include "proto/config.pb.h"

namespace kvsim {

class TtlPinPolicy final : public ForwardingPolicy {
 public:
  // REQUIRES: inner != nullptr; params valid (ValidateTtlPinParams).
  TtlPinPolicy(std::unique_ptr<EvictionPolicy> inner, const proto::TtlPinParams& params);

  // InvalidArgument naming the field if a parameter is negative.
  static absl::Status ValidateTtlPinParams(const proto::TtlPinParams& params);

  // tau* for `sorted_durations_ns` (ascending) and a benefit of `benefit_ns` (T x eta + C); 0 if empty.
  static int64_t ChooseTtl(const std::vector<int64_t>& sorted_durations_ns, double benefit_ns, int64_t max_ttl_ns);

  absl::string_view Name() const override { return name_; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  void OnRequestEnd(const RequestEndInfo& end) override;

  // Whether `block` is pinned at the current time (tests).
  bool IsPinned(BlockId block) const;

 protected:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;

 private:
  struct Pin {
    int64_t until_ns;
    int64_t session_id;
  };
  struct PendingDuration {
    int64_t available_ns;
    int64_t seq;
    std::string tool;
    int64_t duration_ns;
    bool operator>(const PendingDuration& o) const {
      return std::tie(available_ns, seq) > std::tie(o.available_ns, o.seq);
    }
  };

  void Track(BlockId block, const AccessInfo& info);
  void FoldReturnedDurations();
  static void InsertSorted(std::vector<int64_t>* sorted, int64_t value);

  proto::TtlPinParams params_;
  std::string name_;
  int64_t now_ns_ = 0;
  absl::flat_hash_set<BlockId> resident_;
  absl::flat_hash_map<BlockId, Pin> pins_;
  // Blocks used by each session request still running: (block, restore_ns).
  absl::flat_hash_map<uint64_t, std::vector<std::pair<BlockId, int64_t>>> request_blocks_;
  absl::flat_hash_map<std::string, std::vector<int64_t>> durations_by_tool_;  // sorted
  std::vector<int64_t> all_durations_;                                        // sorted
  std::priority_queue<PendingDuration, std::vector<PendingDuration>, std::greater<PendingDuration>> pending_;
  int64_t pending_seq_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TTL_PIN_POLICY_H_
