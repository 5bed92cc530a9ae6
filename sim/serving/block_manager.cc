#include "sim/serving/block_manager.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "config/kv_format.h"
#include "policies/policy_factory.h"
#include "util/check.h"
#include "util/prefetch.h"
#include "util/status_macros.h"

// Data and invariants (true between calls):
// - entries_ is a slab of Entry; the hash of every cached block, in any tier, maps to its slot, and every
//   other slot is on free_entries_. The map is index_, or with a shared GpuBlockDirectory the directory
//   for the blocks this replica owns there (the first to register a block) and index_ for the rest
//   (FindEntry). An
//   entry's tier is kTransit only inside one call, while it moves between tiers.
// - GPU: used_blocks == cached_blocks + private_blocks_; gpu_evictable_ counts the GPU entries with
//   refcount 0, and exactly those are in the GPU policy. First lower tier: used_blocks == cached_blocks +
//   swap_blocks_. Every lower-tier entry is in its tier's policy. AddUsed checks 0 <= used <= capacity.
// - A request's block_entries[k] is an entry it holds one reference to, or kPrivateBlock.
// Order in Admit: classify every prompt block (changing only scratch and the potentials), test the room
// from counters, then pin the GPU hits and take reloads out of their tiers *before* MakeGpuRoom, so
// neither can be a victim; reloads land on the GPU pinned. A refused admission restores the potentials it
// recorded, so they are measured at the admission that succeeds. Release unpins the last block first.
// Why it is fast:
// - The admission test is O(1) (free + gpu_evictable_ - unpinned hits), before anything is touched.
// - SelectVictim's predicate accepts every block (AnyBlock): pinned blocks are not in the GPU policy, so
//   no scan skips them. Slots are reused from free_entries_: no allocation per block once warm.
// - Session hints: a request of a session is classified at the entries its session's previous request
//   held here (kept at Release), each checked against its block's hash; only the blocks without a valid
//   hint are looked up in index_. A multi-turn prompt repeats the previous turn's, so most of its blocks
//   cost one read of their entry (which pass 2 reads anyway) instead of a lookup in the larger index_.
// - Admit does one hash lookup per prompt block (found_entries_ keeps the slot for the second pass);
//   kinds_ and found_entries_ are scratch reused across calls. unique_blocks requests skip the lookups.
// - RestoreNs is memoised per block index, so the cost model is asked once per position. Grow's common
//   case (no new block) is inline. BuildComputeRuns merges adjacent computed blocks itself and makes one
//   run outright when nothing is reused.
// - Transfers only add bytes per tier; TakeTransferNs prices them once per tier per iteration.
// - Slot ids (policies that AcceptsSlotIds): the GPU policy indexes an array by entry slot, so the pin and
//   unpin of every reused block and each victim cost no hash lookup there or here, and an unpin builds no
//   AccessInfo (no RestoreNs). Lower tiers keep the hashes.
// - With a shared GpuBlockDirectory, the router does not probe every replica's index per arrival, and the
//   directory is the index of the blocks this replica owns there (most blocks live on one replica): a
//   block's publish, eviction and lookups read one slot of one table, where an index beside the
//   directory would cost two cache misses per block.
// - Per-block work is bound by memory latency (long prompts, tables larger than the caches): index_ is a
//   BlockHashMap (one cache line per lookup), and every walk over a run of blocks prefetches the lookups
//   kLookupAhead blocks ahead (ClassifyBlocks: the index, then the entries; Publish: the index and the
//   directory; Admit's pins and Release's unpins: the entries and the policy's slots), so their misses
//   overlap. Dropped GPU victims are taken from the policy first and then removed from the directory and
//   the index in the same order with those lookups prefetched (DropGpuVictims).

namespace kvsim {
namespace {

constexpr int32_t kTransit = -1;
// found_entries_ of an uncached block.
constexpr int32_t kNoEntry = -1;
// How many blocks ahead the hash lookups of a walk over a request's blocks are prefetched: enough to
// cover a memory access's latency with the work of the blocks in between.
constexpr int64_t kLookupAhead = 8;
// Session hints kept at least (blocks in all), whatever the GPU's capacity, and at most per GPU block
// (4 bytes a hint block). Generous: the sessions that wait for their next turn hold many more blocks than
// the GPU (most of them evicted meanwhile), and each time the hints pass the bound, all of them are
// forgotten and the next turn of every session looks up each of its blocks (measured on chat, 16
// replicas: twice the GPU's blocks left 41% of the prompt blocks to lookups, eight times 33%, the floor:
// the new and the evicted blocks).
constexpr int64_t kMinHintBlocks = int64_t{1} << 16;
constexpr int64_t kHintBlocksPerGpuBlock = 8;

// Every block a policy holds may be evicted: pinned GPU blocks are not in the GPU policy.
bool AnyBlock(BlockId) { return true; }

const char* TierName(const proto::TierConfig& tier) {
  return tier.kind() == proto::TIER_KIND_REMOTE ? "remote" : "host";
}

}  // namespace

absl::StatusOr<BlockManagerOptions> BlockManagerOptionsFromConfig(const proto::ExperimentConfig& config,
                                                                  int32_t block_tokens) {
  BlockManagerOptions options;
  KVSIM_ASSIGN_OR_RETURN(options.gpu_capacity_blocks, GpuCapacityBlocks(config, block_tokens));
  options.block_tokens = block_tokens;
  KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(config.model(), config.cost_model()));
  // Whole bytes per block (scales may make a token's share fractional).
  options.block_bytes = static_cast<int64_t>(std::ceil(KvBytesPerToken(config.model(), kv) * block_tokens));
  options.reuse_mode = config.cache().reuse_mode();
  options.restore_rule = config.cache().restore_rule();
  options.gpu_evict_action = config.cache().gpu_evict_action();
  options.lower_tiers.assign(config.cache().lower_tiers().begin(), config.cache().lower_tiers().end());
  options.policy = config.eviction();
  return options;
}

absl::StatusOr<std::unique_ptr<BlockManager>> BlockManager::Create(const BlockManagerOptions& options,
                                                                   const CostModel* cost_model) {
  if (options.gpu_capacity_blocks <= 0 || options.block_tokens <= 0 || options.block_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block manager: gpu_capacity_blocks, block_tokens and block_bytes must be > 0, got ",
                     options.gpu_capacity_blocks, ", ", options.block_tokens, ", ", options.block_bytes));
  }
  std::unique_ptr<BlockManager> manager(new BlockManager(options, cost_model));
  int64_t total_blocks = 0;
  for (Tier& tier : manager->tiers_) {
    KVSIM_ASSIGN_OR_RETURN(tier.policy, CreateServingEvictionPolicy(options.policy));
    if (tier.capacity_blocks > 0) tier.policy->SetCapacity(tier.capacity_blocks);
    total_blocks += tier.capacity_blocks;
  }
  // Entries are made only by Publish, when every entry is in a tier: at most total_blocks are alive, and
  // the slab reuses freed slots, so every slot is < total_blocks.
  manager->max_entries_ = total_blocks;
  // Reserved, not touched: the slab never moves as it grows (a copy of it and the old one's pages at
  // each doubling), and its pages are mapped only as entries are made. Capped like BlockLists::Reserve.
  manager->entries_.reserve(static_cast<size_t>(std::min<int64_t>(total_blocks, int64_t{1} << 24)));
  Tier& gpu = manager->tiers_[0];
  if (options.allow_slot_ids && gpu.policy->AcceptsSlotIds() && total_blocks <= kMaxSlotIds) {
    // The policy's slots in the entries: the slab's capacity covers every slot id, so it never moves.
    std::vector<Entry>& entries = manager->entries_;
    KVSIM_CHECK(entries.capacity() >= static_cast<size_t>(total_blocks));
    entries.emplace_back();
    Entry* slab = entries.data();
    entries.pop_back();
    const bool in_entries = gpu.policy->SetDenseIdStorage(total_blocks, &slab->gpu_policy_slot, sizeof(Entry));
    manager->gpu_slot_ids_ = true;
    manager->gpu_residency_ = in_entries ? nullptr : gpu.policy->residency();
  }
  return manager;
}

BlockManager::BlockManager(const BlockManagerOptions& options, const CostModel* cost_model)
    : block_tokens_(options.block_tokens),
      block_bytes_(options.block_bytes),
      reuse_mode_(options.reuse_mode),
      restore_rule_(options.restore_rule),
      cost_model_(cost_model) {
  tiers_.resize(1 + options.lower_tiers.size());
  stats_.resize(tiers_.size());
  tiers_[0].capacity_blocks = options.gpu_capacity_blocks;
  max_hint_blocks_ = std::max<int64_t>(kMinHintBlocks, kHintBlocksPerGpuBlock * options.gpu_capacity_blocks);
  tiers_[0].evict_action = options.lower_tiers.empty() ? proto::EVICT_ACTION_DROP : options.gpu_evict_action;
  stats_[0].name = "gpu";
  for (size_t i = 0; i < options.lower_tiers.size(); ++i) {
    Tier& tier = tiers_[i + 1];
    tier.config = options.lower_tiers[i];
    tier.capacity_blocks = tier.config.capacity_bytes() / block_bytes_;
    const bool last = i + 1 == options.lower_tiers.size();
    tier.evict_action = last ? proto::EVICT_ACTION_DROP : tier.config.evict_action();
    stats_[i + 1].name = TierName(tier.config);
  }
  for (size_t i = 0; i < tiers_.size(); ++i) stats_[i].capacity_blocks = tiers_[i].capacity_blocks;
}

int64_t BlockManager::BlockTokensAt(const Request& request, int64_t k) const {
  if (!request.block_token_counts.empty()) return request.block_token_counts[k];
  return std::min<int64_t>(block_tokens_, request.input_tokens - k * block_tokens_);
}

int64_t BlockManager::StartTokens(const RequestState& state, int64_t k) const {
  if (!state.block_start_tokens.empty()) return state.block_start_tokens[k];
  return std::min<int64_t>(k * block_tokens_, state.request.input_tokens);
}

int64_t BlockManager::BlocksBefore(const RequestState& state, int64_t tokens) const {
  if (state.block_start_tokens.empty()) return NumBlocks(tokens, block_tokens_);
  const auto& starts = state.block_start_tokens;
  return std::lower_bound(starts.begin(), starts.end() - 1, tokens) - starts.begin();
}

AccessInfo BlockManager::Info(const RequestState* state, int64_t k, SimTime now_ns) {
  AccessInfo info;
  info.clock = access_clock_++;
  info.time_ns = now_ns;
  info.size_bytes = block_bytes_;
  if (state != nullptr) {
    info.request_id = state->request.request_id;
    info.session_id = state->request.session_id;
    info.block_index = static_cast<int32_t>(k);
    info.position_tokens = StartTokens(*state, k);
    if (k > 0) {
      info.parent = state->request.block_hashes[k - 1];
      info.has_parent = true;
    }
  }
  return info;
}

void BlockManager::AddUsed(int32_t tier, int64_t blocks) {
  tiers_[tier].used_blocks += blocks;
  KVSIM_CHECK(tiers_[tier].used_blocks >= 0 && tiers_[tier].used_blocks <= tiers_[tier].capacity_blocks)
      << "tier " << tier << " used " << tiers_[tier].used_blocks << " of " << tiers_[tier].capacity_blocks;
  TierStats& stats = stats_[tier];
  stats.used_blocks = tiers_[tier].used_blocks;
  stats.max_used_blocks = std::max(stats.max_used_blocks, stats.used_blocks);
}

bool BlockManager::ShouldReload(int32_t tier, int64_t position_tokens, int64_t tokens) {
  if (restore_rule_ == proto::RESTORE_RULE_RELOAD || cost_model_ == nullptr) return true;
  if (restore_rule_ == proto::RESTORE_RULE_RECOMPUTE) return false;
  const int64_t reload_ns = cost_model_->EstimateTransferTimeNs(block_bytes_, tiers_[tier].config);
  auto recompute_ns = cost_model_->RecomputeTimeNs(position_tokens, tokens);
  return !recompute_ns.ok() || reload_ns <= *recompute_ns;
}

int64_t BlockManager::BlocksToComplete(const Request& request) const {
  return NumBlocks(request.input_tokens, block_tokens_) +
         NumBlocks(std::max<int64_t>(0, request.output_tokens), block_tokens_);
}

int64_t BlockManager::BlocksToComplete(const RequestState& state) const {
  if (state.kv.block_factor == 1) return BlocksToComplete(state.request);
  return PromptBlocks(state.request, block_tokens_) +
         NumBlocks(std::max<int64_t>(0, state.request.output_tokens), TailTokens(state));
}

void BlockManager::CutToBudget(RequestState* state) {
  KVSIM_CHECK(state->unique_blocks && state->private_blocks == static_cast<int64_t>(state->block_entries.size()))
      << "request " << state->request.request_id << ": a budget cut needs every prompt block private";
  const int64_t input = state->request.input_tokens;
  const int64_t prompt = NumBlocks(KeptPromptTokens(state->kv, input), TailTokens(*state));
  const int64_t tail = NumBlocks(GrowKvTokens(state->kv, input, state->kv_tokens) - input, TailTokens(*state));
  const int64_t freed = std::max<int64_t>(0, state->private_blocks - prompt) + std::max<int64_t>(0, state->tail_blocks - tail);
  state->private_blocks = std::min(state->private_blocks, prompt);
  state->tail_blocks = std::min(state->tail_blocks, tail);
  private_blocks_ -= freed;
  AddUsed(0, -freed);
}

void BlockManager::Pin(int32_t entry) {
  Entry& e = entries_[entry];
  KVSIM_CHECK(e.tier == 0) << "pin of a block not on the GPU";
  if (e.refcount++ == 0) {
    --gpu_evictable_;
    tiers_[0].policy->OnRemove(GpuPolicyId(entry));
  }
}

void BlockManager::Unpin(int32_t entry, const RequestState* state, int64_t k, SimTime now_ns) {
  Entry& e = entries_[entry];
  KVSIM_CHECK(e.refcount > 0 && e.tier == 0) << "unpin of block " << e.hash;
  if (--e.refcount == 0) {
    ++gpu_evictable_;
    if (gpu_slot_ids_) {  // the policy reads no AccessInfo
      ++access_clock_;
      tiers_[0].policy->OnInsert(static_cast<BlockId>(entry), AccessInfo());
      return;
    }
    AccessInfo info = Info(state, k, now_ns);
    info.restore_ns = RestoreNs(state, k);
    tiers_[0].policy->OnInsert(e.hash, info);
  }
}

int64_t BlockManager::RestoreNs(const RequestState* state, int64_t k) {
  if (cost_model_ == nullptr) return 0;
  if (state != nullptr && !state->block_start_tokens.empty()) {  // variable blocks: not memoised by index
    auto recompute = cost_model_->RecomputeTimeNs(StartTokens(*state, k), RecomputeTokensAt(state->request, k));
    int64_t ns = recompute.ok() ? *recompute : 0;
    if (tiers_.size() > 1 && tiers_[0].evict_action == proto::EVICT_ACTION_DEMOTE) {
      ns = std::min(ns, cost_model_->EstimateTransferTimeNs(block_bytes_, tiers_[1].config));
    }
    return ns;
  }
  if (k >= static_cast<int64_t>(restore_ns_.size())) restore_ns_.resize(k + 1, -1);
  if (restore_ns_[k] < 0) {
    auto recompute = cost_model_->RecomputeTimeNs(k * block_tokens_, block_tokens_);
    int64_t ns = recompute.ok() ? *recompute : 0;
    if (tiers_.size() > 1 && tiers_[0].evict_action == proto::EVICT_ACTION_DEMOTE) {
      ns = std::min(ns, cost_model_->EstimateTransferTimeNs(block_bytes_, tiers_[1].config));
    }
    restore_ns_[k] = ns;
  }
  return restore_ns_[k];
}

int32_t BlockManager::NewEntry(uint64_t hash) {
  const int32_t index = NextEntry();
  if (!free_entries_.empty()) {
    free_entries_.pop_back();
  } else {
    entries_.emplace_back();
  }
  entries_[index] = Entry{hash, 0, kTransit};
  return index;
}

int32_t BlockManager::FindEntry(uint64_t hash) const {
  if (directory_ != nullptr) {
    const int32_t owned = directory_->Entry(hash, directory_replica_);
    if (owned != GpuBlockDirectory::kElsewhere) return owned;  // kNoEntry is kNoEntry here too
  }
  const int32_t* found = index_.Find(hash);
  return found != nullptr ? *found : kNoEntry;
}

void BlockManager::PrefetchEntry(uint64_t hash) const {
  // With a directory, index_ holds the blocks another replica owns (those a session that moved replicas
  // computed again): FindEntry reads it after the directory's slot, so both are loaded at once.
  if (directory_ != nullptr) directory_->Prefetch(hash);
  if (directory_ == nullptr || !index_.empty()) index_.Prefetch(hash);
}

void BlockManager::Drop(int32_t entry, bool on_gpu) {
  const uint64_t hash = entries_[entry].hash;
  bool owned = false;  // the directory kept the entry
  if (directory_ != nullptr) {
    owned = on_gpu ? directory_->RemoveAndUnregister(hash, directory_replica_)
                   : directory_->Unregister(hash, directory_replica_);
  }
  if (!owned) index_.Erase(hash);
  entries_[entry] = Entry{0, 0, kTransit};
  free_entries_.push_back(entry);
}

// Puts an entry that is in no tier into lower tier `tier`, evicting there first if needed. Drops it if
// the tier has no room (all swap space).
void BlockManager::PlaceIn(int32_t entry, int32_t tier, SimTime now_ns) {
  Entry& e = entries_[entry];
  KVSIM_CHECK(e.tier == kTransit && tier > 0);
  if (!MakeLowerRoom(tier, 1, now_ns)) {
    ++stats_[tier - 1].dropped_blocks;
    Drop(entry);
    return;
  }
  entries_[entry].tier = tier;
  AddUsed(tier, 1);
  ++tiers_[tier].cached_blocks;
  stats_[tier].cached_blocks = tiers_[tier].cached_blocks;
  tiers_[tier].policy->OnInsert(entries_[entry].hash, Info(nullptr, 0, now_ns));
}

void BlockManager::MakeGpuRoom(int64_t blocks, SimTime now_ns) {
  Tier& gpu = tiers_[0];
  if (gpu.evict_action != proto::EVICT_ACTION_DEMOTE) {
    DropGpuVictims(blocks - (gpu.capacity_blocks - gpu.used_blocks));
    return;
  }
  while (gpu.capacity_blocks - gpu.used_blocks < blocks) {
    KVSIM_CHECK(gpu_evictable_ > 0) << "no evictable GPU block";
    const BlockId victim = gpu.policy->SelectVictim(AnyBlock);
    const int32_t entry = VictimEntry(victim);
    KVSIM_CHECK(entry >= 0 && entries_[entry].refcount == 0 && entries_[entry].tier == 0)
        << "policy " << gpu.policy->Name() << " chose a pinned or absent block";
    const uint64_t hash = entries_[entry].hash;
    gpu.policy->OnRemove(victim);
    if (directory_ != nullptr) directory_->Remove(hash, directory_replica_);
    AddUsed(0, -1);
    --gpu.cached_blocks;
    stats_[0].cached_blocks = gpu.cached_blocks;
    --gpu_evictable_;
    ++stats_[0].evicted_blocks;
    entries_[entry].tier = kTransit;
    PlaceIn(entry, 1, now_ns);  // demoted (dropping victims is DropGpuVictims)
    if (FindEntry(hash) != kNoEntry) {
      ++stats_[1].demoted_in_blocks;
      stats_[1].transfer_bytes += block_bytes_;
      tiers_[1].pending_offload_bytes += block_bytes_;
    }
  }
}

int32_t BlockManager::VictimEntry(BlockId victim) const {
  if (gpu_slot_ids_) return victim < entries_.size() ? static_cast<int32_t>(victim) : -1;
  return FindEntry(victim);
}

void BlockManager::DropGpuVictims(int64_t count) {
  if (count <= 0) return;
  Tier& gpu = tiers_[0];
  KVSIM_CHECK(count <= gpu_evictable_) << "no evictable GPU block";
  // Pass 1: the victims, in the policy's order (its choices do not depend on what happens to the blocks
  // after OnRemove), each entry prefetched.
  victims_.clear();
  for (int64_t i = 0; i < count; ++i) {
    const BlockId victim = gpu.policy->SelectVictim(AnyBlock);
    const int32_t entry = VictimEntry(victim);
    KVSIM_CHECK(entry >= 0) << "policy " << gpu.policy->Name() << " chose an absent block";
    gpu.policy->OnRemove(victim);
    victims_.push_back(entry);
    PrefetchForRead(&entries_[entry]);
  }
  // Pass 2: each victim leaves the directory and the index, in the same order; the lookups of the
  // victim kLookupAhead on are prefetched.
  auto prefetch = [&](int32_t entry) {
    const uint64_t hash = entries_[entry].hash;
    PrefetchEntry(hash);
  };
  for (int64_t i = 0; i < std::min<int64_t>(count, kLookupAhead); ++i) prefetch(victims_[i]);
  for (int64_t i = 0; i < count; ++i) {
    if (i + kLookupAhead < count) prefetch(victims_[i + kLookupAhead]);
    const int32_t entry = victims_[i];
    KVSIM_CHECK(entries_[entry].refcount == 0 && entries_[entry].tier == 0)
        << "policy " << gpu.policy->Name() << " chose a pinned or absent block";
    Drop(entry, /*on_gpu=*/true);
  }
  AddUsed(0, -count);
  gpu.cached_blocks -= count;
  stats_[0].cached_blocks = gpu.cached_blocks;
  gpu_evictable_ -= count;
  stats_[0].evicted_blocks += count;
  stats_[0].dropped_blocks += count;
  // The next eviction's directory or index lookup, started now: a growing decode evicts one block at a
  // time, and the next victim's entry is the line the policy's removal of this one just wrote.
  if (gpu_slot_ids_) {
    const absl::optional<BlockId> next = gpu.policy->LikelyVictim();
    const int32_t entry = next.has_value() ? VictimEntry(*next) : -1;
    if (entry >= 0) PrefetchEntry(entries_[entry].hash);
  }
}

bool BlockManager::MakeLowerRoom(int32_t tier, int64_t blocks, SimTime now_ns) {
  Tier& t = tiers_[tier];
  while (t.capacity_blocks - t.used_blocks < blocks) {
    if (t.cached_blocks == 0) return false;
    const BlockId victim = t.policy->SelectVictim(AnyBlock);
    const int32_t entry = FindEntry(victim);
    KVSIM_CHECK(entry != kNoEntry && entries_[entry].tier == tier)
        << "policy " << t.policy->Name() << " chose a block not in tier " << tier;
    t.policy->OnRemove(victim);
    AddUsed(tier, -1);
    --t.cached_blocks;
    stats_[tier].cached_blocks = t.cached_blocks;
    ++stats_[tier].evicted_blocks;
    entries_[entry].tier = kTransit;
    const bool demote =
        t.evict_action == proto::EVICT_ACTION_DEMOTE && tier + 1 < static_cast<int32_t>(tiers_.size());
    if (demote) {
      PlaceIn(entry, tier + 1, now_ns);
      if (FindEntry(victim) != kNoEntry) ++stats_[tier + 1].demoted_in_blocks;
    } else {
      ++stats_[tier].dropped_blocks;
      Drop(entry);
    }
  }
  return true;
}

BlockManager::BlockCounts BlockManager::ClassifyBlocks(RequestState* state, int64_t restored_blocks) {
  const Request& request = state->request;
  const int64_t num_blocks = PromptBlocks(request, block_tokens_);
  const bool record_potentials = !state->potentials_known;
  bool prefix_run = true;     // every block so far usable for prefix reuse
  bool potential_run = true;  // every block so far cached (potential prefix reuse)
  BlockCounts counts;
  kinds_.assign(num_blocks, kCompute);
  if (state->unique_blocks) {  // no other request has these blocks: all computed or restored
    std::fill(kinds_.begin(), kinds_.begin() + std::min(restored_blocks, num_blocks), kRestore);
    state->potentials_known = true;
    return counts;
  }
  // Pass 1: the entry of every block from restored_blocks on (kNoEntry if uncached). A block the
  // session's previous request held here is checked at the entry it held (its hint): if that entry
  // still holds the block, it is the one index_ maps the block to (a live entry is its hash's only one),
  // and the lookup is saved. The rest are looked up. Either read is prefetched kLookupAhead blocks
  // ahead, and each looked-up entry for pass 2; the reads are independent, so their latencies overlap.
  const int64_t first_looked_up = std::min(restored_blocks, num_blocks);
  found_entries_.resize(num_blocks);
  const int32_t* hint = nullptr;
  int64_t hinted = 0;  // blocks [0, hinted) have a hint
  if (request.session_id >= 0) {
    auto it = session_hints_.find(request.session_id);
    if (it != session_hints_.end()) {
      hint = it->second.data();
      hinted = std::min<int64_t>(num_blocks, static_cast<int64_t>(it->second.size()));
    }
  }
  auto prefetch = [&](int64_t k) {
    if (k < hinted && hint[k] != kPrivateBlock) {
      PrefetchForRead(&entries_[hint[k]]);
    } else {
      PrefetchEntry(request.block_hashes[k]);
    }
  };
  for (int64_t k = first_looked_up; k < std::min(num_blocks, first_looked_up + kLookupAhead); ++k) prefetch(k);
  for (int64_t k = first_looked_up; k < num_blocks; ++k) {
    if (k + kLookupAhead < num_blocks) prefetch(k + kLookupAhead);
    const uint64_t hash = request.block_hashes[k];
    if (k < hinted && hint[k] != kPrivateBlock) {
      const Entry& e = entries_[hint[k]];
      if (e.hash == hash && e.tier != kTransit) {  // free entries are kTransit
        found_entries_[k] = hint[k];
        continue;
      }
    }
    found_entries_[k] = FindEntry(hash);
    if (found_entries_[k] != kNoEntry) PrefetchForRead(&entries_[found_entries_[k]]);
  }
  // Pass 2: the kinds, in block order.
  std::fill(kinds_.begin(), kinds_.begin() + first_looked_up, kRestore);
  for (int64_t k = first_looked_up; k < num_blocks; ++k) {
    const int32_t entry = found_entries_[k];
    const bool present = entry != kNoEntry;
    if (record_potentials && present) {
      const int64_t tokens = BlockTokensAt(request, k);
      state->segment_potential_tokens += tokens;
      if (potential_run) {
        state->prefix_potential_tokens += tokens;
        ++state->prefix_potential_blocks;
      }
    }
    potential_run = potential_run && present;
    const bool usable = present && (reuse_mode_ == proto::REUSE_MODE_SEGMENT ||
                                    (reuse_mode_ == proto::REUSE_MODE_PREFIX && prefix_run));
    prefix_run = prefix_run && present;
    if (!usable) continue;
    const int32_t tier = entries_[entry].tier;
    if (tier == 0) {
      kinds_[k] = kGpuHit;
      ++counts.gpu_hits;
      if (entries_[entry].refcount == 0) ++counts.unpinned_hits;
    } else {
      kinds_[k] = ShouldReload(tier, StartTokens(*state, k), RecomputeTokensAt(request, k)) ? kReload : kRecomputeLower;
      ++counts.lower;
      counts.reloads += kinds_[k] == kReload;
    }
  }
  state->potentials_known = true;
  return counts;
}

bool BlockManager::Admit(RequestState* state, SimTime now_ns) {
  KVSIM_CHECK(state->block_entries.empty() && state->private_blocks == 0 && state->tail_blocks == 0);
  if (state->request.block_hashes.empty()) state->unique_blocks = true;  // nothing could reuse its blocks
  const Request& request = state->request;
  const int64_t num_blocks = PromptBlocks(request, block_tokens_);
  const int64_t input = request.input_tokens;
  if (!request.block_token_counts.empty() && state->block_start_tokens.size() != request.block_hashes.size() + 1) {
    state->block_start_tokens.resize(request.block_hashes.size() + 1);
    state->block_start_tokens[0] = 0;
    for (int64_t k = 0; k < num_blocks; ++k) {
      state->block_start_tokens[k + 1] = state->block_start_tokens[k] + request.block_token_counts[k];
    }
  }
  const bool swapped = state->swapped;
  const int64_t frontier = swapped ? state->swap_frontier_tokens : 0;
  const int64_t restored = BlocksBefore(*state, std::min(frontier, input));
  const int64_t tail_tokens =
      (swapped && state->swapped_while_decoding ? frontier : state->prefill_target_tokens) - input;
  const int64_t tail_blocks = NumBlocks(std::max<int64_t>(0, tail_tokens), TailTokens(*state));

  const bool first = !state->potentials_known;
  const int64_t saved_prefix = state->prefix_potential_tokens;
  const int64_t saved_prefix_blocks = state->prefix_potential_blocks;
  const int64_t saved_segment = state->segment_potential_tokens;
  const BlockCounts counts = ClassifyBlocks(state, restored);
  const int64_t needed = tail_blocks + num_blocks - counts.gpu_hits;
  const Tier& gpu = tiers_[0];
  if (needed > gpu.capacity_blocks - gpu.used_blocks + gpu_evictable_ - counts.unpinned_hits) {
    if (first) {  // measure the potentials again when the request is really admitted
      state->potentials_known = false;
      state->prefix_potential_tokens = saved_prefix;
      state->prefix_potential_blocks = saved_prefix_blocks;
      state->segment_potential_tokens = saved_segment;
    }
    return false;
  }

  // Pin the GPU hits and take reloads out of their tiers before evicting, so neither is chosen.
  state->block_entries.assign(num_blocks, kPrivateBlock);
  // With slot ids, the policy's slot of the GPU hit kLookupAhead blocks on is prefetched (a pin of an
  // unpinned block removes it there).
  auto prefetch = [&](int64_t k) {
    if (kinds_[k] == kGpuHit) gpu_residency_->Prefetch(static_cast<BlockId>(found_entries_[k]));
  };
  const bool prefetch_slots = gpu_slot_ids_ && gpu_residency_ != nullptr && counts.unpinned_hits > 0;
  for (int64_t k = 0; k < std::min<int64_t>(num_blocks, kLookupAhead) && prefetch_slots; ++k) prefetch(k);
  for (int64_t k = 0; k < num_blocks && counts.gpu_hits + counts.lower > 0; ++k) {
    if (prefetch_slots && k + kLookupAhead < num_blocks) prefetch(k + kLookupAhead);
    if (kinds_[k] != kGpuHit && kinds_[k] != kReload && kinds_[k] != kRecomputeLower) continue;
    const int32_t entry = found_entries_[k];
    if (kinds_[k] == kGpuHit) {
      Pin(entry);
      state->block_entries[k] = entry;
      state->reused_tokens += BlockTokensAt(request, k);
      ++state->reused_blocks;
      continue;
    }
    const int32_t tier = entries_[entry].tier;
    tiers_[tier].policy->OnRemove(request.block_hashes[k]);
    AddUsed(tier, -1);
    --tiers_[tier].cached_blocks;
    stats_[tier].cached_blocks = tiers_[tier].cached_blocks;
    entries_[entry].tier = kTransit;
    if (kinds_[k] == kRecomputeLower) {
      Drop(entry);
      continue;
    }
    ++stats_[tier].reloaded_blocks;
    stats_[tier].transfer_bytes += block_bytes_;
    tiers_[tier].pending_load_bytes += block_bytes_;
    state->reloaded_tokens += BlockTokensAt(request, k);
    state->block_entries[k] = entry;
  }
  if (swapped) {
    Tier& host = tiers_[1];
    AddUsed(1, -state->swap_blocks);
    swap_blocks_ -= state->swap_blocks;
    stats_[1].swapped_in_blocks += state->swap_blocks;
    stats_[1].transfer_bytes += state->swap_blocks * block_bytes_;
    host.pending_load_bytes += state->swap_blocks * block_bytes_;
    state->swapped = false;
    state->swap_blocks = 0;
  }
  MakeGpuRoom(needed, now_ns);
  for (int64_t k = 0; k < num_blocks && counts.reloads > 0; ++k) {
    if (kinds_[k] != kReload) continue;
    Entry& e = entries_[state->block_entries[k]];
    e.tier = 0;
    e.refcount = 1;  // pinned: not in the GPU policy until released
    if (directory_ != nullptr) directory_->Add(e.hash, directory_replica_);
    AddUsed(0, 1);
    ++tiers_[0].cached_blocks;
    stats_[0].cached_blocks = tiers_[0].cached_blocks;
  }
  // Every prompt block but the GPU hits and the reloads is held privately (block_entries kPrivateBlock).
  const int64_t private_prompt = num_blocks - counts.gpu_hits - counts.reloads;
  state->private_blocks = private_prompt;
  state->tail_blocks = tail_blocks;
  private_blocks_ += private_prompt + tail_blocks;
  AddUsed(0, private_prompt + tail_blocks);
  state->publish_cursor = 0;
  if (!(swapped && state->swapped_while_decoding)) {
    BuildComputeRuns(state, frontier, restored, /*all_computed=*/counts.gpu_hits + counts.lower == 0);
  }
  return true;
}

void BlockManager::BuildComputeRuns(RequestState* state, int64_t frontier, int64_t restored, bool all_computed) {
  const Request& request = state->request;
  const int64_t input = request.input_tokens;
  const int64_t target = state->prefill_target_tokens;
  const int64_t num_blocks = PromptBlocks(request, block_tokens_);
  // Everything computed again after a recompute preemption restores KV that existed before.
  const bool again = state->preemptions > 0;
  int64_t last_reused = -1;  // computed blocks before it fill holes between reused ones: recompute
  for (int64_t k = restored; k < num_blocks && !all_computed; ++k) {
    if (kinds_[k] != kCompute && kinds_[k] != kRecomputeLower) last_reused = k;
  }
  state->ClearComputeRuns();
  // The block that holds the frontier was restored partly; its remainder is computed.
  if (frontier < input && StartTokens(*state, restored) != frontier) {
    state->AddComputeRun(frontier, StartTokens(*state, restored) - frontier, 1, again);
  }
  int32_t segments = 1;
  bool computed_before = frontier > 0;
  bool in_reused_run = false;
  // Adjacent computed blocks with equal attributes form one run (as AddComputeRun would merge them);
  // they are gathered here and added once.
  TokenRun pending;
  pending.length = 0;
  auto flush = [&] {
    if (pending.length == 0) return;
    state->AddComputeRun(pending.start, pending.length, pending.num_segments, pending.recompute);
  };
  if (all_computed && restored < num_blocks) {  // what the loop below makes of it: one run
    const int64_t start = StartTokens(*state, restored);
    pending = TokenRun{start, input - start, segments, again};
  }
  for (int64_t k = restored; k < num_blocks && !all_computed; ++k) {
    const bool compute = kinds_[k] == kCompute || kinds_[k] == kRecomputeLower;
    if (compute) {
      const int64_t start = StartTokens(*state, k);
      const bool recompute = again || k < last_reused || kinds_[k] == kRecomputeLower;
      if (pending.length > 0 && pending.start + pending.length == start && pending.num_segments == segments &&
          pending.recompute == recompute) {
        pending.length += BlockTokensAt(request, k);
      } else {
        flush();
        pending = TokenRun{start, BlockTokensAt(request, k), segments, recompute};
      }
      computed_before = true;
      in_reused_run = false;
    } else {
      if (!in_reused_run && computed_before) ++segments;  // a reused run after computed tokens
      in_reused_run = true;
    }
  }
  flush();
  const int64_t tail_start = std::max(input, frontier);
  if (target > tail_start) state->AddComputeRun(tail_start, target - tail_start, segments, again);
  // A fully reused prompt still computes its last token to produce the first output token.
  if (state->remaining_compute_tokens() == 0 && target > 0) state->AddComputeRun(target - 1, 1, segments);
  state->recomputed_tokens += state->remaining_compute_tokens();
  state->kv_segments = segments;
}

bool BlockManager::GrowBy(RequestState* state, int64_t extra, SimTime now_ns) {
  const Tier& gpu = tiers_[0];
  if (extra > gpu.capacity_blocks - gpu.used_blocks + gpu_evictable_) return false;
  MakeGpuRoom(extra, now_ns);
  AddUsed(0, extra);
  private_blocks_ += extra;
  state->tail_blocks += extra;
  return true;
}

void BlockManager::Publish(RequestState* state, SimTime now_ns) {
  const Request& request = state->request;
  const int64_t frontier = state->frontier_tokens();
  const int64_t num_blocks = PromptBlocks(request, block_tokens_);
  if (state->unique_blocks) {  // nothing to offer: move the cursor past the blocks the frontier passed
    const int64_t passed = frontier >= request.input_tokens ? num_blocks : frontier / block_tokens_;
    state->publish_cursor = static_cast<int32_t>(std::max<int64_t>(state->publish_cursor, passed));
    return;
  }
  // The lookups of the private block kLookupAhead on are prefetched (beyond the frontier too: a hint).
  const int64_t held = static_cast<int64_t>(state->block_entries.size());
  auto prefetch = [&](int64_t k) {
    if (k >= held || state->block_entries[k] != kPrivateBlock) return;
    PrefetchEntry(request.block_hashes[k]);
  };
  for (int64_t k = state->publish_cursor; k < std::min<int64_t>(num_blocks, state->publish_cursor + kLookupAhead); ++k) {
    prefetch(k);
  }
  while (state->publish_cursor < num_blocks) {
    const int64_t k = state->publish_cursor;
    const int64_t end = StartTokens(*state, k + 1);
    if (end > frontier) break;
    ++state->publish_cursor;
    if (k + kLookupAhead < num_blocks) prefetch(k + kLookupAhead);
    if (state->block_entries[k] != kPrivateBlock) continue;
    const uint64_t hash = request.block_hashes[k];
    int32_t entry;
    if (directory_ == nullptr) {
      // Inserted with a placeholder entry (NewEntry does not touch index_, so `value` stays valid).
      auto [value, inserted] = index_.FindOrInsert(hash, 0);
      if (!inserted) continue;  // cached meanwhile by another request: this copy stays private
      entry = NewEntry(hash);
      *value = entry;
    } else {
      // Registered with the entry NewEntry gives next, in the lookup that finds whether the block was
      // cached meanwhile (then this copy stays private).
      const GpuBlockDirectory::Registration registration =
          directory_->TryRegister(hash, directory_replica_, NextEntry(), /*on_gpu=*/true);
      if (registration == GpuBlockDirectory::Registration::kAlreadyRegistered) continue;
      entry = NewEntry(hash);
      if (registration == GpuBlockDirectory::Registration::kCallerKeeps) index_.FindOrInsert(hash, entry);
    }
    Entry& e = entries_[entry];
    e.tier = 0;
    e.refcount = 1;
    ++tiers_[0].cached_blocks;
    stats_[0].cached_blocks = tiers_[0].cached_blocks;
    --state->private_blocks;
    --private_blocks_;
    state->block_entries[k] = entry;  // pinned: enters the GPU policy when released
  }
}

void BlockManager::Release(RequestState* state, SimTime now_ns) {
  // Last block first: with recency policies the prompt's head, shared most, stays longest. (Nothing to
  // unpin when every prompt block is private.)
  const int64_t shared = static_cast<int64_t>(state->block_entries.size()) - state->private_blocks;
  // The entries (and, with slot ids, the policy's index slots) kLookupAhead blocks on are prefetched.
  const std::vector<int32_t>& held_entries = state->block_entries;
  auto prefetch = [&](int64_t k) {
    const int32_t entry = held_entries[k];
    if (entry == kPrivateBlock) return;
    PrefetchForRead(&entries_[entry]);
    if (gpu_slot_ids_ && gpu_residency_ != nullptr) gpu_residency_->Prefetch(static_cast<BlockId>(entry));
  };
  const int64_t last = static_cast<int64_t>(held_entries.size()) - 1;
  for (int64_t k = last; k >= std::max<int64_t>(0, last - kLookupAhead + 1) && shared > 0; --k) prefetch(k);
  for (int64_t k = last; k >= 0 && shared > 0; --k) {
    if (k - kLookupAhead >= 0) prefetch(k - kLookupAhead);
    if (held_entries[k] != kPrivateBlock) Unpin(held_entries[k], state, k, now_ns);
  }
  const int64_t held = state->private_blocks + state->tail_blocks;
  private_blocks_ -= held;
  AddUsed(0, -held);
  if (state->request.session_id >= 0 && !state->unique_blocks && shared > 0) RememberHint(*state);
  state->block_entries.clear();
  state->private_blocks = 0;
  state->tail_blocks = 0;
  state->publish_cursor = 0;
}

void BlockManager::RememberHint(const RequestState& state) {
  const int64_t length = static_cast<int64_t>(state.block_entries.size());
  std::vector<int32_t>& hint = session_hints_[state.request.session_id];
  hint_blocks_ -= static_cast<int64_t>(hint.size());
  if (hint_blocks_ + length > max_hint_blocks_) {  // forget them all (the map's memory stays bounded)
    session_hints_.clear();
    hint_blocks_ = 0;
    if (length > max_hint_blocks_) return;
    std::vector<int32_t>& fresh = session_hints_[state.request.session_id];
    fresh.assign(state.block_entries.begin(), state.block_entries.end());
    hint_blocks_ = length;
    return;
  }
  hint.assign(state.block_entries.begin(), state.block_entries.end());
  hint_blocks_ += length;
}

void BlockManager::EndRequest(const RequestState& state, SimTime now_ns) {
  tiers_[0].policy->OnRequestEnd(MakeRequestEndInfo(state.request, now_ns));
}

bool BlockManager::SwapOut(RequestState* state, SimTime now_ns) {
  if (tiers_.size() < 2) return false;
  const int64_t input = state->request.input_tokens;
  const bool decoding = state->phase() == RequestPhase::kDecode;
  const int64_t computed = decoding ? state->kv_tokens : state->frontier_tokens();
  if (computed <= 0) return false;
  const int64_t blocks = BlocksBefore(*state, std::min(computed, input)) +
                         NumBlocks(std::max<int64_t>(0, computed - input), TailTokens(*state));
  if (!MakeLowerRoom(1, blocks, now_ns)) return false;
  Release(state, now_ns);
  AddUsed(1, blocks);
  swap_blocks_ += blocks;
  stats_[1].swapped_out_blocks += blocks;
  stats_[1].transfer_bytes += blocks * block_bytes_;
  tiers_[1].pending_offload_bytes += blocks * block_bytes_;
  state->swapped = true;
  state->swapped_while_decoding = decoding;
  state->swap_frontier_tokens = computed;
  state->swap_blocks = blocks;
  state->swapped_tokens += computed;
  return true;
}

int64_t BlockManager::GpuPrefixBlocks(const Request& request) const {
  int64_t blocks = 0;
  for (uint64_t hash : request.block_hashes) {
    const int32_t entry = FindEntry(hash);
    if (entry == kNoEntry || entries_[entry].tier != 0) break;
    ++blocks;
  }
  return blocks;
}

void BlockManager::ShareGpuDirectory(GpuBlockDirectory* directory, int32_t replica) {
  KVSIM_CHECK(index_.empty() && directory != nullptr && replica >= 0 && replica < directory->num_replicas() &&
              max_entries_ <= GpuBlockDirectory::kMaxEntries);
  directory_ = directory;
  directory_replica_ = replica;
}

int64_t BlockManager::TakeTransferNs(std::vector<TierTransfer>* transfers) {
  if (transfers != nullptr) transfers->clear();
  int64_t total_ns = 0;
  for (size_t i = 1; i < tiers_.size(); ++i) {
    Tier& tier = tiers_[i];
    const int64_t bytes = tier.pending_load_bytes + tier.pending_offload_bytes;
    if (bytes == 0) continue;
    const int64_t ns = cost_model_ != nullptr ? cost_model_->TransferTimeNs(bytes, tier.config) : 0;
    total_ns += ns;
    if (transfers != nullptr) {
      transfers->push_back({.tier = static_cast<int32_t>(i),
                            .tier_name = stats_[i].name,
                            .load_bytes = tier.pending_load_bytes,
                            .offload_bytes = tier.pending_offload_bytes,
                            .duration_ns = ns});
    }
    tier.pending_load_bytes = tier.pending_offload_bytes = 0;
  }
  return total_ns;
}

void BlockManager::CountIdle(uint64_t hash, int32_t entry, IdleCounts* counts) const {
  ++counts->indexed;
  if (!counts->status.ok()) return;
  const Entry& e = entries_[entry];
  if (e.refcount != 0) {
    counts->status =
        absl::InternalError(absl::StrCat("block leak: block ", hash, " still has ", e.refcount, " references"));
    return;
  }
  if (e.hash != hash || e.tier < 0 || e.tier >= static_cast<int32_t>(tiers_.size())) {
    counts->status = absl::InternalError(absl::StrCat("block ", hash, ": inconsistent entry"));
    return;
  }
  ++counts->cached[e.tier];
  if (e.tier == 0) ++counts->unpinned_gpu;
}

absl::Status BlockManager::CheckCounts(const IdleCounts& counts) const {
  KVSIM_RETURN_IF_ERROR(counts.status);
  if (private_blocks_ != 0 || swap_blocks_ != 0) {
    return absl::InternalError(absl::StrCat("block leak: ", private_blocks_, " private GPU blocks and ", swap_blocks_,
                                            " swapped blocks still held"));
  }
  if (counts.unpinned_gpu != gpu_evictable_) {
    return absl::InternalError(absl::StrCat("evictable count ", gpu_evictable_, " != ", counts.unpinned_gpu));
  }
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (counts.cached[i] != tiers_[i].cached_blocks || tiers_[i].used_blocks != tiers_[i].cached_blocks) {
      return absl::InternalError(absl::StrCat("tier ", stats_[i].name, ": used ", tiers_[i].used_blocks, ", counted ",
                                              tiers_[i].cached_blocks, ", found ", counts.cached[i]));
    }
  }
  if (static_cast<int64_t>(entries_.size() - free_entries_.size()) != counts.indexed) {
    return absl::InternalError("entries and index disagree");
  }
  return absl::OkStatus();
}

absl::Status BlockManager::CheckAllIdle(const std::vector<const BlockManager*>& managers) {
  // Each manager's counts see its index_ first, then the directory's blocks it owns in slot order (its
  // status is its first bad entry in that order); a directory shared by several is read once for all.
  std::vector<IdleCounts> counts(managers.size());
  for (size_t i = 0; i < managers.size(); ++i) {
    const BlockManager* manager = managers[i];
    counts[i].cached.assign(manager->tiers_.size(), 0);
    manager->index_.ForEach([&](uint64_t hash, int32_t entry) { manager->CountIdle(hash, entry, &counts[i]); });
  }
  std::vector<const GpuBlockDirectory*> read;  // directories read so far
  for (const BlockManager* first : managers) {
    const GpuBlockDirectory* directory = first->directory_;
    if (directory == nullptr || std::find(read.begin(), read.end(), directory) != read.end()) continue;
    read.push_back(directory);
    std::vector<int32_t> checked(directory->num_replicas(), -1);  // replica -> index in managers
    for (size_t i = 0; i < managers.size(); ++i) {
      if (managers[i]->directory_ == directory) checked[managers[i]->directory_replica_] = static_cast<int32_t>(i);
    }
    // Counted kLookupAhead blocks behind the scan, in the same order, each entry prefetched when the scan
    // finds it (the entries are random reads; the directory's slots are read in order).
    struct Owned {
      uint64_t hash;
      int32_t manager;
      int32_t entry;
    };
    Owned ring[kLookupAhead];
    int64_t found = 0;
    auto count = [&](const Owned& o) { managers[o.manager]->CountIdle(o.hash, o.entry, &counts[o.manager]); };
    directory->ForEachOwned([&](uint64_t hash, int32_t owner, int32_t entry) {
      const int32_t i = checked[owner];
      if (i < 0) return;
      Owned& slot = ring[found % kLookupAhead];
      if (found >= kLookupAhead) count(slot);
      slot = Owned{hash, i, entry};
      PrefetchForRead(&managers[i]->entries_[entry]);
      ++found;
    });
    for (int64_t j = std::max<int64_t>(0, found - kLookupAhead); j < found; ++j) count(ring[j % kLookupAhead]);
  }
  for (size_t i = 0; i < managers.size(); ++i) KVSIM_RETURN_IF_ERROR(managers[i]->CheckCounts(counts[i]));
  return absl::OkStatus();
}

}  // namespace kvsim
