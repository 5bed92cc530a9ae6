#include "policies/token/oracle_evict_policy.h"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "policies/token/token_policy_util.h"
#include "util/float_gemm.h"
#include "util/huge_pages.h"

namespace kvsim {

namespace {

// sums[i] += x[i] * scale for i < n, in double, element by element (two at a time with SSE2: the same
// conversions, products and sums as the scalar loop).
void AddScaled(const float* x, int64_t n, double scale, double* sums) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128d s = _mm_set1_pd(scale);
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    const __m128d lo = _mm_cvtps_pd(v), hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
    _mm_storeu_pd(sums + i, _mm_add_pd(_mm_loadu_pd(sums + i), _mm_mul_pd(lo, s)));
    _mm_storeu_pd(sums + i + 2, _mm_add_pd(_mm_loadu_pd(sums + i + 2), _mm_mul_pd(hi, s)));
  }
#endif
  for (; i < n; ++i) sums[i] += x[i] * scale;
}

}  // namespace

std::vector<double> OracleEvictPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  const int64_t n = head.seq_len, steps = head.seq_len - head.prompt_len;
  std::vector<double> scores(head.prompt_len, 0.0);
  if (steps == 0) return scores;
  const int d = head.head_dim;
  Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // In blocks of steps, the group's queries as one matrix: one GEMM (one packing of the keys) per block,
  // with bounded scratch reused from layer to layer. Each member's sum runs over the steps in order; the
  // members' sums are added in member order at the end.
  const int g = head.group_size;
  const int64_t block = std::min(kStepBlock, steps);
  if (logits_.rows() != g * block || logits_.cols() != n) {
    logits_.resize(g * block, n);  // kept while the size repeats
    AdviseHugePages(logits_.data(), logits_.size() * sizeof(float));
  }
  queries_.resize(g * block, d);
  member_sums_.assign(static_cast<size_t>(g) * head.prompt_len, 0.0);
  for (int64_t s0 = 0; s0 < steps; s0 += block) {
    const int64_t count = std::min(block, steps - s0);
    for (int j = 0; j < g; ++j) {
      queries_.middleRows(j * count, count) = Eigen::Map<const RowMatrixXf>(head.query(j, head.prompt_len + s0), count, d);
    }
    GemmABt(queries_.data(), d, keys.data(), d, g * count, n, d, logits_.data(), n);
    for (int j = 0; j < g; ++j) {
      double* sums = &member_sums_[j * head.prompt_len];
      for (int64_t t = 0; t < count; ++t) {
        float* row = logits_.row(j * count + t).data();
        const int64_t length = head.prompt_len + s0 + t + 1;  // causal: up to the step's own position
        AddScaled(row, head.prompt_len, 1.0 / ExpRow(row, length, scale), sums);
      }
    }
  }
  for (int j = 0; j < g; ++j) {
    for (int64_t i = 0; i < head.prompt_len; ++i) scores[i] += member_sums_[j * head.prompt_len + i];
  }
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("oracle_evict", OracleEvictPolicy);

}  // namespace kvsim
