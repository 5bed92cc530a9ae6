#include "policies/token/kivi_policy.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "util/cpu_features.h"
#include "util/huge_pages.h"

namespace kvsim {
namespace {

// Grows `out` to hold `count` floats, with huge pages advised before the first touch.
void ReserveHugePages(int64_t count, std::vector<float>* out) {
  if (static_cast<int64_t>(out->capacity()) >= count) return;
  std::vector<float>().swap(*out);
  out->reserve(count);
  AdviseHugePages(out->data(), count * sizeof(float));
}

// nearbyint(v) for 0 <= v < 2^22 in the default rounding mode (to nearest, ties to even): adding 2^23
// leaves no fraction bits, so the sum is v rounded, and subtracting 2^23 back is exact. A plain array
// expression (vectorised), where nearbyint is a library call on baseline x86-64.
template <typename Array>
auto RoundCodes(const Array& v) {
  constexpr float kShift = 8388608.0f;  // 2^23
  return (v + kShift) - kShift;
}

// KIVI's rule: x -> lo + scale * round((x - lo) / scale) for scale > 0 (codes in [0, 2^bits - 1], so
// RoundCodes applies). Bounds are one float for a whole group, or arrays (one per channel).
template <typename Array, typename Bound>
auto Snap(const Array& x, const Bound& lo, const Bound& scale) {
  return lo + scale * RoundCodes((x - lo) / scale);
}

#if defined(__x86_64__)
#define KVSIM_AVX512 __attribute__((target("avx512f")))
// GCC 12 flags the deliberately undefined lanes inside its own AVX-512 intrinsics' headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Snap sixteen lanes at a time, with the same operations in the same order as the Eigen expression
// (the _round_ forms with the current rounding mode: plain IEEE operations the compiler may not fuse
// into an FMA, which would round once instead of twice), so both paths give the same bits.
KVSIM_AVX512 inline __m512 Snap16(__m512 x, __m512 lo, __m512 scale) {
  constexpr int kMode = _MM_FROUND_CUR_DIRECTION;
  const __m512 shift = _mm512_set1_ps(8388608.0f);
  const __m512 v = _mm512_div_round_ps(_mm512_sub_round_ps(x, lo, kMode), scale, kMode);
  const __m512 code = _mm512_sub_round_ps(_mm512_add_round_ps(v, shift, kMode), shift, kMode);
  return _mm512_add_round_ps(lo, _mm512_mul_round_ps(scale, code, kMode), kMode);
}

// A row of `dim` keys (a multiple of 16) with per-channel bounds: Snap, or lo where scale is 0.
KVSIM_AVX512 void Avx512SnapRow(const float* x, const float* lo, const float* scale, int dim, float* out) {
  for (int c = 0; c < dim; c += 16) {
    const __m512 l = _mm512_loadu_ps(lo + c), s = _mm512_loadu_ps(scale + c);
    const __mmask16 positive = _mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_storeu_ps(out + c, _mm512_mask_mov_ps(l, positive, Snap16(_mm512_loadu_ps(x + c), l, s)));
  }
}

// QuantizeGroup for a group of 16 or 32 values.
KVSIM_AVX512 void Avx512QuantizeGroup(const float* in, int64_t count, int bits, float* out) {
  const __mmask16 second = count == 32 ? 0xFFFF : 0;
  const __m512 a = _mm512_loadu_ps(in), b = _mm512_maskz_loadu_ps(second, in + 16);
  const float lo = _mm512_reduce_min_ps(_mm512_mask_min_ps(a, second, a, b));
  const float hi = _mm512_reduce_max_ps(_mm512_mask_max_ps(a, second, a, b));
  const float scale = (hi - lo) / static_cast<float>((1 << bits) - 1);
  const __m512 l = _mm512_set1_ps(lo), s = _mm512_set1_ps(scale);
  _mm512_storeu_ps(out, scale > 0 ? Snap16(a, l, s) : l);
  if (second != 0) _mm512_storeu_ps(out + 16, scale > 0 ? Snap16(b, l, s) : l);
}

#pragma GCC diagnostic pop
#undef KVSIM_AVX512
#endif  // defined(__x86_64__)

// Whether this CPU and these sizes take the AVX-512 functions above.
bool Avx512Rows(int64_t dim) {
#if defined(__x86_64__)
  return dim % 16 == 0 && UseAvx512();
#else
  (void)dim;
  return false;
#endif
}

}  // namespace

void QuantizeGroup(const float* in, int64_t count, int bits, float* out) {
#if defined(__x86_64__)
  if ((count == 16 || count == 32) && UseAvx512()) {
    Avx512QuantizeGroup(in, count, bits, out);
    return;
  }
#endif
  Eigen::Map<const Eigen::ArrayXf> x(in, count);
  const float lo = x.minCoeff(), hi = x.maxCoeff();
  const float scale = (hi - lo) / static_cast<float>((1 << bits) - 1);
  Eigen::Map<Eigen::ArrayXf> y(out, count);
  if (scale > 0) {
    y = Snap(x, lo, scale);
  } else {
    y.setConstant(lo);
  }
}

std::vector<float> QuantizeKeysPerChannel(const float* keys, int64_t tokens, int dim, int64_t group, int bits) {
  std::vector<float> out;
  QuantizeKeysPerChannelInto(keys, tokens, dim, group, bits, &out);
  return out;
}

void QuantizeKeysPerChannelInto(const float* keys, int64_t tokens, int dim, int64_t group, int bits,
                                std::vector<float>* result) {
  std::vector<float>& out = *result;
  ReserveHugePages(tokens * dim, &out);
  out.resize(tokens * dim);  // reuses the capacity of an earlier layer; every entry is written below
  Eigen::ArrayXf lo(dim), hi(dim), scale(dim);
  const float levels = static_cast<float>((1 << bits) - 1);
  [[maybe_unused]] const bool avx512 = Avx512Rows(dim);
  for (int64_t start = 0; start < tokens; start += group) {
    const int64_t count = std::min(group, tokens - start);
    auto in = [&](int64_t i) { return Eigen::Map<const Eigen::ArrayXf>(keys + (start + i) * dim, dim); };
    lo = in(0);
    hi = in(0);
    for (int64_t i = 1; i < count; ++i) {
      lo = lo.min(in(i));
      hi = hi.max(in(i));
    }
    scale = (hi - lo) / levels;
    // Snap per channel; lo where the channel's range is empty (scale 0).
    for (int64_t i = 0; i < count; ++i) {
      float* row = &out[(start + i) * dim];
#if defined(__x86_64__)
      if (avx512) {
        Avx512SnapRow(keys + (start + i) * dim, lo.data(), scale.data(), dim, row);
        continue;
      }
#endif
      Eigen::Map<Eigen::ArrayXf>(row, dim) = (scale > 0).select(Snap(in(i), lo, scale), lo);
    }
  }
}

std::vector<float> QuantizeValuesPerToken(const float* values, int64_t tokens, int dim, int64_t group, int bits) {
  std::vector<float> out;
  QuantizeValuesPerTokenInto(values, tokens, dim, group, bits, &out);
  return out;
}

void QuantizeValuesPerTokenInto(const float* values, int64_t tokens, int dim, int64_t group, int bits,
                                std::vector<float>* result) {
  std::vector<float>& out = *result;
  ReserveHugePages(tokens * dim, &out);
  out.resize(tokens * dim);  // every entry is written below
  for (int64_t i = 0; i < tokens; ++i) {
    for (int64_t c = 0; c < dim; c += group) {
      QuantizeGroup(values + i * dim + c, std::min<int64_t>(group, dim - c), bits, &out[i * dim + c]);
    }
  }
}

KiviPolicy::KiviPolicy(int bits, std::unique_ptr<TokenPolicy> inner) : bits_(bits), inner_(std::move(inner)) {}

std::string KiviPolicy::Name() const {
  const std::string own = absl::StrCat("kivi", bits_);
  return inner_->kind() == Kind::kFull ? own : absl::StrCat(own, "+", inner_->Name());
}

void KiviPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  inner_->BeginLayer(heads, budget_tokens);
  keys_.resize(heads.size());
  values_.resize(heads.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    const HeadContext& h = heads[i];
    // Only complete key groups are ever read quantised (the rest is the full-precision residual).
    QuantizeKeysPerChannelInto(h.keys, h.seq_len, h.head_dim, kGroup, bits_, &keys_[i]);
    QuantizeValuesPerTokenInto(h.values, h.seq_len, h.head_dim, kGroup, bits_, &values_[i]);
  }
}

KvOverride KiviPolicy::Kv(int head, int64_t position) const {
  KvOverride kv;
  kv.keys = keys_[head].data();
  kv.values = values_[head].data();
  kv.keys_exact_from = (position + 1) / kResidual * kResidual;
  kv.values_exact_from = std::max<int64_t>(0, position + 1 - kResidual);
  return kv;
}

namespace {

TokenPolicyWrapperFactory KiviFactory(int bits) {
  return [bits](const TokenPolicyOptions&, std::unique_ptr<TokenPolicy> inner) -> std::unique_ptr<TokenPolicy> {
    if (inner->kind() == TokenPolicy::Kind::kQuantize) return nullptr;  // one quantiser at a time
    return std::make_unique<KiviPolicy>(bits, std::move(inner));
  };
}

}  // namespace

KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kivi2", KiviFactory(2));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kivi3", KiviFactory(3));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kivi4", KiviFactory(4));
KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("kivi8", KiviFactory(8));

}  // namespace kvsim
