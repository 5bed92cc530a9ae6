#include "sim/eval/llama_session.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/avx2_gemm.h"
#include "util/cpu_features.h"
#include "util/float_gemm.h"
#include "util/status_macros.h"

namespace kvsim {

struct LlamaSession::Scratch {
  std::vector<float> xn, q, k, v, attn, proj, gate, up;
  std::vector<float> logits;  // per KV head: group x capacity raw q.k (decode)
  std::vector<float> probs;   // per KV head: group x capacity softmax rows (for the policy)
  std::vector<float> weights, head_out, qrow;
  std::vector<float> prefill_logits;  // rows x rows
  std::vector<int32_t> set;
  std::vector<KeptSet> kept;
  LayerStep step;
};

namespace {

// x[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * w for each row (the mean in double).
void RmsNorm(const float* x, int64_t rows, int h, const float* w, double eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * h;
    double sum = 0;
    for (int i = 0; i < h; ++i) sum += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum / h) + static_cast<float>(eps));
    for (int i = 0; i < h; ++i) out[r * h + i] = w[i] * (xr[i] * inv);
  }
}

// y[i] = a[i * lda ..] . x for i < m: one row against many (the GEMM kernels' tiles waste most of their
// work on a single row). AVX2+FMA where UseAvx2Fma(), Eigen otherwise.
void MatVec(const float* a, int64_t lda, const float* x, int64_t m, int64_t k, float* y) {
  if (UseAvx2Fma()) {
    Avx2MatVec(a, lda, x, m, k, y);
    return;
  }
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix, 0, Eigen::OuterStride<>> matrix(a, m, k, Eigen::OuterStride<>(lda));
  Eigen::Map<Eigen::VectorXf>(y, m).noalias() = matrix * Eigen::Map<const Eigen::VectorXf>(x, k);
}

// y = x W^T (+ b): rows x out from rows x in and out x in.
void Linear(const float* x, int64_t rows, int64_t in, const std::vector<float>& w, const std::vector<float>& b,
            int64_t out, float* y) {
  if (rows == 1) {
    MatVec(w.data(), in, x, out, in, y);
  } else {
    GemmABt(x, in, w.data(), in, rows, out, in, y, out);
  }
  if (!b.empty()) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < out; ++i) y[r * out + i] += b[i];
    }
  }
}

// Rotates `heads` vectors of d floats at position p (rotate_half: pairs (i, i + d/2)).
void ApplyRotary(float* x, int heads, int d, const float* cos, const float* sin) {
  const int half = d / 2;
  for (int h = 0; h < heads; ++h) {
    float* v = x + h * d;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i + half] + a * sin[i + half];
    }
  }
}

void RotaryTables(const RopeFrequencies& f, int64_t p, int d, std::vector<float>* cos, std::vector<float>* sin) {
  const int half = d / 2;
  cos->resize(d);
  sin->resize(d);
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(p) * f.inv_freq[i];
    const float c = static_cast<float>(std::cos(static_cast<double>(angle))) * f.attention_scaling;
    const float s = static_cast<float>(std::sin(static_cast<double>(angle))) * f.attention_scaling;
    (*cos)[i] = (*cos)[i + half] = c;
    (*sin)[i] = (*sin)[i + half] = s;
  }
}

// Softmax over row[0..n) of scale * row, in place: util/float_gemm.h's exponentials and fixed-order double
// sum (SIMD where the CPU has it), then a float multiplication by the reciprocal.
void SoftmaxInPlace(float* row, int64_t n, float scale) {
  const float m = MaxValue(row, n) * scale;
  const double sum = ExpScaledLaneSum(row, n, scale, m);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) row[i] *= inv;
}

bool IsOracleEvict(const std::string& spec) {
  for (absl::string_view part : absl::StrSplit(spec, '+')) {
    if (part == "oracle_evict") return true;
  }
  return false;
}

}  // namespace

PromptCaches::PromptCaches(int num_layers, int num_kv_heads) : num_kv_heads_(num_kv_heads) {
  for (int i = 0; i < num_layers * num_kv_heads; ++i) caches_.push_back(std::make_unique<PromptAttentionCache>());
}

absl::Status CheckClosedLoopPolicy(const std::string& spec) {
  if (IsOracleEvict(spec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("policy '", spec,
                     "' cannot run closed-loop: oracle_evict ranks prompt tokens by the attention of every "
                     "later decode step, which does not exist before those steps are generated"));
  }
  return absl::OkStatus();
}

absl::Status CheckPolicyFitsModel(const TokenPolicy& policy, const std::string& spec, const LlamaModel& model) {
  AttentionTraceHeader layout = TraceLayout(model.config);
  layout.model = model.source;
  if (absl::Status s = policy.CheckTrace(layout); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy '", spec, "' cannot run on model ", model.source, ": ", s.message()));
  }
  return absl::OkStatus();
}

LlamaSession::LlamaSession(const LlamaModel& model, int64_t capacity_tokens, int64_t query_window)
    : model_(model),
      query_window_(std::max<int64_t>(0, query_window)),
      config_(model.config),
      capacity_(std::max<int64_t>(1, capacity_tokens)),
      kv_heads_(model.config.num_kv_heads),
      group_(model.config.group_size()),
      d_(model.config.head_dim),
      scratch_(std::make_unique<Scratch>()) {
  const int n = config_.num_layers * kv_heads_;
  keys_.assign(n, std::vector<float>(capacity_ * d_, 0.0f));
  values_.assign(n, std::vector<float>(capacity_ * d_, 0.0f));
  queries_.assign(n, {});  // sized by Prefill, once query_start_ is known
  column_sums_.assign(n, {});
}

LlamaSession::~LlamaSession() = default;

std::unique_ptr<LlamaSession> LlamaSession::Clone() const {
  auto copy = std::make_unique<LlamaSession>(model_, capacity_, query_window_);
  copy->keys_ = keys_;
  copy->values_ = values_;
  copy->queries_ = queries_;
  copy->column_sums_ = column_sums_;
  copy->length_ = length_;
  copy->prompt_len_ = prompt_len_;
  copy->query_start_ = query_start_;
  return copy;
}

absl::Status LlamaSession::CheckIds(absl::Span<const int32_t> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", ids[i], " at position ", length_ + i,
                                                     " is outside the vocabulary [0, ", config_.vocab_size, ")"));
    }
  }
  if (length_ + static_cast<int64_t>(ids.size()) > capacity_) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence of ", length_ + ids.size(), " tokens exceeds the session's capacity of ", capacity_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> LlamaSession::Prefill(absl::Span<const int32_t> ids, bool all_logits) {
  if (length_ != 0) return absl::FailedPreconditionError("Prefill called on a session that already holds tokens");
  if (ids.empty()) return absl::InvalidArgumentError("empty prompt");
  KVSIM_RETURN_IF_ERROR(CheckIds(ids));
  const int h = config_.hidden_size;
  const int64_t rows = ids.size();
  query_start_ = query_window_ > 0 ? std::max<int64_t>(0, rows - query_window_) : 0;
  for (std::vector<float>& q : queries_) q.assign(group_ * (capacity_ - query_start_) * d_, 0.0f);
  std::vector<float> x(rows * h);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(model_.embed.data() + int64_t{ids[r]} * h, h, x.data() + r * h);
  KVSIM_RETURN_IF_ERROR(Forward(0, rows, &x));
  prompt_len_ = rows;
  if (all_logits) return Logits(x.data(), rows);
  return Logits(x.data() + (rows - 1) * h, 1);
}

absl::StatusOr<std::vector<float>> LlamaSession::Decode(int32_t id) {
  if (length_ == 0) return absl::FailedPreconditionError("Decode before Prefill");
  KVSIM_RETURN_IF_ERROR(CheckIds(absl::MakeConstSpan(&id, 1)));
  const int h = config_.hidden_size;
  std::vector<float> x(model_.embed.data() + int64_t{id} * h, model_.embed.data() + int64_t{id + 1} * h);
  KVSIM_RETURN_IF_ERROR(Forward(length_, 1, &x));
  ++decode_steps_;
  return Logits(x.data(), 1);
}

std::vector<float> LlamaSession::Logits(const float* hidden, int64_t rows) const {
  std::vector<float> logits(rows * config_.vocab_size);
  if (rows == 1) {
    MatVec(model_.output_weights(), config_.hidden_size, hidden, config_.vocab_size, config_.hidden_size,
           logits.data());
    return logits;
  }
  GemmABt(hidden, config_.hidden_size, model_.output_weights(), config_.hidden_size, rows, config_.vocab_size,
          config_.hidden_size, logits.data(), config_.vocab_size);
  return logits;
}

absl::Status LlamaSession::Forward(int64_t pos0, int64_t rows, std::vector<float>* xp) {
  Scratch& s = *scratch_;
  float* x = xp->data();
  const int h = config_.hidden_size;
  const int qdim = config_.num_heads * d_, kvdim = kv_heads_ * d_, inter = config_.intermediate_size;
  s.xn.resize(rows * h);
  s.q.resize(rows * qdim);
  s.k.resize(rows * kvdim);
  s.v.resize(rows * kvdim);
  s.attn.resize(rows * qdim);
  s.proj.resize(rows * h);
  s.gate.resize(rows * inter);
  s.up.resize(rows * inter);
  const RopeFrequencies freqs = RopeFrequenciesAt(config_, pos0 + rows);
  std::vector<float> cos, sin;
  for (int l = 0; l < config_.num_layers; ++l) {
    const LlamaLayerWeights& w = model_.layers[l];
    RmsNorm(x, rows, h, w.input_norm.data(), config_.rms_norm_eps, s.xn.data());
    Linear(s.xn.data(), rows, h, w.wq, w.bq, qdim, s.q.data());
    Linear(s.xn.data(), rows, h, w.wk, w.bk, kvdim, s.k.data());
    Linear(s.xn.data(), rows, h, w.wv, w.bv, kvdim, s.v.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = pos0 + r;
      RotaryTables(freqs, p, d_, &cos, &sin);
      ApplyRotary(s.q.data() + r * qdim, config_.num_heads, d_, cos.data(), sin.data());
      ApplyRotary(s.k.data() + r * kvdim, kv_heads_, d_, cos.data(), sin.data());
      for (int c = 0; c < kv_heads_; ++c) {
        const int index = l * kv_heads_ + c;
        std::copy_n(s.k.data() + r * kvdim + c * d_, d_, keys_[index].data() + p * d_);
        std::copy_n(s.v.data() + r * kvdim + c * d_, d_, values_[index].data() + p * d_);
        for (int j = 0; j < group_ && p >= query_start_; ++j) {
          std::copy_n(s.q.data() + r * qdim + (c * group_ + j) * d_, d_,
                      queries_[index].data() + (j * (capacity_ - query_start_) + p - query_start_) * d_);
        }
      }
    }
    if (rows > 1 || pos0 == 0) {
      if (pos0 != 0) return absl::InternalError("multi-token forward only from position 0");
      PrefillAttention(l, rows, s.q.data(), s.attn.data());  // reads the queries from s.q
    } else {
      KVSIM_RETURN_IF_ERROR(DecodeAttention(l, pos0, s.q.data(), s.attn.data()));
    }
    Linear(s.attn.data(), rows, qdim, w.wo, w.bo, h, s.proj.data());
    for (int64_t i = 0; i < rows * h; ++i) x[i] += s.proj[i];
    RmsNorm(x, rows, h, w.post_norm.data(), config_.rms_norm_eps, s.xn.data());
    Linear(s.xn.data(), rows, h, w.gate, {}, inter, s.gate.data());
    Linear(s.xn.data(), rows, h, w.up, {}, inter, s.up.data());
    for (int64_t i = 0; i < rows * inter; ++i) {
      const float g = s.gate[i];
      s.gate[i] = g / (1.0f + std::exp(-g)) * s.up[i];
    }
    Linear(s.gate.data(), rows, inter, w.down, {}, h, s.proj.data());
    for (int64_t i = 0; i < rows * h; ++i) x[i] += s.proj[i];
  }
  RmsNorm(x, rows, h, model_.final_norm.data(), config_.rms_norm_eps, x);
  length_ = pos0 + rows;
  return absl::OkStatus();
}

void LlamaSession::PrefillAttention(int l, int64_t rows, const float* q, float* out) {
  Scratch& s = *scratch_;
  const int qdim = config_.num_heads * d_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
  // Blocks of kBlock query rows: a block attends to the keys up to its last row (causal), so memory is
  // kBlock x rows floats and the products skip the masked upper triangle beyond the block.
  constexpr int64_t kBlock = 256;
  s.prefill_logits.resize(std::min(kBlock, rows) * rows);
  s.head_out.resize(std::min(kBlock, rows) * d_);
  for (int c = 0; c < kv_heads_; ++c) {
    const int index = l * kv_heads_ + c;
    std::vector<double> sums(group_ * rows, 0.0);
    for (int j = 0; j < group_; ++j) {
      const int head = c * group_ + j;
      const float* queries = q + head * d_;  // rows x qdim: this head's columns
      for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
        const int64_t count = std::min(kBlock, rows - r0), cols = r0 + count;
        const int64_t lo0 = WindowStart(r0);  // keys before it are outside every row's window
        const int64_t width = cols - lo0;
        float* logits = s.prefill_logits.data();
        GemmABt(queries + r0 * qdim, qdim, keys_[index].data() + lo0 * d_, d_, count, width, d_, logits, width);
        for (int64_t r = 0; r < count; ++r) {
          const int64_t t = r0 + r;
          float* row = logits + r * width;  // columns lo0..cols-1
          const int64_t lo = WindowStart(t) - lo0;
          SoftmaxInPlace(row + lo, t - lo0 + 1 - lo, scale);
          std::fill(row, row + lo, 0.0f);
          std::fill(row + (t - lo0) + 1, row + width, 0.0f);
          for (int64_t i = lo; i <= t - lo0; ++i) sums[j * rows + lo0 + i] += row[i];
        }
        GemmAB(logits, width, values_[index].data() + lo0 * d_, d_, count, d_, width, s.head_out.data(), d_);
        for (int64_t r = 0; r < count; ++r) {
          std::copy_n(s.head_out.data() + r * d_, d_, out + (r0 + r) * qdim + head * d_);
        }
      }
    }
    column_sums_[index].assign(sums.begin(), sums.end());
  }
}

absl::Status LlamaSession::AttachPolicy(const std::string& spec, int64_t budget_tokens, uint64_t seed,
                                        PromptCaches* caches) {
  if (length_ == 0 || decode_steps_ > 0 || !policies_.empty()) {
    return absl::FailedPreconditionError("AttachPolicy must follow Prefill and precede any Decode, once");
  }
  if (budget_tokens < 1) return absl::InvalidArgumentError(absl::StrCat("budget ", budget_tokens, " must be >= 1"));
  KVSIM_RETURN_IF_ERROR(CheckClosedLoopPolicy(spec));
  spec_ = spec;
  budget_ = budget_tokens;
  if (caches == nullptr) {
    own_caches_ = std::make_unique<PromptCaches>(config_.num_layers, kv_heads_);
    caches = own_caches_.get();
  }
  const RopeConfig rope = TraceRopeConfig(config_);
  heads_.assign(config_.num_layers, std::vector<HeadContext>(kv_heads_));
  for (int l = 0; l < config_.num_layers; ++l) {
    for (int c = 0; c < kv_heads_; ++c) {
      const int index = l * kv_heads_ + c;
      HeadContext& head = heads_[l][c];
      head.layer = l;
      head.num_model_layers = config_.num_layers;
      head.kv_head = c;
      head.group_size = group_;
      head.head_dim = d_;
      head.prompt_len = prompt_len_;
      head.seq_len = capacity_;
      head.query_start = query_start_;
      head.keys = keys_[index].data();
      head.values = values_[index].data();
      head.queries = queries_[index].data();
      head.column_sums = column_sums_[index].data();
      head.rope = rope;
      head.prompt_cache = caches->at(l, c);
    }
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> policy, CreateTokenPolicy(spec, TokenPolicyOptions{seed}));
    if (l == 0) KVSIM_RETURN_IF_ERROR(CheckPolicyFitsModel(*policy, spec, model_));
    policy->BeginLayer(heads_[l], budget_tokens);
    if (policy->kind() == TokenPolicy::Kind::kQuantize) {
      KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> requantiser,
                             CreateTokenPolicy(spec, TokenPolicyOptions{seed}));
      requantiser->BeginLayer(heads_[l], budget_tokens);
      requantisers_.push_back(std::move(requantiser));
    } else {
      requantisers_.push_back(nullptr);
    }
    requantised_rows_.push_back(length_);
    policies_.push_back(std::move(policy));
  }
  return absl::OkStatus();
}

absl::Status LlamaSession::DecodeAttention(int l, int64_t p, const float* q, float* out) {
  Scratch& s = *scratch_;
  const int qdim = config_.num_heads * d_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
  const int64_t n = p + 1;
  s.logits.resize(static_cast<size_t>(kv_heads_) * group_ * capacity_);
  for (int c = 0; c < kv_heads_; ++c) {
    const int index = l * kv_heads_ + c;
    for (int j = 0; j < group_; ++j) {
      MatVec(keys_[index].data(), d_, q + (c * group_ + j) * d_, n, d_, s.logits.data() + (c * group_ + j) * capacity_);
    }
  }
  TokenPolicy* policy = policies_.empty() ? nullptr : policies_[l].get();
  TokenPolicy* quantiser = nullptr;
  if (policy != nullptr) {
    s.probs.resize(s.logits.size());
    s.step.position = p;
    s.step.heads.resize(kv_heads_);
    for (int c = 0; c < kv_heads_; ++c) {
      for (int j = 0; j < group_; ++j) {
        const size_t row = (c * group_ + j) * capacity_;
        std::copy_n(s.logits.data() + row, n, s.probs.data() + row);
        SoftmaxRow(s.probs.data() + row, n, scale);
        std::fill(s.probs.data() + row + n, s.probs.data() + row + capacity_, 0.0f);
      }
      s.step.heads[c] = HeadStep{s.probs.data() + c * group_ * capacity_, capacity_};
    }
    s.kept.resize(kv_heads_);
    policy->Step(s.step, &s.kept);
    quantiser = requantisers_[l].get();
    if (quantiser != nullptr) {
      int64_t needed = 0;
      for (int c = 0; c < kv_heads_; ++c) {
        const KvOverride kv = quantiser->Kv(c, p);
        needed = std::max(needed, std::max(kv.keys != nullptr ? kv.keys_exact_from : 0,
                                           kv.values != nullptr ? kv.values_exact_from : 0));
      }
      if (needed > requantised_rows_[l]) {
        quantiser->BeginLayer(heads_[l], budget_);
        requantised_rows_[l] = n;
      }
    }
  }
  for (int c = 0; c < kv_heads_; ++c) {
    const int index = l * kv_heads_ + c;
    const KvOverride kv = quantiser != nullptr ? quantiser->Kv(c, p) : KvOverride();
    for (int j = 0; j < group_; ++j) {
      std::vector<int32_t>& set = s.set;
      const int64_t lo = WindowStart(p);
      if (policy == nullptr) {
        set.resize(n - lo);
        for (int64_t i = lo; i < n; ++i) set[i - lo] = static_cast<int32_t>(i);
      } else {
        const KeptSet& kept = s.kept[c];
        if (kept.per_query.size() != 1 && static_cast<int>(kept.per_query.size()) != group_) {
          return absl::InternalError(absl::StrCat("policy '", spec_, "' returned ", kept.per_query.size(),
                                                  " sets for KV head ", c, " of layer ", l, " (expected 1 or ", group_,
                                                  ")"));
        }
        set = kept.per_query.size() == 1 ? kept.per_query[0] : kept.per_query[j];
        std::sort(set.begin(), set.end());
        if (set.empty() || set.front() < 0 || set.back() > p ||
            std::adjacent_find(set.begin(), set.end()) != set.end()) {
          return absl::InternalError(absl::StrCat("policy '", spec_, "' kept an invalid set at position ", p,
                                                  " (layer ", l, ", KV head ", c,
                                                  "): positions must be distinct, in [0, ", p, "], at least one"));
        }
        if (lo > 0) set.erase(set.begin(), std::lower_bound(set.begin(), set.end(), static_cast<int32_t>(lo)));
        if (set.empty()) {
          return absl::InternalError(
              absl::StrCat("policy '", spec_, "' kept no position inside the sliding window at ", p));
        }
      }
      const float* logit_row = s.logits.data() + (c * group_ + j) * capacity_;
      const float* query = q + (c * group_ + j) * d_;
      s.weights.resize(set.size());
      for (size_t m = 0; m < set.size(); ++m) {
        const int64_t i = set[m];
        if (kv.keys != nullptr && i < kv.keys_exact_from) {
          const float* key = kv.keys + i * d_;
          float dot = 0;
          for (int t = 0; t < d_; ++t) dot += query[t] * key[t];
          s.weights[m] = dot;
        } else {
          s.weights[m] = logit_row[i];
        }
      }
      SoftmaxInPlace(s.weights.data(), set.size(), scale);
      Eigen::Map<Eigen::VectorXf> o(out + (c * group_ + j) * d_, d_);
      const float* exact_values = values_[index].data();
      const int64_t quantised_below = kv.values != nullptr ? kv.values_exact_from : 0;
      const bool contiguous = set.back() - set.front() + 1 == static_cast<int64_t>(set.size());
      if (contiguous && set.front() >= quantised_below) {
        // A range of exact rows (every token, or a recency window): one matrix-vector product.
        using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Map<const RowMatrix> rows(exact_values + int64_t{set.front()} * d_, set.size(), d_);
        o.noalias() = rows.transpose() * Eigen::Map<const Eigen::VectorXf>(s.weights.data(), set.size());
      } else {
        o.setZero();
        for (size_t m = 0; m < set.size(); ++m) {
          const int64_t i = set[m];
          const float* v = (i < quantised_below ? kv.values : exact_values) + i * d_;
          o.noalias() += s.weights[m] * Eigen::Map<const Eigen::VectorXf>(v, d_);
        }
      }
      if (policy != nullptr) {
        read_tokens_ += set.size();
        ++reads_;
      }
    }
  }
  (void)qdim;
  return absl::OkStatus();
}

int32_t ArgMax(absl::Span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double NegativeLogLikelihood(absl::Span<const float> logits, int32_t id) {
  double m = -std::numeric_limits<double>::infinity();
  for (float x : logits) m = std::max(m, static_cast<double>(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - m);
  return -(static_cast<double>(logits[id]) - m - std::log(sum));
}

}  // namespace kvsim
