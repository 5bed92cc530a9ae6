#include "policies/token/kvquant_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvsim {

NuqCodebook NuqCodebook::Fit(std::vector<float> samples, int levels) {
  NuqCodebook book;
  book.levels_.resize(levels);
  for (int i = 0; i < levels; ++i) book.levels_[i] = static_cast<float>(-1.0 + (2.0 * i + 1) / levels);
  auto update_bounds = [&book] {
    book.bounds_.resize(book.levels_.size() - 1);
    for (size_t i = 0; i + 1 < book.levels_.size(); ++i) {
      book.bounds_[i] = 0.5f * (book.levels_[i] + book.levels_[i + 1]);
    }
  };
  update_bounds();
  if (samples.empty()) return book;
  // Sorted samples and their prefix sums: a level's samples are a contiguous run, found by binary search.
  std::sort(samples.begin(), samples.end());
  std::vector<double> prefix(samples.size() + 1, 0.0);
  for (size_t i = 0; i < samples.size(); ++i) prefix[i + 1] = prefix[i] + samples[i];
  for (int round = 0; round < kLloydIterations; ++round) {
    bool moved = false;
    size_t begin = 0;
    for (int i = 0; i < levels; ++i) {
      // Level i takes the samples in (bounds_[i - 1], bounds_[i]]: Snap's rule.
      const size_t end = i + 1 < levels
                             ? std::upper_bound(samples.begin(), samples.end(), book.bounds_[i]) - samples.begin()
                             : samples.size();
      if (end > begin) {
        const float mean = static_cast<float>((prefix[end] - prefix[begin]) / static_cast<double>(end - begin));
        moved = moved || mean != book.levels_[i];
        book.levels_[i] = mean;
      }
      begin = std::max(begin, end);
    }
    update_bounds();
    if (!moved) break;
  }
  return book;
}

float NuqCodebook::Snap(float x) const {
  return levels_[std::lower_bound(bounds_.begin(), bounds_.end(), x) - bounds_.begin()];
}

NuqRange DenseRange(const float* x, int64_t count, int64_t stride, int64_t outliers) {
  NuqRange r;
  if (outliers > 0 && outliers < count) {
    std::vector<float> magnitudes(count);
    for (int64_t i = 0; i < count; ++i) magnitudes[i] = std::abs(x[i * stride]);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + outliers, magnitudes.end(), std::greater<float>());
    r.outlier_above = magnitudes[outliers];
  }
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i * stride];
    if (std::abs(v) > r.outlier_above) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return r;  // no entries
  r.mid = 0.5f * (lo + hi);
  r.half = 0.5f * (hi - lo);
  return r;
}

namespace {

// Appends the normalised dense entries of rows [0, rows) of x (rows x d), each entry's range given by
// range(row, channel).
template <typename RangeOf>
void AppendSamples(const float* x, int64_t rows, int d, RangeOf range, std::vector<float>* samples) {
  for (int64_t t = 0; t < rows; ++t) {
    for (int c = 0; c < d; ++c) {
      const NuqRange& r = range(t, c);
      const float v = x[t * d + c];
      if (std::abs(v) > r.outlier_above || !(r.half > 0)) continue;
      samples->push_back((v - r.mid) / r.half);
    }
  }
}

}  // namespace

KvQuantPolicy::KvQuantPolicy(int bits, double outlier_fraction, std::unique_ptr<TokenPolicy> inner)
    : bits_(bits), outlier_fraction_(outlier_fraction), inner_(std::move(inner)) {}

std::string KvQuantPolicy::Name() const {
  std::string own = absl::StrCat("kvquant", bits_);
  if (outlier_fraction_ > 0) absl::StrAppend(&own, "-", absl::StrFormat("%g", 100 * outlier_fraction_), "pct");
  return inner_->kind() == Kind::kFull ? own : absl::StrCat(own, "+", inner_->Name());
}

absl::Status KvQuantPolicy::CheckTrace(const AttentionTraceHeader& header) const {
  if (!RopeConfigIsExact(header.rope)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s quantises keys before the rotary embedding, undoing it from the RoPE config (base, scaling, factor), "
        "which gives the rotation exactly only without scaling or with linear scaling; this one has rope "
        "scaling '%s' (factor %g)",
        Name(), RopeScalingName(header.rope.scaling), header.rope.scaling_factor));
  }
  if (header.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Name(), " needs an even head_dim (rotary channel pairs); got ", header.head_dim));
  }
  return inner_->CheckTrace(header);
}

void KvQuantPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  inner_->BeginLayer(heads, budget_tokens);
  const size_t n = heads.size();
  keys_.resize(n);
  values_.resize(n);
  key_ranges_.resize(n);
  value_ranges_.resize(n);
  const int levels = 1 << bits_;
  // Steps 1-3: pre-RoPE keys, per-channel key ranges over the prompt, per-token value ranges.
  for (size_t h = 0; h < n; ++h) {
    const HeadContext& c = heads[h];
    const int d = c.head_dim;
    rope_.Reset(c.rope, d, c.seq_len);
    std::vector<float>& pre = keys_[h];
    pre.assign(c.keys, c.keys + c.seq_len * d);
    for (int64_t t = 0; t < c.seq_len; ++t) rope_.Apply(t, /*inverse=*/true, &pre[t * d]);
    const auto key_outliers = static_cast<int64_t>(std::floor(outlier_fraction_ * c.prompt_len));
    key_ranges_[h].resize(d);
    for (int ch = 0; ch < d; ++ch) key_ranges_[h][ch] = DenseRange(&pre[ch], c.prompt_len, d, key_outliers);
    const auto value_outliers = static_cast<int64_t>(std::floor(outlier_fraction_ * d));
    value_ranges_[h].resize(c.seq_len);
    for (int64_t t = 0; t < c.seq_len; ++t) value_ranges_[h][t] = DenseRange(c.value(t), d, 1, value_outliers);
  }
  // Step 4: the layer's codebooks from the prompt rows.
  samples_.clear();
  for (size_t h = 0; h < n; ++h) {
    const std::vector<NuqRange>& ranges = key_ranges_[h];
    AppendSamples(keys_[h].data(), heads[h].prompt_len, heads[h].head_dim,
                  [&ranges](int64_t, int ch) -> const NuqRange& { return ranges[ch]; }, &samples_);
  }
  const NuqCodebook key_book = NuqCodebook::Fit(samples_, levels);
  samples_.clear();
  for (size_t h = 0; h < n; ++h) {
    const std::vector<NuqRange>& ranges = value_ranges_[h];
    AppendSamples(heads[h].values, heads[h].prompt_len, heads[h].head_dim,
                  [&ranges](int64_t t, int) -> const NuqRange& { return ranges[t]; }, &samples_);
  }
  const NuqCodebook value_book = NuqCodebook::Fit(samples_, levels);
  // Steps 5-6: every row, keys rotated forward again.
  for (size_t h = 0; h < n; ++h) {
    const HeadContext& c = heads[h];
    const int d = c.head_dim;
    rope_.Reset(c.rope, d, c.seq_len);
    std::vector<float>& keys = keys_[h];
    std::vector<float>& values = values_[h];
    values.resize(c.seq_len * d);
    for (int64_t t = 0; t < c.seq_len; ++t) {
      float* k = &keys[t * d];
      for (int ch = 0; ch < d; ++ch) k[ch] = NuqDequantize(k[ch], key_ranges_[h][ch], key_book);
      rope_.Apply(t, /*inverse=*/false, k);
      const float* v = c.value(t);
      for (int ch = 0; ch < d; ++ch) values[t * d + ch] = NuqDequantize(v[ch], value_ranges_[h][t], value_book);
    }
  }
}

KvOverride KvQuantPolicy::Kv(int head, int64_t position) const {
  KvOverride kv;
  kv.keys = keys_[head].data();
  kv.values = values_[head].data();
  kv.keys_exact_from = position + 1;
  kv.values_exact_from = position + 1;
  return kv;
}

namespace {

TokenPolicyWrapperFactory KvQuantFactory(int bits, double outlier_fraction) {
  return [bits, outlier_fraction](const TokenPolicyOptions&,
                                  std::unique_ptr<TokenPolicy> inner) -> std::unique_ptr<TokenPolicy> {
    if (inner->kind() == TokenPolicy::Kind::kQuantize) return nullptr;  // one quantiser at a time
    return std::make_unique<KvQuantPolicy>(bits, outlier_fraction, std::move(inner));
  };
}

}  // namespace

KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant2", KvQuantFactory(2, 0));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant3", KvQuantFactory(3, 0));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant4", KvQuantFactory(4, 0));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant8", KvQuantFactory(8, 0));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant2-1pct", KvQuantFactory(2, 0.01));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant3-1pct", KvQuantFactory(3, 0.01));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant4-1pct", KvQuantFactory(4, 0.01));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kvquant8-1pct", KvQuantFactory(8, 0.01));

}  // namespace kvsim
