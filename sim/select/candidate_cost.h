// File: sim/select/candidate_cost.h
//
// CandidateCostModel: end-to-end latency and peak memory of one prompt, alone on the GPU, under one
// candidate configuration (proto/select.proto), from the project's cost models: the roofline
// (cost_models/roofline.h) for time and EstimatePeakMemory (cost_models/peak_memory.h) for memory, on the
// model and GPU of a resolved experiment config. Nothing here counts bytes: the candidate only changes
// the config (KV dtype, KV format) and the token shapes the cost model is asked about.
//
// KV format: kv_dtype sets model.kv_dtype; quant sets cost_model.kv_quant_bits and kv_quant_group_size
// (default head_dim). KVQuant's dense-and-sparse outliers are charged as scale metadata of each group:
// kv_scale_bytes_per_group = 4 (fp16 scale and zero) + ceil(outlier_fraction x group x 6) (fp16 value and
// 32-bit index per outlier), so KvFormat::BytesPerElement includes them.
//
// Token shapes for a prompt of I input and O output tokens, budget B (CandidateBudgetTokens), decode
// step j = 1 .. O - 1 with c_j = I + j - 1 tokens before it:
//   no token policy     reads c_j, holds c_j
//   kEvict policies     reads and holds min(c_j, B) (the cache is cut to B after prefill, kept at B)
//   rocketkv            holds min(I, kMemoryFactor B) + j - 1 (stage 1), reads min(held, B) (stage 2)
//   other kSelect       holds c_j, reads min(c_j, B)
//   kFull / kQuantize   as no token policy
// Latency = prefill (one piece {0, I} that samples the first token) + compression overhead + the sum of
//   the O - 1 decode iterations {context = reads(j), new = 1}, batch of one, each IterationTimeNs.
// Compression overhead: policies whose scores need the prompt's attention probabilities, which fused
//   prefill kernels do not return, pay an attention pass per layer (RooflineCostModel::AttentionSeconds):
//   over all I queries for h2o and scissorhands (accumulated attention), over the last W = 32 queries for
//   snapkv, pyramidkv, rocketkv and adakv+ wrappers (observation window), the last query for tova; other
//   policies (and quantisation, whose write at the compressed format and dequantisation on every read
//   the cost model already charges) pay none. Decode-time selection scoring (quest, rocketkv stage 2) is
//   not charged.
// Peak memory = EstimatePeakMemory(config with max_num_batched_tokens = I, max_num_seqs = 1, kv_tokens =
//   peak held), peak held = max(prefill peak, held at the last step plus its token), where permanent
//   eviction (kEvict, rocketkv) compresses each layer right after its prefill, so the prefill peak is
//   S + ceil((I - S) / layers) with S = held after prefill; otherwise I.
// latency_ms = ns / 1e6; peak_memory_mb in MiB (2^20 bytes).
//
// Immutable after Create; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto model, CandidateCostModel::Create(config, set.candidate(3)));
//   KVSIM_ASSIGN_OR_RETURN(CandidateCost cost, model->Cost(/*input_tokens=*/4000, /*output_tokens=*/200));
#ifndef KVSIM_SIM_SELECT_CANDIDATE_COST_H_
#define KVSIM_SIM_SELECT_CANDIDATE_COST_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "cost_models/peak_memory.h"
#include "cost_models/roofline.h"
#include "policies/token/token_policy.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"
#include "sim/serving/request_kv.h"

namespace kvsim {

struct CandidateCost {
  int64_t prefill_ns = 0;
  int64_t overhead_ns = 0;  // compression overhead
  int64_t decode_ns = 0;    // sum of the decode iterations
  int64_t latency_ns = 0;   // prefill + overhead + decode
  int64_t peak_kv_tokens = 0;
  PeakMemory memory;
  double latency_ms = 0;
  double peak_memory_mb = 0;
};

class CandidateCostModel {
 public:
  // REQUIRES: `base` resolved (config/experiment_config.h) with a roofline cost model (kind unset or ROOFLINE;
  // InvalidArgument otherwise), `candidate` valid (ValidateSelectCandidates).
  static absl::StatusOr<std::unique_ptr<CandidateCostModel>> Create(const proto::ExperimentConfig& base,
                                                                    const proto::SelectCandidate& candidate);

  // InvalidArgument for input_tokens outside [1, kMaxCostInputTokens] or output_tokens outside
  // [1, kMaxCostOutputTokens].
  absl::StatusOr<CandidateCost> Cost(int64_t input_tokens, int64_t output_tokens) const;

  // The shapes above, for tests and reports. REQUIRES: input_tokens >= 1, step >= 1.
  int64_t ReadTokens(int64_t input_tokens, int64_t step) const;
  int64_t HeldTokens(int64_t input_tokens, int64_t step) const;
  // The same shapes as a serving replay applies them to a request of `input_tokens`
  // (sim/serving/request_kv.h: HeldTokens is its R(c_j), ReadTokens its D(c_j)): kEvict prompt_keep =
  // hold_cap = B; rocketkv prompt_keep = kMemoryFactor B and read_cap = B; other kSelect read_cap = B;
  // none otherwise. Only the budget fields of the RequestKv are set.
  RequestKv Budget(int64_t input_tokens) const;
  int64_t PeakKvTokens(int64_t input_tokens, int64_t output_tokens) const;
  // Queries of the overhead attention pass over the prompt (0: none).
  int64_t OverheadQueries(int64_t input_tokens) const;

  // The candidate's config (KV format applied) for a prompt of `input_tokens`, as EstimatePeakMemory sees it.
  proto::ExperimentConfig ConfigFor(int64_t input_tokens) const;
  const RooflineCostModel& roofline() const { return *roofline_; }

 private:
  enum class Shape { kAll, kEvict, kRocket, kSelect };
  CandidateCostModel() = default;

  proto::ExperimentConfig config_;
  proto::SelectCandidate candidate_;
  std::unique_ptr<RooflineCostModel> roofline_;
  Shape shape_ = Shape::kAll;
  enum class Overhead { kNone, kFullPrompt, kWindow, kLastQuery } overhead_ = Overhead::kNone;
};

// Largest shapes Cost accepts: every decode step is costed, so the output length bounds its time.
inline constexpr int64_t kMaxCostInputTokens = int64_t{1} << 24;
inline constexpr int64_t kMaxCostOutputTokens = int64_t{1} << 20;

// The observation window of the overhead pass of snapkv-like policies.
inline constexpr int64_t kSelectScoreWindow = 32;

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_CANDIDATE_COST_H_
