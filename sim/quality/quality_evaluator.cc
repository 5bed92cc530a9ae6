#include "sim/quality/quality_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "policies/token/token_policy_util.h"
#include "util/check.h"
#include "util/float_gemm.h"
#include "util/huge_pages.h"
#include "util/parallel.h"
#include "util/status_macros.h"

// Data and invariants:
// - points holds one Point per (policy, budget), policy-major; budgets sorted and deduplicated, tokens
//   before ratios; oracle_select is appended when not asked for. A point's policy, kept sets, quantised
//   blocks and Accumulator belong to it alone: in BeginLayer and the step loop one task at a time works
//   on a point, and ComputeBlocks' tasks each write one head's block. No locks.
// - Distribution keeps fixed bins (10^4 per unit of range): percentiles to 1e-4 in memory independent of
//   the number of measurements; mean, minimum and maximum exact.
// - HeadBlock storage only grows; probs is a view over it, row j * steps + s for query head j of the
//   group at step s. blocks (the exact rows, per head) and caches (prompt-window attention, per head,
//   Reset per layer) keep their storage across layers and samples.
// Order per layer: (1) the exact attention of every step, when the whole layer fits, so BeginLayer can
// hand it to look-ahead policies; (2) BeginLayer of every point; (3) per block of steps, ComputeBlocks
// (the exact rows unless held whole, and each quantiser's), then the step loop in tasks of
// kStepsPerTask steps of one point. The exact blocks are only read during the step loop. Each point
// sees its steps in increasing position and adds its measurements in (step, head, query head) order, so
// results do not depend on threads. StepScratch is per worker index, never shared.
// Why it is fast (the header gives the GEMM costs):
// - The exact rows, totals, top-k thresholds and per-row counts of entries >= kth are computed once per
//   block and read by every point; only quantisers need rows of their own.
// - Measure sums the smaller side: the set when 2 |S| <= p + 1, else o less the missing rows (found with
//   a byte mark array, cleared after), so a near-full set costs O(p) plus its few missing rows.
// - A set shared by a GQA group is summed once for all its query heads (GroupSums). The evaluator's
//   buffers (kept sets, scratch, sums) only grow: its part of the step loop does not allocate once warm.

namespace kvsim {
namespace {

using ConstRowMap = Eigen::Map<const RowMatrixXf>;

// Blocks of decode steps whose attention rows are held at once: at most kMaxStepBlock steps and
// kMaxBlockFloats probabilities (every copy: the exact one and one per quantiser), or fewer under
// QualityOptions::max_attention_bytes. The exact attention of a whole layer is held in one block instead
// when it fits max_attention_bytes: the policies then see it before the layer begins.
constexpr int64_t kMaxStepBlock = 64;
constexpr int64_t kMaxBlockFloats = int64_t{3} << 24;  // 192 MiB

// A fixed-bin histogram over [0, range] for percentiles in bounded memory (resolution range / bins);
// mean, minimum and maximum are exact.
class Distribution {
 public:
  explicit Distribution(double range) : range_(range), bins_(static_cast<size_t>(range * kBinsPerUnit), 0) {}
  void Add(double x) {
    sum_ += x;
    ++count_;
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
    const double clamped = std::min(std::max(x, 0.0), range_);
    const size_t bin = std::min(bins_.size() - 1, static_cast<size_t>(clamped / range_ * bins_.size()));
    ++bins_[bin];
  }
  // The q-quantile (nearest rank), as the centre of its bin.
  double Quantile(double q) const {
    if (count_ == 0) return 0;
    const int64_t rank = static_cast<int64_t>(std::llround(q * (count_ - 1)));
    int64_t seen = 0;
    for (size_t b = 0; b < bins_.size(); ++b) {
      seen += bins_[b];
      if (seen > rank) {
        const double centre = (b + 0.5) * range_ / bins_.size();
        return std::min(std::max(centre, min_), max_);
      }
    }
    return max_;
  }
  MetricSummary Summary(bool low_is_bad) const {
    MetricSummary s;
    s.count = count_;
    if (count_ == 0) return s;
    s.mean = sum_ / count_;
    s.p10 = Quantile(low_is_bad ? 0.1 : 0.9);
    s.worst = low_is_bad ? min_ : max_;
    return s;
  }

 private:
  static constexpr int kBinsPerUnit = 10000;
  double range_;
  std::vector<int64_t> bins_;
  double sum_ = 0;
  int64_t count_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
};

struct Accumulator {
  Distribution recall{1.0}, error{2.0}, overlap{1.0};
  double kept_sum = 0, budget_sum = 0;
  int64_t budget_count = 0;
  std::vector<double> layer_recall, layer_error, head_recall, head_error;
  std::vector<int64_t> layer_count, head_count;
};

// Per-head work of one block of decode steps: attention rows and outputs, exact or as a quantiser's
// dequantised K/V make them.
struct HeadBlock {
  // (G * steps) x cols, row j * steps + s, viewing `storage`: the storage only grows, so blocks of
  // growing width reuse one allocation (no page faults and no reallocation per block).
  Eigen::Map<RowMatrixXf> probs{nullptr, 0, 0};
  std::unique_ptr<float[]> storage;  // uninitialised (the GEMM writes every entry), huge pages advised
  int64_t storage_floats = 0;
  RowMatrixXf outputs;         // (G * steps) x d
  RowMatrixXf queries;         // (G * steps) x d, the block's queries, member-major
  std::vector<double> totals;  // row sums of probs
  std::vector<float> kth;      // top-k threshold per row (exact blocks only)
  std::vector<int64_t> hits;   // entries >= kth per row (exact blocks only)
  std::vector<float> heap;     // KthLargest's scratch

  // REQUIRES: rows * cols <= capacity; the storage grows to `capacity` floats at most once per size.
  void Reshape(int64_t rows, int64_t cols, int64_t capacity) {
    if (storage_floats < rows * cols) {
      storage.reset();
      storage.reset(new float[capacity]);
      storage_floats = capacity;
      AdviseHugePages(storage.get(), capacity * sizeof(float));
    }
    new (&probs) Eigen::Map<RowMatrixXf>(storage.get(), rows, cols);
  }
};

// How a layer's decode steps are held (see kMaxBlockFloats): the exact attention whole or not, and the
// steps per block of the quantisers' copies (and of the exact one when not whole).
struct BlockPlan {
  bool exact_whole = false;
  int64_t block_steps = 1;
};

// `step_floats`: one copy of one step's rows (group size x heads x sequence length).
BlockPlan PlanBlocks(int64_t steps_total, int64_t step_floats, int quantisers, int64_t max_attention_bytes) {
  BlockPlan plan;
  const int64_t max_floats = max_attention_bytes / static_cast<int64_t>(sizeof(float));
  plan.exact_whole = steps_total > 0 && steps_total * step_floats <= max_floats;
  const int64_t copies = std::max<int64_t>(1, quantisers + (plan.exact_whole ? 0 : 1));
  const int64_t max_steps =
      std::max<int64_t>(1, std::min(kMaxStepBlock, std::min(kMaxBlockFloats, max_floats) / (copies * step_floats)));
  // As many blocks as the bound requires, of equal size (no small last block: less memory, fuller GEMMs).
  const int64_t num_blocks = std::max<int64_t>(1, (steps_total + max_steps - 1) / max_steps);
  plan.block_steps = std::max<int64_t>(1, (steps_total + num_blocks - 1) / num_blocks);
  return plan;
}

// Where one step's rows are in a block: member j's row is j * steps + s.
struct BlockRows {
  int64_t steps = 0, s = 0;
  int64_t row(int j) const { return j * steps + s; }
};

struct Point {
  QualityPoint meta;
  std::unique_ptr<TokenPolicy> policy;
  bool quantised = false;
  std::vector<HeadBlock> blocks;  // quantisers only: per head, the dequantised attention of the block
  std::vector<KeptSet> kept;      // per head: the policy's sets at the current step
  Accumulator acc;
};

// One query's metrics against one kept set.
struct Measurement {
  double recall = 0, error = 0, overlap = 0;
};

// What the policy's attention computes for one query: its full rows (probs, their total, outputs) and
// the value rows behind them.
struct Approx {
  const float* probs = nullptr;
  double total = 0;
  const float* outputs = nullptr;
  const float* values_hat = nullptr;  // null: exact values
  int64_t values_exact_from = 0;
};

// The value rows a policy's attention reads: row i is alt's for i < split (a quantiser's dequantised
// values), base's otherwise.
struct ValueRows {
  const float* base = nullptr;
  const float* alt = nullptr;
  int64_t split = 0;
  int d = 0;
  const float* operator()(int64_t i) const { return (i < split ? alt : base) + i * d; }
};

// Buffers of the weighted sums, kept between calls (they only grow).
struct SumScratch {
  std::vector<const float*> pointers;  // the set's value rows
  std::vector<float> staging;          // WeightedRowSums' gathered rows
};

// out[r * d + t] = sum over the set, in set order, of w[r * stride + n] * value(set[n])[t] for `rows`
// rows (WeightedRowSums of util/float_gemm.h over the set's value rows).
void SetWeightedSums(const std::vector<int32_t>& set, const float* w, size_t stride, int rows, ValueRows value, int d,
                     float* out, SumScratch* scratch) {
  std::vector<const float*>& pointers = scratch->pointers;
  pointers.resize(set.size());
  for (size_t n = 0; n < set.size(); ++n) pointers[n] = value(set[n]);
  WeightedRowSums(pointers.data(), set.size(), w, stride, rows, d, out, d, &scratch->staging);
}

// The value rows of `approx` for head c.
ValueRows ValuesOf(const HeadContext& c, const Approx& approx) {
  ValueRows rows;
  rows.base = c.values;
  rows.d = c.head_dim;
  if (approx.values_hat != nullptr) {
    rows.alt = approx.values_hat;
    rows.split = approx.values_exact_from;
  }
  return rows;
}

class Measurer {
 public:
  Measurer(int64_t seq_len, int head_dim) : mark_(seq_len, 0), acc_(head_dim) {}

  // For a set shared by `rows` query heads that Measure sums directly (2 |set| <= p + 1): the unnormalised
  // o' of each row, approx_probs[j] restricted to the set applied to the values, into a rows x d buffer
  // (valid until the next call), exactly as Measure would sum each alone. GroupWeights(j) is then row j's
  // approx_probs on the set, in set order.
  const float* GroupWeights(int j, size_t size) const { return group_weights_.data() + j * size; }
  const float* GroupSums(const HeadContext& c, const std::vector<int32_t>& set, const float* const* approx_probs,
                         int rows, const Approx& approx) {
    const int d = c.head_dim;
    const size_t size = set.size();
    group_weights_.resize(rows * size);
    group_sums_.resize(static_cast<size_t>(rows) * d);
    for (int j = 0; j < rows; ++j) {
      for (size_t n = 0; n < size; ++n) group_weights_[j * size + n] = approx_probs[j][set[n]];
    }
    SetWeightedSums(set, group_weights_.data(), size, rows, ValuesOf(c, approx), d, group_sums_.data(), &sums_scratch_);
    return group_sums_.data();
  }

  // a/total/o: the exact attention of the query at position p; `approx`: the attention the policy's
  // cache computes over every token (equal to the exact one except for quantisers). o' is approx
  // restricted to `set` and renormalised: sum over set of approx.probs_i v~_i / sum over set of probs_i.
  // `gathered` and `gathered_weights`: this row's sums and set weights from GroupSums, when the set was
  // summed for the whole group.
  Measurement Measure(const HeadContext& c, int64_t p, const float* a, double total, const float* o, float kth, int k,
                      int64_t row_hits, const std::vector<int32_t>& set, const Approx& approx,
                      const float* gathered = nullptr, const float* gathered_weights = nullptr) {
    Measurement m;
    const int d = c.head_dim;
    double mass = 0;
    int64_t hits = 0;
    const float* ap = approx.probs;
    const ValueRows value = ValuesOf(c, approx);
    double kept = 0;  // approx mass on the set
    if (2 * static_cast<int64_t>(set.size()) <= p + 1) {
      // The set's approx probabilities (from GroupSums when the sums were gathered) and exact ones (the
      // same when the policy's attention is exact), in set order; masses summed by LaneSum.
      const size_t size = set.size();
      const float* w = gathered_weights;
      if (w == nullptr) {
        weights_.resize(size);
        for (size_t n = 0; n < size; ++n) weights_[n] = ap[set[n]];
        w = weights_.data();
      }
      const float* x = w;
      if (ap != a) {
        exact_.resize(size);
        for (size_t n = 0; n < size; ++n) exact_[n] = a[set[n]];
        x = exact_.data();
      }
      mass = LaneSum(x, size);
      kept = x == w ? mass : LaneSum(w, size);
      hits = (Eigen::Map<const Eigen::ArrayXf>(x, size) >= kth).count();
      if (gathered != nullptr) {
        acc_ = Eigen::Map<const Eigen::VectorXf>(gathered, d);
      } else {
        SetWeightedSums(set, w, set.size(), 1, value, d, acc_.data(), &sums_scratch_);
      }
    } else {
      // Sum over the complement: cheaper when most tokens are kept, and exact (0 error) when all are.
      // The top-k hits likewise: the row's entries >= kth less those outside the set.
      // A set of p + 1 distinct positions in [0, p] is everything: nothing is missing.
      double missing = 0, missing_approx = 0;
      int64_t missing_hits = 0;
      acc_ = Eigen::Map<const Eigen::VectorXf>(approx.outputs, d);
      if (static_cast<int64_t>(set.size()) <= p) {
        uint8_t* mark = mark_.data();  // a local pointer: byte stores could alias the vector's own
        for (int32_t i : set) mark[i] = 1;
        for (int64_t i = 0; i <= p; ++i) {
          if (mark[i]) continue;
          missing += a[i];
          missing_approx += ap[i];
          if (a[i] >= kth) ++missing_hits;
          Axpy(-ap[i], value(i), d);
        }
        for (int32_t i : set) mark[i] = 0;
      }
      mass = total - missing;
      kept = approx.total - missing_approx;
      hits = row_hits - missing_hits;
    }
    m.overlap = static_cast<double>(std::min<int64_t>(hits, k)) / k;
    m.recall = total > 0 ? mass / total : 0;
    double diff = 0, norm = 0;
    for (int t = 0; t < d; ++t) {
      const double ref = o[t] / total;
      const double out = kept > 0 ? acc_(t) / kept : 0.0;
      diff += (ref - out) * (ref - out);
      norm += ref * ref;
    }
    m.error = norm > 0 ? std::sqrt(diff / norm) : 0;
    return m;
  }

 private:
  // Float SIMD accumulation: o' needs ~1e-6 relative accuracy, far below any error worth reporting.
  void Axpy(float alpha, const float* x, int d) { acc_.noalias() += alpha * Eigen::Map<const Eigen::VectorXf>(x, d); }

  std::vector<uint8_t> mark_;
  std::vector<float> weights_;                     // approx probabilities of the set, in set order
  std::vector<float> exact_;                       // exact probabilities of the set, in set order (quantisers only)
  std::vector<float> group_weights_, group_sums_;  // GroupSums(): rows x |set|, rows x d
  SumScratch sums_scratch_;
  Eigen::VectorXf acc_;
};

// Attention rows and outputs for decode steps [s0, s0 + steps) of one head, by GEMMs over the block.
// With `policy` (a quantiser) and its head index, the rows use the policy's dequantised keys and values
// (Kv()), with each step's full-precision residual rows patched in exactly.
void ComputeBlock(const HeadContext& c, int64_t s0, int64_t steps, int top_k, const TokenPolicy* policy, int head,
                  HeadBlock* block) {
  const int64_t first = c.prompt_len + s0;
  const int64_t cols = first + steps;
  const int d = c.head_dim;
  const KvOverride last = policy != nullptr ? policy->Kv(head, cols - 1) : KvOverride();
  ConstRowMap keys(last.keys != nullptr ? last.keys : c.keys, cols, d);
  ConstRowMap values(last.values != nullptr ? last.values : c.values, cols, d);
  // Capacity for this sample's widest block of as many steps, so the storage is allocated once.
  block->Reshape(c.group_size * steps, cols, c.group_size * steps * c.seq_len);
  // The group's queries as one matrix: one GEMM (one packing of the keys) for all its query heads.
  block->queries.resize(c.group_size * steps, d);
  for (int j = 0; j < c.group_size; ++j) {
    block->queries.middleRows(j * steps, steps) = ConstRowMap(c.query(j, first), steps, d);
  }
  GemmABt(block->queries.data(), d, keys.data(), d, block->probs.rows(), cols, d, block->probs.data(), cols);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  block->totals.resize(block->probs.rows());
  block->kth.resize(block->probs.rows());
  block->hits.resize(block->probs.rows());
  for (int64_t r = 0; r < block->probs.rows(); ++r) {
    const int64_t p = first + r % steps;
    auto row = block->probs.row(r);
    if (last.keys != nullptr) {  // exact logits for this step's full-precision key residual
      const KvOverride kv = policy->Kv(head, p);
      Eigen::Map<const Eigen::VectorXf> q(c.query(static_cast<int>(r / steps), p), d);
      for (int64_t i = kv.keys_exact_from; i <= p; ++i) row(i) = Eigen::Map<const Eigen::VectorXf>(c.key(i), d).dot(q);
    }
    row.tail(cols - p - 1).setZero();
    block->totals[r] = SoftmaxRow(row.data(), p + 1, scale);
    if (policy != nullptr) continue;
    block->kth[r] = KthLargest(row.data(), p + 1, std::min<int64_t>(top_k, p + 1), &block->heap);
    block->hits[r] = (row.head(p + 1).array() >= block->kth[r]).count();
  }
  block->outputs.resize(block->probs.rows(), d);
  GemmAB(block->probs.data(), cols, values.data(), d, block->probs.rows(), d, cols, block->outputs.data(), d);
  if (last.values == nullptr) return;
  for (int64_t r = 0; r < block->probs.rows(); ++r) {  // exact values for the residual rows
    const int64_t p = first + r % steps;
    const KvOverride kv = policy->Kv(head, p);
    for (int64_t i = kv.values_exact_from; i <= p; ++i) {
      const float w = block->probs(r, i);
      for (int t = 0; t < d; ++t) block->outputs(r, t) += w * (c.value(i)[t] - kv.values[i * d + t]);
    }
  }
}

// One worker's buffers for the decode steps.
struct StepScratch {
  StepScratch(int64_t seq_len, int head_dim) : measurer(seq_len, head_dim) {}
  Measurer measurer;
  LayerStep step;
  std::vector<const float*> approx_rows;  // per query head of a group: its attention row
};

// Decode steps per task of the step loop: a worker takes one point for this many steps (their attention
// rows, ~1 MB per step and KV head at 32K tokens, stay in the last-level cache from point to point).
constexpr int64_t kStepsPerTask = 8;

}  // namespace

struct QualityEvaluator::Impl {
  AttentionTraceHeader header;
  QualityOptions options;
  std::vector<Point> points;
  int num_threads = 1;
  std::vector<HeadBlock> blocks;  // exact attention per head, reused across layers
  // Per head, shared by the policies of one layer (the cache is thread-safe; a mutex does not move).
  std::vector<std::unique_ptr<PromptAttentionCache>> caches;
  int64_t num_samples = 0, num_steps = 0, num_dots = 0;

  absl::Status AddSample(const AttentionSample& sample);
  void EvaluateLayer(const AttentionSample& sample, int layer_index);
  // The attention of decode steps [s0, s0 + steps) of every head: each quantiser's, and the exact one when
  // `exact` (it is not when the layer's is held whole); one task per (copy, head).
  void ComputeBlocks(const std::vector<HeadContext>& heads, int64_t s0, int64_t steps, bool exact);
  // One decode step at position p of one point; `exact` and `quantised` say where the step's rows are in
  // `blocks` and in the quantisers' blocks.
  void StepPoint(const std::vector<HeadContext>& heads, int64_t p, BlockRows exact, BlockRows quantised,
                 int layer_index, Point& point, StepScratch& scratch) const;
};

QualityEvaluator::QualityEvaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
QualityEvaluator::~QualityEvaluator() = default;

absl::StatusOr<std::unique_ptr<QualityEvaluator>> QualityEvaluator::Create(const AttentionTraceHeader& header,
                                                                           const QualityOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateHeader(header));
  if (options.policies.empty()) return absl::InvalidArgumentError("no policies given");
  if (options.budget_tokens.empty() && options.budget_ratios.empty()) {
    return absl::InvalidArgumentError("no budgets given (tokens or ratios)");
  }
  for (int64_t b : options.budget_tokens) {
    if (b < 1 || b > kMaxQualityBudgetTokens) {
      return absl::InvalidArgumentError(
          absl::StrCat("budget ", b, " tokens: must be in [1, ", kMaxQualityBudgetTokens, "]"));
    }
  }
  for (size_t i = 0; i < options.policies.size(); ++i) {
    if (std::find(options.policies.begin(), options.policies.begin() + i, options.policies[i]) !=
        options.policies.begin() + i) {
      return absl::InvalidArgumentError(absl::StrCat("policy '", options.policies[i], "' is given twice"));
    }
  }
  for (double r : options.budget_ratios) {
    if (!(r > 0 && r <= 1)) return absl::InvalidArgumentError(absl::StrCat("budget ratio ", r, ": must be in (0, 1]"));
  }
  if (options.top_k < 1) return absl::InvalidArgumentError("top_k must be >= 1");
  if (options.max_attention_bytes < 0) return absl::InvalidArgumentError("max_attention_bytes must be >= 0");
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads must be in [0, ", kMaxThreads, "] (0 = every core), got ", options.num_threads));
  }
  auto impl = std::make_unique<Impl>();
  impl->header = header;
  impl->options = options;
  impl->num_threads = ResolveThreadCount(options.num_threads);
  std::vector<std::string> names = options.policies;
  if (std::find(names.begin(), names.end(), "oracle_select") == names.end()) names.push_back("oracle_select");
  std::vector<int64_t> tokens = options.budget_tokens;
  std::vector<double> ratios = options.budget_ratios;
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  std::sort(ratios.begin(), ratios.end());
  ratios.erase(std::unique(ratios.begin(), ratios.end()), ratios.end());
  const size_t num_layers = header.kept_layers.size(), num_heads = header.num_kept_heads();
  for (const std::string& name : names) {
    for (size_t b = 0; b < tokens.size() + ratios.size(); ++b) {
      Point point;
      KVSIM_ASSIGN_OR_RETURN(point.policy, CreateTokenPolicy(name, TokenPolicyOptions{options.seed}));
      KVSIM_RETURN_IF_ERROR(point.policy->CheckTrace(header));
      point.meta.policy = point.policy->Name();
      point.meta.kind = TokenPolicyKindName(point.policy->kind());
      point.quantised = point.policy->kind() == TokenPolicy::Kind::kQuantize;
      point.meta.is_ratio = b >= tokens.size();
      point.meta.budget_value = point.meta.is_ratio ? ratios[b - tokens.size()] : tokens[b];
      point.acc.layer_recall.assign(num_layers, 0);
      point.acc.layer_error.assign(num_layers, 0);
      point.acc.layer_count.assign(num_layers, 0);
      point.acc.head_recall.assign(num_heads, 0);
      point.acc.head_error.assign(num_heads, 0);
      point.acc.head_count.assign(num_heads, 0);
      impl->points.push_back(std::move(point));
    }
  }
  return std::unique_ptr<QualityEvaluator>(new QualityEvaluator(std::move(impl)));
}

absl::Status QualityEvaluator::AddSample(const AttentionSample& sample) { return impl_->AddSample(sample); }

absl::Status QualityEvaluator::Impl::AddSample(const AttentionSample& sample) {
  if (auto s = ValidateSample(header, sample); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sample ", num_samples, ": ", s.message()));
  }
  for (Point& point : points) {
    const double budget = point.meta.is_ratio
                              ? std::max<double>(1, std::llround(point.meta.budget_value * sample.prompt_len))
                              : point.meta.budget_value;
    point.acc.budget_sum += budget;
    ++point.acc.budget_count;
  }
  for (size_t l = 0; l < header.kept_layers.size(); ++l) EvaluateLayer(sample, static_cast<int>(l));
  ++num_samples;
  num_steps += sample.num_decode_steps;
  return absl::OkStatus();
}

void QualityEvaluator::Impl::EvaluateLayer(const AttentionSample& sample, int layer_index) {
  const size_t num_heads = header.kept_kv_heads.size();
  std::vector<HeadContext> heads(num_heads);
  for (size_t h = 0; h < num_heads; ++h) {
    const HeadTensors& t = sample.heads[layer_index * num_heads + h];
    HeadContext& c = heads[h];
    c.layer = t.layer;
    c.num_model_layers = header.num_layers;
    c.kv_head = t.kv_head;
    c.group_size = header.group_size();
    c.head_dim = header.head_dim;
    c.prompt_len = sample.prompt_len;
    c.seq_len = sample.seq_len();
    c.query_start = sample.query_start;
    c.keys = t.keys.data();
    c.values = t.values.data();
    c.queries = t.queries.data();
    c.column_sums = t.column_sums.empty() ? nullptr : t.column_sums.data();
    c.rope = header.rope;
  }
  caches.resize(num_heads);
  for (size_t h = 0; h < num_heads; ++h) {
    if (caches[h] == nullptr) caches[h] = std::make_unique<PromptAttentionCache>();
    caches[h]->Reset();  // keeps its storage
    heads[h].prompt_cache = caches[h].get();
  }
  const int64_t g = header.group_size(), n = sample.seq_len(), steps_total = sample.num_decode_steps;
  int quantisers = 0;
  for (const Point& point : points) quantisers += point.quantised ? 1 : 0;
  const auto [exact_whole, block_steps] =
      PlanBlocks(steps_total, g * static_cast<int64_t>(num_heads) * n, quantisers, options.max_attention_bytes);
  blocks.resize(num_heads);
  ParallelFor(num_threads, exact_whole ? num_heads : 0, [&](size_t h, int) {
    ComputeBlock(heads[h], 0, steps_total, options.top_k, nullptr, 0, &blocks[h]);
    heads[h].decode_attention = DecodeAttention{blocks[h].probs.data(), blocks[h].probs.cols(), steps_total};
  });
  // Every point on its own (each has its own policy and accumulator, the shared prompt caches are
  // thread-safe), so the results do not depend on the number of threads or the order of the points.
  ParallelFor(num_threads, points.size(), [&](size_t i, int) {
    Point& point = points[i];
    const int64_t budget = point.meta.is_ratio
                               ? std::max<int64_t>(1, std::llround(point.meta.budget_value * sample.prompt_len))
                               : static_cast<int64_t>(point.meta.budget_value);
    point.policy->BeginLayer(heads, budget);
  });
  // One per worker of the step loop (ParallelFor numbers at most min(threads, points) of them).
  std::vector<StepScratch> scratch(std::min(num_threads, static_cast<int>(points.size())),
                                   StepScratch(n, header.head_dim));
  for (int64_t s0 = 0; s0 < steps_total; s0 += block_steps) {
    const int64_t steps = std::min(block_steps, steps_total - s0);
    ComputeBlocks(heads, s0, steps, /*exact=*/!exact_whole);
    for (int64_t t0 = 0; t0 < steps; t0 += kStepsPerTask) {
      const int64_t t1 = std::min(steps, t0 + kStepsPerTask);
      ParallelFor(num_threads, points.size(), [&](size_t i, int worker) {
        for (int64_t s = t0; s < t1; ++s) {
          const int64_t p = sample.prompt_len + s0 + s;
          const BlockRows exact = exact_whole ? BlockRows{steps_total, s0 + s} : BlockRows{steps, s};
          StepPoint(heads, p, exact, BlockRows{steps, s}, layer_index, points[i], scratch[worker]);
        }
      });
    }
    for (int64_t s = 0; s < steps; ++s) {
      num_dots += static_cast<int64_t>(num_heads) * g * (sample.prompt_len + s0 + s + 1);
    }
  }
}

void QualityEvaluator::Impl::ComputeBlocks(const std::vector<HeadContext>& heads, int64_t s0, int64_t steps,
                                           bool exact) {
  std::vector<std::pair<Point*, size_t>> tasks;  // (quantiser, or null for the exact rows; head)
  for (size_t h = 0; exact && h < heads.size(); ++h) tasks.emplace_back(nullptr, h);
  for (Point& point : points) {
    if (!point.quantised) continue;
    point.blocks.resize(heads.size());
    for (size_t h = 0; h < heads.size(); ++h) tasks.emplace_back(&point, h);
  }
  ParallelFor(num_threads, tasks.size(), [&](size_t i, int) {
    const auto [point, h] = tasks[i];
    if (point == nullptr) {
      ComputeBlock(heads[h], s0, steps, options.top_k, nullptr, 0, &blocks[h]);
    } else {
      ComputeBlock(heads[h], s0, steps, options.top_k, point->policy.get(), static_cast<int>(h), &point->blocks[h]);
    }
  });
}

void QualityEvaluator::Impl::StepPoint(const std::vector<HeadContext>& heads, int64_t p, BlockRows exact,
                                       BlockRows quantised, int layer_index, Point& point, StepScratch& scratch) const {
  LayerStep& step = scratch.step;
  step.position = p;
  step.heads.clear();
  for (const HeadBlock& block : blocks) {
    step.heads.push_back(HeadStep{block.probs.row(exact.row(0)).data(), exact.steps * block.probs.cols()});
  }
  const int k_top = static_cast<int>(std::min<int64_t>(options.top_k, p + 1));
  point.kept.resize(heads.size());  // the sets keep their storage from step to step
  point.policy->Step(step, &point.kept);
  const std::vector<KeptSet>& kept = point.kept;
  Accumulator& acc = point.acc;
  Measurer& measurer = scratch.measurer;
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& c = heads[h];
    const HeadBlock& b = blocks[h];
    const KvOverride kv = point.quantised ? point.policy->Kv(static_cast<int>(h), p) : KvOverride();
    const int head_index = layer_index * static_cast<int>(heads.size()) + static_cast<int>(h);
    const HeadBlock& q = point.quantised ? point.blocks[h] : b;
    const BlockRows rows = point.quantised ? quantised : exact;  // of q
    // A small set shared by the group: its value rows are read once for all query heads.
    const float* gathered = nullptr;
    const std::vector<int32_t>& shared = kept[h].per_query[0];
    if (kept[h].per_query.size() == 1 && c.group_size > 1 && 2 * static_cast<int64_t>(shared.size()) <= p + 1) {
      scratch.approx_rows.resize(c.group_size);
      for (int j = 0; j < c.group_size; ++j) scratch.approx_rows[j] = q.probs.row(rows.row(j)).data();
      gathered = measurer.GroupSums(c, shared, scratch.approx_rows.data(), c.group_size,
                                    Approx{nullptr, 0, nullptr, kv.values, kv.values_exact_from});
    }
    for (int j = 0; j < c.group_size; ++j) {
      const std::vector<int32_t>& set = kept[h].per_query.size() == 1 ? shared : kept[h].per_query[j];
      const int64_t r = exact.row(j), a = rows.row(j);
      const Approx approx{q.probs.row(a).data(), q.totals[a], q.outputs.row(a).data(), kv.values, kv.values_exact_from};
      const Measurement m =
          measurer.Measure(c, p, b.probs.row(r).data(), b.totals[r], b.outputs.row(r).data(), b.kth[r], k_top,
                           b.hits[r], set, approx, gathered != nullptr ? gathered + j * c.head_dim : nullptr,
                           gathered != nullptr ? measurer.GroupWeights(j, shared.size()) : nullptr);
      acc.recall.Add(m.recall);
      acc.error.Add(m.error);
      acc.overlap.Add(m.overlap);
      acc.kept_sum += static_cast<double>(set.size());
      acc.layer_recall[layer_index] += m.recall;
      acc.layer_error[layer_index] += m.error;
      ++acc.layer_count[layer_index];
      acc.head_recall[head_index] += m.recall;
      acc.head_error[head_index] += m.error;
      ++acc.head_count[head_index];
    }
  }
}

namespace {

void Divide(const std::vector<double>& sums, const std::vector<int64_t>& counts, std::vector<double>* out) {
  out->resize(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) (*out)[i] = counts[i] > 0 ? sums[i] / counts[i] : 0;
}

// Area under y(x) by trapezoids in the given (ascending x) order; one point: y itself.
double Area(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() == 1) return y[0];
  double area = 0;
  for (size_t i = 1; i < x.size(); ++i) area += (x[i] - x[i - 1]) * (y[i] + y[i - 1]) / 2;
  return area;
}

}  // namespace

QualityResults QualityEvaluator::Finish() const {
  const Impl& impl = *impl_;
  QualityResults results;
  results.model = impl.header.model;
  results.synthetic = impl.header.synthetic;
  results.kept_layers = impl.header.kept_layers;
  results.kept_kv_heads = impl.header.kept_kv_heads;
  results.num_samples = impl.num_samples;
  results.num_decode_steps = impl.num_steps;
  results.num_dot_products = impl.num_dots;
  results.top_k = impl.options.top_k;
  for (const Point& point : impl.points) {
    QualityPoint q = point.meta;
    const Accumulator& acc = point.acc;
    q.recall = acc.recall.Summary(true);
    q.error = acc.error.Summary(false);
    q.overlap = acc.overlap.Summary(true);
    q.mean_kept_tokens = q.recall.count > 0 ? acc.kept_sum / q.recall.count : 0;
    q.mean_budget_tokens = acc.budget_count > 0 ? acc.budget_sum / acc.budget_count : 0;
    Divide(acc.layer_recall, acc.layer_count, &q.layer_recall);
    Divide(acc.layer_error, acc.layer_count, &q.layer_error);
    Divide(acc.head_recall, acc.head_count, &q.head_recall);
    Divide(acc.head_error, acc.head_count, &q.head_error);
    results.points.push_back(std::move(q));
  }
  // Areas per (policy, axis), then normalised by oracle_select's.
  for (size_t i = 0; i < results.points.size();) {
    size_t end = i;
    while (end < results.points.size() && results.points[end].policy == results.points[i].policy &&
           results.points[end].is_ratio == results.points[i].is_ratio) {
      ++end;
    }
    std::vector<double> x, recall, error;
    for (size_t k = i; k < end; ++k) {
      x.push_back(results.points[k].budget_value);
      recall.push_back(results.points[k].recall.mean);
      error.push_back(results.points[k].error.mean);
    }
    QualityArea area;
    area.policy = results.points[i].policy;
    area.is_ratio = results.points[i].is_ratio;
    area.recall_area = Area(x, recall);
    area.error_area = Area(x, error);
    results.areas.push_back(area);
    i = end;
  }
  for (QualityArea& area : results.areas) {
    for (const QualityArea& oracle : results.areas) {
      if (oracle.policy != "oracle_select" || oracle.is_ratio != area.is_ratio) continue;
      const double nan = std::numeric_limits<double>::quiet_NaN();
      area.recall_vs_oracle = oracle.recall_area > 0 ? area.recall_area / oracle.recall_area : nan;
      area.error_vs_oracle = oracle.error_area > 0 ? area.error_area / oracle.error_area : nan;
    }
  }
  return results;
}

}  // namespace kvsim
