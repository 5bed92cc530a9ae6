// File: sim/quality/quality_evaluator.h
//
// QualityEvaluator: the offline fidelity of token-level KV policies (policies/token/) on an attention
// trace, at several budgets. For every sample, kept layer, decode step, kept KV head and query head of
// its group it recomputes the full attention row a = softmax(q K^T / sqrt(d)) over positions 0..p and
// the full output o = a V (Eigen GEMMs over blocks of decode steps), asks each (policy, budget) for its
// kept set S, and measures:
//   recall    attention-mass recall  m = sum_{i in S} a_i
//   error     relative output error  ||o - o'|| / ||o||, with o' = sum_{i in S} a_i v_i / m (for quantisers:
//             o' = softmax over S of q K~^T / sqrt(d) applied to V~, the dequantised keys and values)
//   overlap   top-k overlap          |S ∩ top_k(a)| / k, k = min(top_k, p + 1)
// Each (policy, budget) gets aggregates over every (sample, layer, step, head, query head): mean, p10 and
// worst (for recall and overlap, p10 is the 10th percentile and worst the minimum; for error, the 90th
// percentile and the maximum: always "the bad tail"), the mean tokens read, and per-layer and per-head
// means. Budgets are absolute tokens or ratios of the prompt length (B = max(1, round(r * prompt_len))).
// "oracle_select" is always evaluated (added if not asked for): areas under the recall and error curves
// over each budget axis are reported normalised by its areas.
//
// Cost: per block of decode steps and kept KV head, one GEMM for the logits of all the group's query heads
// and one for their outputs, the same two per quantiser (over its dequantised K/V), all in float; the
// blocks are equal-sized under a memory bound and their storage is reused (huge pages advised). A small
// kept set's o' sums its value rows (gathered, or read in place on AVX-512; once for the whole group when
// the set is shared); a large set's o' is o minus the missing rows. Roughly, every quantiser doubles the
// GEMM work, and oracle_evict adds one logits pass of its own (it needs every step's attention before the
// first).
//
// Threads (QualityOptions::num_threads): a layer's attention blocks are computed one task per (copy,
// head), and its points one task per point (BeginLayer, then chunks of decode steps), on a pool of that
// many threads; the policies of one head share its prompt-window cache.
//
// The float GEMMs (logits, outputs, and those of oracle_evict and the prompt-window attention) run on
// AVX2+FMA kernels (util/avx2_gemm.h) when the CPU has them, on Eigen's portable GEMM otherwise or when the
// environment sets KVSIM_NO_AVX2=1; the choice is made once per process (util/cpu_features.h). Where the
// CPU has AVX-512F, the GEMMs, the softmax passes and the kept-set sums take AVX-512 variants of the same
// bits (KVSIM_NO_AVX512=1 keeps the AVX2 ones).
//
// Deterministic: each point's measurements are accumulated in a fixed order (samples, layers, steps,
// heads, query heads) whatever the number of threads (QualityOptions::num_threads); same trace and
// options give identical results (byte-identical on one machine, for any thread count). The two GEMM paths may differ
// in the last bits of a float (FMA, summation order), so results of an AVX2 machine and of a portable run may differ in
// late digits. Thread-compatible.
//
// Example:
//   QualityOptions options;
//   options.policies = {"h2o", "snapkv"};
//   options.budget_tokens = {128, 512};
//   KVSIM_ASSIGN_OR_RETURN(auto evaluator, QualityEvaluator::Create(reader->header(), options));
//   for (int64_t s = 0; s < reader->num_samples(); ++s) {
//     KVSIM_ASSIGN_OR_RETURN(AttentionSample sample, reader->ReadSample(s));
//     KVSIM_RETURN_IF_ERROR(evaluator->AddSample(sample));
//   }
//   QualityResults results = evaluator->Finish();
#ifndef KVSIM_SIM_QUALITY_QUALITY_EVALUATOR_H_
#define KVSIM_SIM_QUALITY_QUALITY_EVALUATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/token/token_policy.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

// The largest token budget: positions are int32 (a budget beyond any sequence keeps everything).
constexpr int64_t kMaxQualityBudgetTokens = (int64_t{1} << 31) - 1;

struct QualityOptions {
  std::vector<std::string> policies;   // registered names or wrapper+policy specs, each once
  std::vector<int64_t> budget_tokens;  // absolute budgets, each in [1, kMaxQualityBudgetTokens]
  std::vector<double> budget_ratios;   // fractions of the prompt length, each in (0, 1]
  int top_k = 32;                      // k of the top-k overlap
  uint64_t seed = 0;                   // for randomised policies
  // Attention rows held at once, in bytes (results do not depend on it, only speed and memory): a layer's
  // exact attention is held whole when it fits (the look-ahead oracle then reads it instead of recomputing
  // it), else in blocks of decode steps of at most min(this, 192 MiB) with the quantisers' copies.
  int64_t max_attention_bytes = int64_t{1} << 30;
  // Threads evaluating the points (policy x budget) of a layer, and the attention blocks of its heads
  // (0 = every core; at most kMaxThreads of util/parallel.h). Results do not depend on it; memory grows
  // by a few rows of seq_len per thread.
  int num_threads = 1;
};

struct MetricSummary {
  double mean = 0;
  double p10 = 0;  // the bad-tail percentile (see the file comment)
  double worst = 0;
  int64_t count = 0;
};

// One point of a budget curve: a policy at one budget.
struct QualityPoint {
  std::string policy;
  std::string kind;       // "full", "evict", "select", "quantize"
  bool is_ratio = false;  // budget_value is a ratio of the prompt length, else tokens
  double budget_value = 0;
  double mean_budget_tokens = 0;  // the resolved budget, averaged over samples
  MetricSummary recall, error, overlap;
  double mean_kept_tokens = 0;                    // tokens read per query, averaged
  std::vector<double> layer_recall, layer_error;  // per kept layer (index into kept_layers)
  std::vector<double> head_recall, head_error;    // per kept layer x kept KV head, layer-major
};

// Normalised areas under one policy's curves over one budget axis (trapezoids in budget order; one
// budget: the value itself). Ratios to oracle_select's areas; NaN when the oracle's area is 0.
struct QualityArea {
  std::string policy;
  bool is_ratio = false;
  double recall_area = 0, error_area = 0;
  double recall_vs_oracle = 0, error_vs_oracle = 0;
};

struct QualityResults {
  std::string model;
  bool synthetic = false;
  std::vector<int32_t> kept_layers, kept_kv_heads;
  int64_t num_samples = 0;
  int64_t num_decode_steps = 0;  // summed over samples
  int64_t num_dot_products = 0;  // query-key dot products of the full rows recomputed
  int top_k = 0;
  std::vector<QualityPoint> points;  // policy-major; per policy the token budgets, then the ratios
  std::vector<QualityArea> areas;    // per policy, token axis then ratio axis (where given)
};

class QualityEvaluator {
 public:
  // InvalidArgument for an unknown policy, no budgets, a budget < 1 token or a ratio outside (0, 1],
  // top_k < 1, num_threads outside [0, kMaxThreads], or an invalid header.
  static absl::StatusOr<std::unique_ptr<QualityEvaluator>> Create(const AttentionTraceHeader& header,
                                                                  const QualityOptions& options);
  ~QualityEvaluator();

  // Evaluates one sample. InvalidArgument if it does not match the header (ValidateSample).
  absl::Status AddSample(const AttentionSample& sample);

  // The aggregates so far.
  QualityResults Finish() const;

 private:
  struct Impl;
  explicit QualityEvaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_QUALITY_QUALITY_EVALUATOR_H_
