#include "sim/quality_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrixXf>;

constexpr int64_t kMaxStepBlock = 64;
constexpr int64_t kMaxBlockFloats = int64_t{1} << 25;  // probabilities held per block: 128 MiB

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

struct Point {
  QualityPoint meta;
  std::unique_ptr<TokenPolicy> policy;
  Accumulator acc;
};

// Per-head work of one block of decode steps.
struct HeadBlock {
  RowMatrixXf probs;           // (G * steps) x cols, row j * steps + s
  RowMatrixXf outputs;         // (G * steps) x d
  std::vector<double> totals;  // row sums of probs
  std::vector<float> kth;      // top-k threshold per row
};

// One query's metrics against one kept set.
struct Measurement {
  double recall = 0, error = 0, overlap = 0;
};

class Measurer {
 public:
  Measurer(int64_t seq_len, int head_dim) : mark_(seq_len, 0), acc_(head_dim), ref_(head_dim) {}

  Measurement Measure(const HeadContext& c, int j, int64_t p, const float* a, double total, const float* o,
                      float kth, int k, const std::vector<int32_t>& set, const KvOverride* kv) {
    Measurement m;
    const int d = c.head_dim;
    double mass = 0;
    int64_t hits = 0;
    std::fill(acc_.begin(), acc_.end(), 0.0);
    const bool direct = kv != nullptr || 2 * static_cast<int64_t>(set.size()) <= p + 1;
    for (int32_t i : set) {
      mass += a[i];
      if (a[i] >= kth) ++hits;
      if (direct && kv == nullptr) Axpy(a[i], c.value(i), d);
    }
    m.overlap = static_cast<double>(std::min<int64_t>(hits, k)) / k;
    for (int t = 0; t < d; ++t) ref_[t] = o[t] / total;
    double norm_mass = mass;  // what acc_ must be divided by
    if (kv != nullptr) {
      QuantisedOutput(c, j, p, set, *kv);
      norm_mass = 1;  // acc_ already holds the normalised output
    } else if (!direct) {
      // Sum over the complement: cheaper when most tokens are kept, and exact (0 error) when all are.
      for (int32_t i : set) mark_[i] = 1;
      double missing = 0;
      for (int t = 0; t < d; ++t) acc_[t] = o[t];
      for (int64_t i = 0; i <= p; ++i) {
        if (mark_[i]) continue;
        missing += a[i];
        Axpy(-a[i], c.value(i), d);
      }
      for (int32_t i : set) mark_[i] = 0;
      mass = norm_mass = total - missing;
    }
    m.recall = total > 0 ? mass / total : 0;
    double diff = 0, norm = 0;
    for (int t = 0; t < d; ++t) {
      const double approx = norm_mass > 0 ? acc_[t] / norm_mass : 0.0;
      diff += (ref_[t] - approx) * (ref_[t] - approx);
      norm += ref_[t] * ref_[t];
    }
    m.error = norm > 0 ? std::sqrt(diff / norm) : 0;
    return m;
  }

 private:
  void Axpy(double alpha, const float* x, int d) {
    for (int t = 0; t < d; ++t) acc_[t] += alpha * x[t];
  }

  // acc_ = softmax over the set of q.k~ / sqrt(d), applied to v~.
  void QuantisedOutput(const HeadContext& c, int j, int64_t p, const std::vector<int32_t>& set,
                       const KvOverride& kv) {
    const int d = c.head_dim;
    const float* q = c.query(j, p);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    logits_.resize(set.size());
    double max_logit = -std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < set.size(); ++s) {
      const int64_t i = set[s];
      const float* k = (kv.keys != nullptr && i < kv.keys_exact_from) ? kv.keys + i * d : c.key(i);
      double dot = 0;
      for (int t = 0; t < d; ++t) dot += static_cast<double>(q[t]) * k[t];
      logits_[s] = dot * scale;
      max_logit = std::max(max_logit, logits_[s]);
    }
    double total = 0;
    for (double& l : logits_) total += (l = std::exp(l - max_logit));
    for (size_t s = 0; s < set.size(); ++s) {
      const int64_t i = set[s];
      const float* v = (kv.values != nullptr && i < kv.values_exact_from) ? kv.values + i * d : c.value(i);
      Axpy(logits_[s] / total, v, d);
    }
  }

  std::vector<uint8_t> mark_;
  std::vector<double> acc_, ref_, logits_;
};

// Full attention rows and outputs for decode steps [s0, s0 + steps) of one head.
void ComputeBlock(const HeadContext& c, int64_t s0, int64_t steps, int top_k, HeadBlock* block) {
  const int64_t first = c.prompt_len + s0;
  const int64_t cols = first + steps;
  const int d = c.head_dim;
  ConstRowMap keys(c.keys, cols, d);
  ConstRowMap values(c.values, cols, d);
  block->probs.resize(c.group_size * steps, cols);
  for (int j = 0; j < c.group_size; ++j) {
    ConstRowMap queries(c.query(j, first), steps, d);
    block->probs.middleRows(j * steps, steps).noalias() = queries * keys.transpose();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  block->totals.resize(block->probs.rows());
  block->kth.resize(block->probs.rows());
  std::vector<float> scratch;
  for (int64_t r = 0; r < block->probs.rows(); ++r) {
    const int64_t n = first + r % steps + 1;  // visible keys
    auto row = block->probs.row(r);
    auto visible = row.head(n).array();
    const float max_logit = visible.maxCoeff() * scale;
    visible = (visible * scale - max_logit).exp();
    const double sum = visible.cast<double>().sum();
    visible *= static_cast<float>(1.0 / sum);
    row.tail(cols - n).setZero();
    block->totals[r] = visible.cast<double>().sum();
    const int64_t k = std::min<int64_t>(top_k, n);
    scratch.assign(row.data(), row.data() + n);
    std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<float>());
    block->kth[r] = scratch[k - 1];
  }
  block->outputs.noalias() = block->probs * values;
}

}  // namespace

struct QualityEvaluator::Impl {
  AttentionTraceHeader header;
  QualityOptions options;
  std::vector<Point> points;
  int64_t num_samples = 0, num_steps = 0, num_dots = 0;

  absl::Status AddSample(const AttentionSample& sample);
  void EvaluateLayer(const AttentionSample& sample, int layer_index);
  void StepAll(const std::vector<HeadContext>& heads, const std::vector<HeadBlock>& blocks, int64_t s,
               int64_t steps, int layer_index, Measurer& measurer);
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
    if (b < 1) return absl::InvalidArgumentError(absl::StrCat("budget ", b, " tokens: must be >= 1"));
  }
  for (double r : options.budget_ratios) {
    if (!(r > 0 && r <= 1)) return absl::InvalidArgumentError(absl::StrCat("budget ratio ", r, ": must be in (0, 1]"));
  }
  if (options.top_k < 1) return absl::InvalidArgumentError("top_k must be >= 1");
  auto impl = std::make_unique<Impl>();
  impl->header = header;
  impl->options = options;
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
      point.meta.policy = point.policy->Name();
      point.meta.kind = TokenPolicyKindName(point.policy->kind());
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
  for (Point& point : points) {
    const int64_t budget = point.meta.is_ratio
                               ? std::max<int64_t>(1, std::llround(point.meta.budget_value * sample.prompt_len))
                               : static_cast<int64_t>(point.meta.budget_value);
    point.policy->BeginLayer(heads, budget);
  }
  const int64_t g = header.group_size(), n = sample.seq_len();
  const int64_t block_steps =
      std::max<int64_t>(1, std::min<int64_t>(kMaxStepBlock, kMaxBlockFloats / (g * num_heads * n)));
  std::vector<HeadBlock> blocks(num_heads);
  Measurer measurer(n, header.head_dim);
  for (int64_t s0 = 0; s0 < sample.num_decode_steps; s0 += block_steps) {
    const int64_t steps = std::min(block_steps, sample.num_decode_steps - s0);
    for (size_t h = 0; h < num_heads; ++h) ComputeBlock(heads[h], s0, steps, options.top_k, &blocks[h]);
    for (int64_t s = 0; s < steps; ++s) {
      num_dots += static_cast<int64_t>(num_heads) * g * (sample.prompt_len + s0 + s + 1);
      StepAll(heads, blocks, s, steps, layer_index, measurer);
    }
  }
}

void QualityEvaluator::Impl::StepAll(const std::vector<HeadContext>& heads, const std::vector<HeadBlock>& blocks,
                                     int64_t s, int64_t steps, int layer_index, Measurer& measurer) {
  const int64_t cols = blocks[0].probs.cols();
  const int64_t p = cols - steps + s;
  LayerStep step;
  step.position = p;
  for (const HeadBlock& block : blocks) step.heads.push_back(HeadStep{block.probs.row(s).data(), steps * cols});
  std::vector<KeptSet> kept(heads.size());
  const int k_top = static_cast<int>(std::min<int64_t>(options.top_k, p + 1));
  for (Point& point : points) {
    point.policy->Step(step, &kept);
    const bool quantised = point.policy->kind() == TokenPolicy::Kind::kQuantize;
    Accumulator& acc = point.acc;
    for (size_t h = 0; h < heads.size(); ++h) {
      const HeadContext& c = heads[h];
      const KvOverride kv = quantised ? point.policy->Kv(static_cast<int>(h), p) : KvOverride();
      const int head_index = layer_index * static_cast<int>(heads.size()) + static_cast<int>(h);
      for (int j = 0; j < c.group_size; ++j) {
        const std::vector<int32_t>& set = kept[h].per_query.size() == 1 ? kept[h].per_query[0] : kept[h].per_query[j];
        const int64_t r = j * steps + s;
        const HeadBlock& b = blocks[h];
        Measurement m = measurer.Measure(c, j, p, b.probs.row(r).data(), b.totals[r], b.outputs.row(r).data(),
                                         b.kth[r], k_top, set, quantised ? &kv : nullptr);
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
