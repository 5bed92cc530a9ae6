// File: sim/serving/ttft_decomposition.h
//
// TtftDecomposition: an EngineObserver that splits every finished request's TTFT into where the time went,
// exactly (the parts sum to the TTFT), and the difference of two runs' mean TTFT into the same parts
// (a gain decomposition). For a request r:
//   queueing           arrival -> first scheduled (waiting for KV blocks, the budget, a slot);
//   then, for each iteration that computes a prefill piece of r before its first token, of duration d:
//   reload             the iteration's tier transfer time (reloads, demotions, swaps; with overlapped
//                      transfers only what exceeds the compute);
//   prefill_linear     r's share of the compute, tokens(r) / tokens(iteration) x compute, times the part
//                      of r's chunk priced alone (cost model breakdown: context = r's computed prefix,
//                      new = the chunk) that is not attention: GEMMs, LM head, overhead;
//   prefill_attention  the rest of r's share: attention over r's context, the term that grows with the
//                      position of the recomputed tokens;
//   co_batched         the compute of the iteration's other pieces (decodes and other prompts' chunks);
//   chunk_wait         the remainder: time after first scheduled in no iteration of r (waiting between
//                      chunks, preempted, held out of a full iteration).
// Counts reported with the times: mean prompt tokens reused and recomputed per request.
//
// Example:
//   TtftDecomposition decomposition(cost_model);  engine->AddObserver(&decomposition);  ... Run ...
//   TtftParts base = decomposition.MeanParts();   ... the same for the other run ...
//   TtftParts gain = Difference(base, other);     // sums to base mean TTFT - other mean TTFT
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_TTFT_DECOMPOSITION_H_
#define KVSIM_SIM_SERVING_TTFT_DECOMPOSITION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "cost_models/cost_model.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"

namespace kvsim {

// Mean parts over finished requests, milliseconds (counts in tokens).
struct TtftParts {
  double queueing_ms = 0;
  double reload_ms = 0;
  double prefill_linear_ms = 0;
  double prefill_attention_ms = 0;
  double co_batched_ms = 0;
  double chunk_wait_ms = 0;
  double ttft_ms = 0;  // the mean TTFT itself: the sum of the six parts
  double reused_tokens = 0;
  double recomputed_tokens = 0;
  int64_t requests = 0;

  double SumOfParts() const {
    return queueing_ms + reload_ms + prefill_linear_ms + prefill_attention_ms + co_batched_ms + chunk_wait_ms;
  }
};

// a - b, field by field (requests: a's).
TtftParts Difference(const TtftParts& a, const TtftParts& b);

// The parts as the Results proto stores them, and back (field for field).
proto::TtftBreakdown ToProto(const TtftParts& parts);
TtftParts FromProto(const proto::TtftBreakdown& breakdown);

// One line per part: "name  a  b  a-b" (ms), for reports.
std::string FormatGainDecomposition(const TtftParts& a, const TtftParts& b);

class TtftDecomposition final : public EngineObserver {
 public:
  explicit TtftDecomposition(const CostModel* cost_model) : cost_model_(cost_model) {}

  void OnIteration(const IterationRecord& record) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;

  TtftParts MeanParts() const;

 private:
  struct Parts {
    double reload_ns = 0, linear_ns = 0, attention_ns = 0, co_batched_ns = 0;
  };
  // The attention part of `tokens` prompt tokens after `context` computed ones, priced alone, as a
  // fraction of that chunk's time (0 if the estimate fails). Memoised in a direct-mapped cache of
  // kMemoEntries: the estimate is a function of the two counts alone (it counts nothing), and a trace's
  // prompts and chunks repeat lengths.
  double AttentionFraction(int64_t context, int64_t tokens);
  static constexpr size_t kMemoEntries = 4096;
  struct MemoEntry {
    int64_t context = -1;  // -1 = empty
    int64_t tokens = 0;
    double fraction = 0;
  };

  const CostModel* const cost_model_;
  absl::flat_hash_map<uint64_t, Parts> open_;  // requests before their first token
  BatchShape alone_;                           // scratch: one prefill piece priced alone
  std::vector<MemoEntry> memo_;                // AttentionFraction's, allocated at the first use
  TtftParts sum_;                              // sums over finished requests (ns in the ms fields)
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_TTFT_DECOMPOSITION_H_
