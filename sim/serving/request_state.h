// File: sim/serving/request_state.h
//
// RequestState: one request's life inside the simulator, and RequestPool, the slots that hold the requests
// in flight. The lifecycle is an enum state machine; only the transition methods change the phase, and
// each one KVSIM_CHECKs that the transition is legal:
//
//   kQueued --Admit--> kPrefill --FinishPrefill--> kDecode --Finish--> kFinished
//                        |  ^                        |   ^
//                        |  +------Admit-------+     |   |
//                        +--Preempt--> kPreempted <--+   +--Resume (swapped in while decoding)
//   kPrefill --Finish--> kFinished (one output token or none)
//
// Prefill progress is a list of token runs to compute (TokenRun): the prompt tokens that are not reused
// (and, after a recompute preemption, the tokens generated so far). The scheduler hands out chunks from
// the front of that list; everything before the current position is reused or already computed.
//
// Blocks: the BlockManager fills and reads the block fields; nothing else touches them.
//
// Example:
//   RequestPool pool;
//   int32_t slot = pool.Allocate();
//   RequestState& state = pool.at(slot);
//   state.Admit(now_ns);
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_REQUEST_STATE_H_
#define KVSIM_SIM_SERVING_REQUEST_STATE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/serving/clock.h"
#include "sim/serving/request_kv.h"
#include "traces/request.h"

namespace kvsim {

enum class RequestPhase : uint8_t { kQueued, kPrefill, kDecode, kPreempted, kFinished };

const char* RequestPhaseName(RequestPhase phase);

// Tokens [start, start + length) to compute in prefill. `num_segments` is the number of non-contiguous
// KV runs the piece attends to (1 unless reused blocks are interleaved with computed ones). `recompute`:
// the tokens' KV existed before (a hole between reused blocks, or a prefill again after preemption).
struct TokenRun {
  int64_t start = 0;
  int64_t length = 0;
  int32_t num_segments = 1;
  bool recompute = false;
};

// Marker in RequestState::block_entries for a block the request holds privately (computed by it, not
// in the shared cache).
inline constexpr int32_t kPrivateBlock = -1;

class RequestState {
 public:
  // Clears everything, for reuse of a pool slot, keeping the capacity of the per-block vectors of the
  // state (block_entries, compute runs, token gaps) but not the request's block hashes: the slots a
  // queue burst took would otherwise each keep the largest prompt they served for the rest of the run
  // (6.7 MB of 22 on the bundled Azure trace, whose hashes are fresh ones).
  void Reset();

  RequestPhase phase() const { return phase_; }

  // kQueued or kPreempted -> kPrefill. Sets first_scheduled_ns on the first call.
  void Admit(SimTime now_ns);
  // kPreempted -> kDecode: a swapped-out request that was decoding is swapped back in.
  void Resume(SimTime now_ns);
  // kPrefill -> kDecode (the prompt is computed and more tokens follow).
  void FinishPrefill();
  // kPrefill or kDecode -> kPreempted.
  void Preempt();
  // kPrefill or kDecode -> kFinished.
  void Finish(SimTime now_ns);

  // Prefill progress.
  void ClearComputeRuns();
  void AddComputeRun(int64_t start, int64_t length, int32_t num_segments, bool recompute = false);
  // Consumes `tokens` tokens from the front of the runs. REQUIRES: tokens <= remaining_compute_tokens().
  void AdvanceCompute(int64_t tokens);
  int64_t remaining_compute_tokens() const { return remaining_compute_tokens_; }
  // All tokens before this position are reused or computed.
  int64_t frontier_tokens() const;
  const std::vector<TokenRun>& compute_runs() const { return compute_runs_; }
  size_t run_index() const { return run_index_; }
  int64_t run_offset() const { return run_offset_; }

  // The request as the trace gives it.
  Request request;
  int32_t replica = -1;
  int64_t admit_order = -1;
  // Its own KV configuration (sim/serving/request_kv.h); the default: the replica's format, no budget.
  RequestKv kv;  // increases with each admission on the replica (preemption picks the newest)

  // Tokens.
  int64_t generated_tokens = 0;       // output tokens emitted so far
  int64_t prefill_target_tokens = 0;  // KV tokens the current prefill builds (prompt + regenerated)
  int64_t kv_tokens = 0;              // tokens with KV on the GPU once prefill is done
  int64_t scheduled_tokens = 0;       // tokens in the iteration now running (0 if none)
  int32_t kv_segments = 1;            // non-contiguous KV runs decodes attend to (segment reuse)

  // Blocks (BlockManager only).
  std::vector<int32_t> block_entries;  // per prompt block: cache entry index or kPrivateBlock
  int64_t private_blocks = 0;          // prompt blocks held privately
  int64_t tail_blocks = 0;             // blocks of KV beyond the prompt (generated tokens)
  int32_t publish_cursor = 0;          // next prompt block to offer to the shared cache
  bool swapped = false;                // KV is in the host tier (swap preemption)
  bool swapped_while_decoding = false;
  int64_t swap_frontier_tokens = 0;  // tokens of KV swapped out
  int64_t swap_blocks = 0;           // host blocks held while swapped out

  // Times (-1 = not yet).
  SimTime arrival_ns = 0;
  SimTime first_scheduled_ns = -1;
  SimTime first_token_ns = -1;
  SimTime last_token_ns = -1;
  std::vector<int64_t> token_gaps_ns;  // from each output token to the next, in order
  SimTime finish_ns = -1;

  // Accounting, all admissions together unless noted.
  bool potentials_known = false;        // set at the first admission
  int64_t prefix_potential_tokens = 0;  // first admission: leading prompt blocks cached in any tier
  int64_t prefix_potential_blocks = 0;
  int64_t segment_potential_tokens = 0;  // first admission: prompt blocks cached anywhere in any tier
  int64_t reused_tokens = 0;             // reused from the GPU under the configured reuse mode
  int64_t reused_blocks = 0;
  int64_t recomputed_tokens = 0;  // prefill tokens computed
  int64_t reloaded_tokens = 0;    // prompt tokens reloaded from a lower tier
  int64_t swapped_tokens = 0;     // tokens swapped out (each swap counted)
  int32_t preemptions = 0;
  bool rejected = false;  // could never fit on the GPU; not run
  // The blocks are never looked up or offered to the shared cache, as nothing could reuse them: the trace
  // gave no block hashes (the request's blocks then have no ids: PromptBlocks counts them), or a KV
  // budget cuts its KV after the prefill (sim/serving/request_kv.h).
  bool unique_blocks = false;
  // Variable blocks (request.block_token_counts set): prompt tokens before each block, n + 1 entries
  // (the last = input_tokens), filled by the BlockManager at the first admission; empty otherwise.
  std::vector<int64_t> block_start_tokens;

 private:
  RequestPhase phase_ = RequestPhase::kQueued;
  std::vector<TokenRun> compute_runs_;
  size_t run_index_ = 0;
  int64_t run_offset_ = 0;
  int64_t remaining_compute_tokens_ = 0;
};

// Slots for the requests in flight, reused after they finish so the steady state allocates nothing.
class RequestPool {
 public:
  // Returns a free slot, its state Reset().
  int32_t Allocate();
  // Returns `slot` to the free list. REQUIRES: allocated.
  void Free(int32_t slot);
  RequestState& at(int32_t slot) { return *states_[slot]; }
  const RequestState& at(int32_t slot) const { return *states_[slot]; }
  int64_t in_use() const { return static_cast<int64_t>(states_.size() - free_.size()); }

 private:
  std::vector<std::unique_ptr<RequestState>> states_;  // growing never moves the states in flight
  std::vector<int32_t> free_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_REQUEST_STATE_H_
