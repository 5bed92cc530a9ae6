// File: policies/eviction_policy.h
//
// EvictionPolicy: the decision of which cached block to evict, separate from the cache that holds the
// blocks (gem5's replacement-policy split). The cache (sim/block manager, or the cache-replay loop) owns
// the blocks, pins, reference counts and tiers; it tells the policy what happened to each block and asks
// it for a victim. A policy only decides: it never mutates simulator state.
//
// Call protocol, for one cache:
//   OnMiss(b)        optional: b missed and will be inserted; the evictions that make room for it follow,
//                    then OnInsert(b). Cache replay calls it; the serving simulator does not (it makes room
//                    for a batch of blocks at once). Policies whose victim depends on the incoming block
//                    (ARC's REPLACE) use it.
//   OnInsert(b)      b became resident (after a miss, or a reload from a lower tier).
//   OnAccess(b)      resident b was used again (a hit).
//   OnRemove(b)      b left this cache (evicted, or freed by its owner). Never called for a b not inserted.
//   SelectVictim()   asked when the cache is full: returns a resident block for which `evictable(b)` is true
//                    (blocks of running requests are pinned and not evictable). The cache evicts it and then
//                    calls OnRemove(victim). SelectVictim is the base class's: it asks the policy's own
//                    ChooseVictim and checks the answer, so no policy repeats those checks.
//                    After a victim, EvictionPending() true asks the cache for another victim before the
//                    insert even though it has room (S3-FIFO's eviction step can evict two blocks).
// Optional, before the first callback: Configure(config) (per-policy parameters) and SetCapacity(n) (the
// cache's size in blocks; policies sized by it, such as ARC, S3-FIFO and 2Q, need it). Optional at the end
// of each request: OnRequestEnd(end) (the TTL-pinning wrapper needs it; others ignore it).
// Each callback carries an AccessInfo with what the cache knows about the access. Policies use what they
// need (Belady the next use, cost-aware policies the restore cost) and ignore the rest.
//
// Registration: one line at the bottom of the policy's .cc, its cc_library with alwayslink = True:
//   KVSIM_REGISTER_EVICTION_POLICY("lru", LruPolicy);
// Names are stable; new semantics get a new name. CreateEvictionPolicy("nope") is InvalidArgument listing
// the known names.
//
// Thread-safety: a policy instance serves one cache on one thread.
#ifndef KVSIM_POLICIES_EVICTION_POLICY_H_
#define KVSIM_POLICIES_EVICTION_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "proto/config.pb.h"
#include "traces/request.h"
#include "util/registry.h"

namespace kvsim {

using BlockId = uint64_t;

// 16 bytes of a dense-id policy's state for one block, kept in the cache's own record of the block
// (EvictionPolicy::SetDenseIdStorage), so that both share a cache line. All zero means the block is not
// in the policy; what the words hold otherwise is the policy's (BlockLists: list links, list, mark).
struct PolicySlot {
  int32_t words[4];
};

// The end of a request's use of its blocks (the serving simulator: the request finished; cache replay: its
// last block was accessed), for policies that act per request (TTL pinning).
struct RequestEndInfo {
  uint64_t request_id = 0;
  int64_t session_id = -1;         // -1 = none
  int64_t time_ns = 0;             // when it ended (cache replay: the request's arrival time)
  bool ends_in_tool_call = false;  // the request's output is a tool call; the session resumes after it
  std::string tool_name;           // empty if unknown
  // How long the tool actually ran, known only once it returns: at time_ns + tool_duration_ns. Policies
  // must not use it before then (the TTL wrapper adds it to its history at that time). -1 = unknown.
  int64_t tool_duration_ns = -1;
};

// The end record of `request` at `time_ns`, the one both caches pass to policies: its session, and, when
// the request ends in tool calls, the first call's tool name and the sum of all its calls' durations (the
// calls run one after another before the session's next request, so the session is away that long).
RequestEndInfo MakeRequestEndInfo(const Request& request, int64_t time_ns);

// What the cache knows about one access, insert or removal of a block.
struct AccessInfo {
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  int64_t clock = 0;            // logical time: the index of this access in the cache's access stream
  int64_t time_ns = 0;          // simulated time (cache-replay mode: the request's arrival time)
  uint64_t request_id = 0;      // request that made the access
  int64_t session_id = -1;      // its session, -1 = none
  int32_t block_index = 0;      // the block's position in the request's prompt (0 = first block)
  int64_t position_tokens = 0;  // tokens before this block in the prompt (block_index x block_tokens)
  int64_t size_bytes = 0;       // the block's KV bytes (0 in cache-replay mode: all blocks equal)
  // Estimated time to restore this block if evicted (recompute at its position, or reload, whichever
  // is cheaper), from the cost model; 0 = unknown or uniform.
  int64_t restore_ns = 0;
  // Oracle knowledge (cache replay with a pre-pass, or a simulator with future knowledge): the clock of
  // this block's next access, kNever if it is never used again. Unset (-1) when not known.
  int64_t next_access_clock = -1;
  BlockId parent = 0;  // previous block of the same prompt; meaningful only if has_parent
  bool has_parent = false;
};

// The filter a victim must pass: false for blocks the cache may not evict now (pinned).
using VictimFilter = absl::FunctionRef<bool(BlockId)>;

// Residency as a policy sees it: inserted and not yet removed. A policy that keeps an index of its
// resident blocks exposes it through EvictionPolicy::residency(), and cache replay then uses it instead of
// an index of its own (one hash lookup per access instead of two). The serving simulator keeps its own.
class ResidencyIndex {
 public:
  virtual ~ResidencyIndex() = default;
  virtual bool IsResident(BlockId block) const = 0;
  // A hint that IsResident(block) will be asked soon: the index may start loading the block's entry into
  // the CPU cache now. Never changes a decision. Default: nothing.
  virtual void Prefetch(BlockId block) const {}
};

// Optional side of a policy: its victim search restricted, in O(log n) per step, to a subset of its blocks
// that the caller marks (leaf-first marks the prefix-tree leaves). Policies built on BlockLists offer it
// through its eligible view.
class EligibleSubset {
 public:
  virtual ~EligibleSubset() = default;
  // Starts keeping the subset; every block is eligible when inserted. REQUIRES: before the first OnInsert.
  virtual void EnableEligibility() = 0;
  // Marks resident `block` eligible or not; ignored for a block the policy does not hold as resident.
  virtual void SetEligible(BlockId block, bool eligible) = 0;
  // Exactly what TrySelectVictim(b -> eligible(b) && evictable(b)) returns, with the same changes to the
  // policy's state, but visiting only eligible blocks. `evictable` may include the eligibility test.
  virtual absl::optional<BlockId> ChooseEligibleVictim(VictimFilter evictable) = 0;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  // The registered name.
  virtual absl::string_view Name() const = 0;

  // `block` missed and will be inserted after the evictions that make room for it (see the protocol
  // above; optional, so a policy must also work when it is never called). Default: ignored.
  virtual void OnMiss(BlockId block, const AccessInfo& info) {}
  virtual void OnInsert(BlockId block, const AccessInfo& info) = 0;
  virtual void OnAccess(BlockId block, const AccessInfo& info) = 0;
  virtual void OnRemove(BlockId block) = 0;

  // Returns a resident block with evictable(block) true. REQUIRES: at least one exists (checked).
  BlockId SelectVictim(VictimFilter evictable);

  // Like SelectVictim, but absl::nullopt when no resident block is evictable. Wrappers use it to try a
  // stricter filter first (TTL pins). The choice is the policy's ChooseVictim; this checks that it passes
  // the filter.
  absl::optional<BlockId> TrySelectVictim(VictimFilter evictable);

  // Per-policy parameters (the params oneof of EvictionPolicyConfig; the wrapper options are applied by
  // CreateEvictionPolicyFromConfig, not here). REQUIRES: called at most once, before any other callback.
  // InvalidArgument naming the field when a parameter is out of range or belongs to another policy.
  // Default: accepts a config with no params set.
  virtual absl::Status Configure(const proto::EvictionPolicyConfig& config);

  // Dense ids: every BlockId from now on (blocks and parents) is < num_ids, so the policy may index arrays
  // by id (cache replay over a compiled trace). REQUIRES: before the first OnInsert. Default: ignored.
  virtual void SetDenseIds(int64_t num_ids) {}

  // SetDenseIds(num_ids), with the policy's per-block state in the cache's memory if the policy can keep
  // it there: block b's is the PolicySlot at (char*)slots + b * stride_bytes (a power of two >= 16). The
  // cache zero-fills a block's slot before it first inserts the block, and neither reads nor writes it
  // while the block is in the policy; the memory stays valid while the policy lives. Returns true if the
  // policy keeps its state there (then its residency() needs no prefetch beside the cache's record),
  // false if it ignored `slots` (the default: SetDenseIds alone). REQUIRES: as SetDenseIds.
  virtual bool SetDenseIdStorage(int64_t num_ids, PolicySlot* slots, size_t stride_bytes) {
    SetDenseIds(num_ids);
    return false;
  }

  // True when the policy keeps nothing about a block once OnRemove(block) returns, its choices depend only
  // on the order of the callbacks (not on BlockId values) and it reads no AccessInfo field. A cache may
  // then number its blocks by its own slots (SetDenseIds), give a removed block's number to another block,
  // and pass a default AccessInfo: the victims are the same as with the blocks' hashes. LRU, FIFO, CLOCK
  // and SIEVE; not ARC, 2Q or S3-FIFO (their ghost lists remember removed blocks), nor policies ordered by
  // anything an AccessInfo carries, nor wrappers. Default: false.
  virtual bool AcceptsSlotIds() const { return false; }

  // The cache's capacity in blocks, > 0. REQUIRES: before the first OnInsert. Policies that size their
  // queues from it (ARC, S3-FIFO, 2Q, asym's default half-life) fall back to the number of resident
  // blocks at the first SelectVictim call when it is never given. Default: ignored.
  virtual void SetCapacity(int64_t num_blocks) {}

  // The request that made the latest accesses is done with its blocks. Default: ignored.
  virtual void OnRequestEnd(const RequestEndInfo& end) {}

  // Admission (cache-replay mode only; the serving simulator must hold every block of a running request):
  // false = do not insert `block` at all, leaving the cache as it is (Belady bypasses a block whose next
  // use is later than every resident block's). Called on a miss with a full cache. Default: admit.
  virtual bool ShouldAdmit(BlockId block, const AccessInfo& info) { return true; }

  // The policy's index of resident blocks, or nullptr if it keeps none (the default). Owned by the policy.
  virtual const ResidencyIndex* residency() const { return nullptr; }

  // True when the policy's rule evicts more than one block for the current miss and the next victim is
  // still to come: the cache (cache replay) then calls SelectVictim again before OnInsert, even with room.
  // A cache that never asks simply evicts less (the next SelectVictim continues the step). Default: false.
  virtual bool EvictionPending() const { return false; }

  // The policy's restricted victim search, or nullptr if it has none (the default). Owned by the policy.
  virtual EligibleSubset* eligible_subset() { return nullptr; }

  // The block the next SelectVictim(any block) would most likely return, so that a cache can prefetch
  // what evicting it reads; a hint only (the answer may change before then). Default: absl::nullopt.
  virtual absl::optional<BlockId> LikelyVictim() const { return absl::nullopt; }

 protected:
  // The policy's own choice: a resident block with evictable(block) true, or absl::nullopt if none is.
  virtual absl::optional<BlockId> ChooseVictim(VictimFilter evictable) = 0;
};

// A policy that wraps another and forwards every callback to it; wrappers (leaf-first, TTL pinning)
// derive from it and override what they change.
class ForwardingPolicy : public EvictionPolicy {
 public:
  // REQUIRES: inner != nullptr.
  explicit ForwardingPolicy(std::unique_ptr<EvictionPolicy> inner);

  void OnMiss(BlockId block, const AccessInfo& info) override { inner_->OnMiss(block, info); }
  void OnInsert(BlockId block, const AccessInfo& info) override { inner_->OnInsert(block, info); }
  void OnAccess(BlockId block, const AccessInfo& info) override { inner_->OnAccess(block, info); }
  void OnRemove(BlockId block) override { inner_->OnRemove(block); }
  absl::Status Configure(const proto::EvictionPolicyConfig& config) override { return inner_->Configure(config); }
  void SetCapacity(int64_t num_blocks) override { inner_->SetCapacity(num_blocks); }
  void SetDenseIds(int64_t num_ids) override { inner_->SetDenseIds(num_ids); }
  bool SetDenseIdStorage(int64_t num_ids, PolicySlot* slots, size_t stride_bytes) override {
    return inner_->SetDenseIdStorage(num_ids, slots, stride_bytes);
  }
  void OnRequestEnd(const RequestEndInfo& end) override { inner_->OnRequestEnd(end); }
  bool ShouldAdmit(BlockId block, const AccessInfo& info) override { return inner_->ShouldAdmit(block, info); }
  const ResidencyIndex* residency() const override { return inner_->residency(); }
  bool EvictionPending() const override { return inner_->EvictionPending(); }

 protected:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override { return inner_->TrySelectVictim(evictable); }
  EvictionPolicy& inner() { return *inner_; }
  const EvictionPolicy& inner() const { return *inner_; }

 private:
  std::unique_ptr<EvictionPolicy> inner_;
};

using EvictionPolicyFactory = std::function<std::unique_ptr<EvictionPolicy>()>;

// The registry of eviction policies by name (util/registry.h); KVSIM_REGISTER_EVICTION_POLICY adds to it.
Registry<EvictionPolicyFactory>& EvictionPolicyRegistry();

// A new instance of the named policy; InvalidArgument listing the known names if unknown.
absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicy(absl::string_view name);

// Registered names, sorted.
std::vector<std::string> EvictionPolicyNames();

// Default-constructs the policy `name` and calls Configure(config) (config.name is ignored); used by
// policy factories such as the wrappers. InvalidArgument if unknown or the parameters are rejected.
absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateConfiguredEvictionPolicy(
    absl::string_view name, const proto::EvictionPolicyConfig& config);

}  // namespace kvsim

#define KVSIM_REGISTER_EVICTION_POLICY(name, Class) \
  KVSIM_REGISTER(::kvsim::EvictionPolicyRegistry(), name, [] { return std::make_unique<Class>(); })

#endif  // KVSIM_POLICIES_EVICTION_POLICY_H_
