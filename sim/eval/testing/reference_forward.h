// File: sim/eval/testing/reference_forward.h
//
// A brute-force double-precision forward pass of a LlamaModel, written independently of
// sim/eval/llama_session.cc for its tests: every position recomputed from scratch (no cache), plain loops.
// `visible(query_position, key_position)` restricts the keys a query attends to (beyond causality), to
// check what a policy-controlled cache must compute; inv_freq gives the rotary frequencies (the default
// 1 / theta^(2i/d) when empty). Returns logits for every position (ids.size() x vocab).
#ifndef KVSIM_SIM_EVAL_TESTING_REFERENCE_FORWARD_H_
#define KVSIM_SIM_EVAL_TESTING_REFERENCE_FORWARD_H_

#include <cmath>
#include <functional>
#include <vector>

#include "sim/eval/llama_model.h"

namespace kvsim {
namespace testing {

inline std::vector<std::vector<double>> ReferenceForward(
    const LlamaModel& m, const std::vector<int32_t>& ids, std::vector<double> inv_freq = {},
    double attention_scaling = 1.0, const std::function<bool(int64_t, int64_t)>& visible = nullptr) {
  const LlamaConfig& c = m.config;
  const int H = c.hidden_size, D = c.head_dim, NH = c.num_heads, KV = c.num_kv_heads, I = c.intermediate_size;
  const int G = NH / KV;
  const int64_t T = ids.size();
  if (inv_freq.empty()) {
    for (int i = 0; i < D / 2; ++i) inv_freq.push_back(1.0 / std::pow(c.rope_theta, 2.0 * i / D));
  }
  auto matvec = [](const std::vector<float>& w, const std::vector<double>& x, int out, int in) {
    std::vector<double> y(out, 0.0);
    for (int o = 0; o < out; ++o) {
      for (int i = 0; i < in; ++i) y[o] += static_cast<double>(w[o * in + i]) * x[i];
    }
    return y;
  };
  auto norm = [&](const std::vector<double>& x, const std::vector<float>& w) {
    double ms = 0;
    for (double v : x) ms += v * v;
    ms /= x.size();
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(ms + c.rms_norm_eps) * w[i];
    return y;
  };
  auto rotate = [&](std::vector<double>& v, int heads, int64_t p) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < D / 2; ++i) {
        const double angle = p * inv_freq[i];
        const double cs = std::cos(angle) * attention_scaling, sn = std::sin(angle) * attention_scaling;
        const double a = v[h * D + i], b = v[h * D + i + D / 2];
        v[h * D + i] = a * cs - b * sn;
        v[h * D + i + D / 2] = b * cs + a * sn;
      }
    }
  };
  std::vector<std::vector<double>> x(T, std::vector<double>(H));
  for (int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < H; ++i) x[t][i] = m.embed[static_cast<int64_t>(ids[t]) * H + i];
  }
  for (int l = 0; l < c.num_layers; ++l) {
    const LlamaLayerWeights& w = m.layers[l];
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> xn = norm(x[t], w.input_norm);
      q[t] = matvec(w.wq, xn, NH * D, H);
      k[t] = matvec(w.wk, xn, KV * D, H);
      v[t] = matvec(w.wv, xn, KV * D, H);
      for (size_t i = 0; i < w.bq.size(); ++i) q[t][i] += w.bq[i];
      for (size_t i = 0; i < w.bk.size(); ++i) k[t][i] += w.bk[i];
      for (size_t i = 0; i < w.bv.size(); ++i) v[t][i] += w.bv[i];
      rotate(q[t], NH, t);
      rotate(k[t], KV, t);
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> attn(NH * D, 0.0);
      for (int h = 0; h < NH; ++h) {
        const int kvh = h / G;
        std::vector<double> logits;
        std::vector<int64_t> keys;
        for (int64_t s = 0; s <= t; ++s) {
          if (visible && !visible(t, s)) continue;
          if (c.sliding_window > 0 && s <= t - c.sliding_window) continue;
          double dot = 0;
          for (int i = 0; i < D; ++i) dot += q[t][h * D + i] * k[s][kvh * D + i];
          logits.push_back(dot / std::sqrt(static_cast<double>(D)));
          keys.push_back(s);
        }
        double mx = -1e300, sum = 0;
        for (double z : logits) mx = std::max(mx, z);
        for (double& z : logits) sum += (z = std::exp(z - mx));
        for (size_t n = 0; n < keys.size(); ++n) {
          for (int i = 0; i < D; ++i) attn[h * D + i] += logits[n] / sum * v[keys[n]][kvh * D + i];
        }
      }
      std::vector<double> o = matvec(w.wo, attn, H, NH * D);
      for (size_t i = 0; i < w.bo.size(); ++i) o[i] += w.bo[i];
      for (int i = 0; i < H; ++i) x[t][i] += o[i];
      const std::vector<double> xn = norm(x[t], w.post_norm);
      const std::vector<double> g = matvec(w.gate, xn, I, H), u = matvec(w.up, xn, I, H);
      std::vector<double> a(I);
      for (int i = 0; i < I; ++i) a[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      const std::vector<double> down = matvec(w.down, a, H, I);
      for (int i = 0; i < H; ++i) x[t][i] += down[i];
    }
  }
  std::vector<std::vector<double>> logits(T);
  const std::vector<float>& out = m.lm_head.empty() ? m.embed : m.lm_head;
  for (int64_t t = 0; t < T; ++t) logits[t] = matvec(out, norm(x[t], m.final_norm), c.vocab_size, H);
  return logits;
}

}  // namespace testing
}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_TESTING_REFERENCE_FORWARD_H_
