#include "policies/token/kvquant_policy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Appends x normalised (step 3) to a codebook's samples if it is a dense entry of a non-empty range.
void AppendSample(float x, const NuqRange& r, std::vector<float>* samples) {
  if (std::abs(x) > r.outlier_above || !(r.half > 0)) return;
  samples->push_back((x - r.mid) / r.half);
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

bool KvQuantPolicy::CalibratedOn(absl::Span<const HeadContext> heads) const {
  if (!calibrated_ || heads_.size() != heads.size()) return false;
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& c = heads[h];
    const HeadState& s = heads_[h];
    const size_t n = c.prompt_len * c.head_dim;
    if (s.prompt_len != c.prompt_len || s.head_dim != c.head_dim || s.rope.base != c.rope.base ||
        s.rope.scaling != c.rope.scaling || s.rope.scaling_factor != c.rope.scaling_factor ||
        s.source_keys.size() < n || std::memcmp(c.keys, s.source_keys.data(), n * sizeof(float)) != 0 ||
        std::memcmp(c.values, s.source_values.data(), n * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

void KvQuantPolicy::Calibrate(absl::Span<const HeadContext> heads) {
  heads_.resize(heads.size());
  std::vector<float> key_samples, value_samples, pre;
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& c = heads[h];
    HeadState& s = heads_[h];
    const int d = c.head_dim;
    const int64_t p = c.prompt_len;
    s.prompt_len = p;
    s.head_dim = d;
    s.rope = c.rope;
    s.seq_len = -1;  // every row is quantised again with the new calibration
    // Steps 1-2 for keys: per-channel ranges over the prompt's pre-RoPE rows.
    rope_.Reset(c.rope, d, c.seq_len);
    pre.assign(c.keys, c.keys + p * d);
    for (int64_t t = 0; t < p; ++t) rope_.Apply(t, /*inverse=*/true, &pre[t * d]);
    const auto key_outliers = static_cast<int64_t>(std::floor(outlier_fraction_ * p));
    s.key_ranges.resize(d);
    for (int ch = 0; ch < d; ++ch) s.key_ranges[ch] = DenseRange(&pre[ch], p, d, key_outliers);
    // Step 4's samples: the normalised dense prompt entries.
    for (int64_t t = 0; t < p; ++t) {
      for (int ch = 0; ch < d; ++ch) AppendSample(pre[t * d + ch], s.key_ranges[ch], &key_samples);
      const NuqRange r = DenseRange(c.value(t), d, 1, ValueOutliers(d));
      for (int ch = 0; ch < d; ++ch) AppendSample(c.value(t)[ch], r, &value_samples);
    }
  }
  key_book_ = NuqCodebook::Fit(std::move(key_samples), 1 << bits_);
  value_book_ = NuqCodebook::Fit(std::move(value_samples), 1 << bits_);
  calibrated_ = true;
}

void KvQuantPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  inner_->BeginLayer(heads, budget_tokens);
  if (!CalibratedOn(heads)) Calibrate(heads);
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& c = heads[h];
    HeadState& s = heads_[h];
    const int d = c.head_dim;
    const bool fresh = s.seq_len != c.seq_len;
    if (fresh) {
      s.seq_len = c.seq_len;
      s.source_keys.resize(c.seq_len * d);
      s.source_values.resize(c.seq_len * d);
      s.keys.resize(c.seq_len * d);
      s.values.resize(c.seq_len * d);
    }
    rope_.Reset(c.rope, d, c.seq_len);
    const size_t row_bytes = d * sizeof(float);
    for (int64_t t = 0; t < c.seq_len; ++t) {
      float* source_key = &s.source_keys[t * d];
      float* source_value = &s.source_values[t * d];
      // A row given as before keeps its quantisation (it depends on the row, its position and the calibration).
      if (!fresh && std::memcmp(c.key(t), source_key, row_bytes) == 0 &&
          std::memcmp(c.value(t), source_value, row_bytes) == 0) {
        continue;
      }
      std::memcpy(source_key, c.key(t), row_bytes);
      std::memcpy(source_value, c.value(t), row_bytes);
      // Steps 1, 5, 6 for the key; 2 and 5 for the value.
      float* k = &s.keys[t * d];
      std::memcpy(k, c.key(t), row_bytes);
      rope_.Apply(t, /*inverse=*/true, k);
      for (int ch = 0; ch < d; ++ch) k[ch] = NuqDequantize(k[ch], s.key_ranges[ch], key_book_);
      rope_.Apply(t, /*inverse=*/false, k);
      const NuqRange r = DenseRange(c.value(t), d, 1, ValueOutliers(d));
      for (int ch = 0; ch < d; ++ch) s.values[t * d + ch] = NuqDequantize(c.value(t)[ch], r, value_book_);
    }
  }
}

KvOverride KvQuantPolicy::Kv(int head, int64_t position) const {
  KvOverride kv;
  kv.keys = heads_[head].keys.data();
  kv.values = heads_[head].values.data();
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
