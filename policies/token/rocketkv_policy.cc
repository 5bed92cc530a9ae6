#include "policies/token/rocketkv_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/token/token_policy_util.h"
#include "util/float_gemm.h"

namespace kvsim {

std::vector<double> SnapKvPlusPlusScores(const HeadContext& head, int64_t window, int kernel) {
  const int64_t n = head.prompt_len;
  const int64_t w = std::min(window, n - head.query_start);
  const int64_t scored = n - w;
  std::vector<double> summed(scored, 0.0), scores(n, std::numeric_limits<double>::infinity());
  if (w > 0) {
    // Over the window and the group, row by row in (member, window row) order.
    RowMatrixXf scratch;
    const PromptWindowRows rows = PromptWindowAttentionRows(head, w, &scratch);
    Eigen::VectorXf sums = Eigen::Map<const Eigen::VectorXf>(rows.row(0, 0), n);
    for (int j = 0; j < head.group_size; ++j) {
      for (int64_t r = (j == 0 ? 1 : 0); r < w; ++r) sums += Eigen::Map<const Eigen::VectorXf>(rows.row(j, r), n);
    }
    for (int64_t i = 0; i < scored; ++i) summed[i] = sums(i);
  }
  const int half = kernel / 2;
  for (int64_t i = 0; i < scored; ++i) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t k = std::max<int64_t>(0, i - half); k <= std::min(scored - 1, i + half); ++k) {
      best = std::max(best, summed[k]);
    }
    scores[i] = best;
  }
  return scores;
}

void RocketKvPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  heads_.assign(heads.begin(), heads.end());
  budget_ = budget_tokens;
  prompt_kept_.clear();
  for (const HeadContext& head : heads) {
    const int64_t keep = std::min(head.prompt_len, kMemoryFactor * budget_tokens);
    std::vector<int32_t> kept = TopKIndices(SnapKvPlusPlusScores(head, kWindow, kPoolKernel), keep);
    std::sort(kept.begin(), kept.end());
    prompt_kept_.push_back(std::move(kept));
  }
  caches_ = prompt_kept_;  // Step() appends the decode tokens
  // Stage 2 reads the kept prompt keys at every step: one contiguous copy per layer instead of rows
  // scattered over the whole prompt.
  kept_keys_.resize(heads.size());
  extrema_.assign(heads.size(), ChunkExtrema());
  for (size_t h = 0; h < heads.size(); ++h) {
    const int d = heads[h].head_dim;
    kept_keys_[h].resize(prompt_kept_[h].size() * d);
    for (size_t e = 0; e < prompt_kept_[h].size(); ++e) {
      std::copy(heads[h].key(prompt_kept_[h][e]), heads[h].key(prompt_kept_[h][e]) + d, &kept_keys_[h][e * d]);
    }
  }
}

void RocketKvPolicy::UpdateExtrema(size_t h, int64_t s, int64_t complete, const std::vector<int32_t>& cache) {
  ChunkExtrema& ext = extrema_[h];
  const HeadContext& head = heads_[h];
  const int d = head.head_dim;
  const int64_t num_kept = static_cast<int64_t>(prompt_kept_[h].size());
  if (ext.s != s) {
    ext.s = s;
    ext.num_chunks = 0;
    // The most complete chunks of size s this layer can have: the kept prompt and every decode token.
    ext.capacity = (num_kept + (head.seq_len - head.prompt_len)) / s;
    ext.max.resize(ext.capacity * d);
    ext.min.resize(ext.capacity * d);
  }
  if (complete <= ext.num_chunks) return;
  std::vector<float> mx(d), mn(d);
  for (int64_t k = ext.num_chunks; k < complete; ++k) {
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<float>::infinity());
    std::fill(mn.begin(), mn.end(), std::numeric_limits<float>::infinity());
    for (int64_t e = k * s; e < (k + 1) * s; ++e) {
      const float* key = e < num_kept ? &kept_keys_[h][e * d] : head.key(cache[e]);
      for (int ch = 0; ch < d; ++ch) {
        mx[ch] = std::max(mx[ch], key[ch]);
        mn[ch] = std::min(mn[ch], key[ch]);
      }
    }
    for (int ch = 0; ch < d; ++ch) {
      ext.max[ch * ext.capacity + k] = mx[ch];
      ext.min[ch * ext.capacity + k] = mn[ch];
    }
  }
  ext.num_chunks = complete;
}

void RocketKvPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t p = step.position;
  for (size_t h = 0; h < heads_.size(); ++h) {
    const HeadContext& head = heads_[h];
    // The cache: the kept prompt, then every decode token up to p (grown in place from step to step).
    std::vector<int32_t>& cache = caches_[h];
    for (int64_t i = head.prompt_len + static_cast<int64_t>(cache.size() - prompt_kept_[h].size()); i <= p; ++i) {
      cache.push_back(static_cast<int32_t>(i));
    }
    (*kept)[h].per_query.resize(1);
    std::vector<int32_t>& out = (*kept)[h].per_query[0];
    const int64_t size = static_cast<int64_t>(cache.size());
    if (size <= budget_) {
      out = cache;
      continue;
    }
    const int d = head.head_dim;
    const double c = static_cast<double>(size) / budget_;
    const int64_t s = static_cast<int64_t>(std::ceil(std::sqrt(c)));
    const int r = static_cast<int>(std::clamp<int64_t>(std::llround(d * s / c), 1, d));
    // Channels: the r largest mean |q| over the group; signs from the group's summed query.
    std::vector<double> magnitude(d, 0.0), qbar(d, 0.0);
    for (int j = 0; j < head.group_size; ++j) {
      for (int ch = 0; ch < d; ++ch) {
        magnitude[ch] += std::abs(head.query(j, p)[ch]);
        qbar[ch] += head.query(j, p)[ch];
      }
    }
    const std::vector<int32_t> channels = TopKIndices(magnitude, r);
    const int64_t body = size - 1;  // the current token is read anyway
    const int64_t chunks = (body + s - 1) / s;
    std::vector<double> score(chunks, 0.0);
    const int64_t num_kept = static_cast<int64_t>(prompt_kept_[h].size());  // cache[e] for e < this
    std::vector<float> signs(r);
    for (int x = 0; x < r; ++x) signs[x] = qbar[channels[x]] >= 0 ? 1.0f : -1.0f;
    auto key_of = [&](int64_t e) { return e < num_kept ? &kept_keys_[h][e * d] : head.key(cache[e]); };
    // Chunk key of channel x and chunk k: K^ = max over the chunk of sign * key. For a complete chunk
    // that is sign * (the cached maximum, or minimum for sign -1), so q sign K^ = q * that extremum
    // exactly: the logits read the cached extrema directly.
    const int64_t complete = body / s;
    UpdateExtrema(h, s, complete, cache);
    const ChunkExtrema& ext = extrema_[h];
    std::vector<float> tail(r, -std::numeric_limits<float>::infinity());  // the last, partial chunk
    for (int64_t e = complete * s; e < body; ++e) {
      const float* key = key_of(e);
      for (int x = 0; x < r; ++x) tail[x] = std::max(tail[x], signs[x] * key[channels[x]]);
    }
    // Each member's logits in float (the model's attention is no more precise), summed over the channels
    // in channel order: for the complete chunks, the selected channels' extrema rows weighted by the
    // member's query entries (WeightedRowSums, SIMD over the chunks); the partial chunk after them.
    const int g = head.group_size;
    logits_.setZero(g, chunks);
    rows_.resize(r);
    weights_.resize(static_cast<size_t>(g) * r);
    for (int x = 0; x < r; ++x) {
      rows_[x] = (signs[x] > 0 ? ext.max.data() : ext.min.data()) + channels[x] * ext.capacity;
      for (int j = 0; j < g; ++j) weights_[j * r + x] = head.query(j, p)[channels[x]];
    }
    WeightedRowSums(rows_.data(), r, weights_.data(), r, g, complete, logits_.data(), chunks, &staging_);
    if (complete < chunks) {
      for (int x = 0; x < r; ++x) {
        for (int j = 0; j < g; ++j) logits_(j, complete) += head.query(j, p)[channels[x]] * signs[x] * tail[x];
      }
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int j = 0; j < g; ++j) {
      float* probs = logits_.row(j).data();
      const double total = ExpRow(probs, chunks, scale);  // softmax numerators and their sum
      for (int64_t k = 0; k < chunks; ++k) score[k] += probs[k] / total / g;
    }
    out.clear();
    for (int32_t k : TopKIndices(score, (budget_ - 1) / s)) {
      for (int64_t e = k * s; e < std::min(body, (k + 1) * s); ++e) out.push_back(cache[e]);
    }
    out.push_back(static_cast<int32_t>(p));
  }
}

KVSIM_REGISTER_TOKEN_POLICY("rocketkv", RocketKvPolicy);

}  // namespace kvsim
