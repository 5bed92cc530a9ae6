#include "traces/attention/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/mix64.h"

namespace kvsim {
namespace {

constexpr int kSinkChannel = 0;
constexpr int kHeavyChannel = 1;
constexpr int kNeedleChannel = 2;
constexpr int kRotaryFirstChannel = 4;
constexpr int kRotaryPairs = 15;  // channels 4..33
constexpr int kNumSinks = 4;

bool Has(SyntheticHeadType type, SyntheticHeadType feature) {
  return type == feature || type == SyntheticHeadType::kMixed;
}

// Fills one head's tensors.
void FillHead(const SyntheticTraceOptions& o, SyntheticHeadType type, int64_t needle, uint64_t seed,
              const AttentionSample& sample, HeadTensors* head) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int d = o.head_dim;
  const int64_t n = sample.seq_len();
  const float sqrt_d = std::sqrt(static_cast<float>(d));
  head->keys.assign(n * d, 0.0f);
  head->values.assign(n * d, 0.0f);
  for (int64_t i = 0; i < n * d; ++i) head->values[i] = normal(rng);
  std::bernoulli_distribution heavy(0.02);
  // Rotary amplitude: at distance 0 the local logit is kRotaryPairs * r^2 / sqrt(d) = 8.
  const float r = std::sqrt(8.0f * sqrt_d / kRotaryPairs);
  auto omega = [](int j) { return std::pow(0.5, j * 0.6); };  // 1 rad/token down to ~0.002
  for (int64_t i = 0; i < n; ++i) {
    float* k = &head->keys[i * d];
    for (int c = kRotaryFirstChannel + 2 * kRotaryPairs; c < d; ++c) k[c] = normal(rng);
    if (Has(type, SyntheticHeadType::kSink) && i < kNumSinks) k[kSinkChannel] = 4.0f;
    if (Has(type, SyntheticHeadType::kHeavyHitter) && heavy(rng)) k[kHeavyChannel] = 3.0f;
    if (Has(type, SyntheticHeadType::kNeedle) && i == needle) k[kNeedleChannel] = 5.0f;
    if (Has(type, SyntheticHeadType::kLocal)) {
      for (int j = 0; j < kRotaryPairs; ++j) {
        k[kRotaryFirstChannel + 2 * j] = r * static_cast<float>(std::cos(omega(j) * i));
        k[kRotaryFirstChannel + 2 * j + 1] = r * static_cast<float>(std::sin(omega(j) * i));
      }
    }
  }
  auto make_query = [&](int64_t t, float* q) {
    for (int c = kRotaryFirstChannel + 2 * kRotaryPairs; c < d; ++c) q[c] = 0.5f * normal(rng);
    q[kSinkChannel] = Has(type, SyntheticHeadType::kSink) ? 2.0f * sqrt_d : 0.0f;
    q[kHeavyChannel] = Has(type, SyntheticHeadType::kHeavyHitter) ? 2.0f * sqrt_d : 0.0f;
    q[kNeedleChannel] = Has(type, SyntheticHeadType::kNeedle) && t >= sample.prompt_len ? 2.0f * sqrt_d : 0.0f;
    for (int j = 0; j < kRotaryPairs; ++j) {
      const bool local = Has(type, SyntheticHeadType::kLocal);
      q[kRotaryFirstChannel + 2 * j] = local ? r * static_cast<float>(std::cos(omega(j) * t)) : 0.0f;
      q[kRotaryFirstChannel + 2 * j + 1] = local ? r * static_cast<float>(std::sin(omega(j) * t)) : 0.0f;
    }
  };
  const int64_t nq = sample.num_queries();
  head->queries.assign(static_cast<int64_t>(o.group_size) * nq * d, 0.0f);
  for (int j = 0; j < o.group_size; ++j) {
    for (int64_t t = sample.query_start; t < n; ++t) {
      make_query(t, &head->queries[(j * nq + (t - sample.query_start)) * d]);
    }
  }
  if (!o.column_sums) return;
  // Column sums over every prompt query (generated here, not stored): sum_t softmax_i(q_t.k_i / sqrt(d)).
  head->column_sums.assign(static_cast<int64_t>(o.group_size) * sample.prompt_len, 0.0f);
  std::vector<float> q(d);
  std::vector<double> logits(sample.prompt_len);
  for (int j = 0; j < o.group_size; ++j) {
    for (int64_t t = 0; t < sample.prompt_len; ++t) {
      if (t >= sample.query_start) {
        std::copy_n(&head->queries[(j * nq + (t - sample.query_start)) * d], d, q.begin());
      } else {
        make_query(t, q.data());
      }
      double max_logit = -1e300;
      for (int64_t i = 0; i <= t; ++i) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * head->keys[i * d + c];
        logits[i] = dot / sqrt_d;
        max_logit = std::max(max_logit, logits[i]);
      }
      double total = 0;
      for (int64_t i = 0; i <= t; ++i) total += (logits[i] = std::exp(logits[i] - max_logit));
      for (int64_t i = 0; i <= t; ++i) head->column_sums[j * sample.prompt_len + i] += logits[i] / total;
    }
  }
}

}  // namespace

absl::StatusOr<SyntheticHeadType> ParseSyntheticHeadType(absl::string_view name) {
  if (name == "sink") return SyntheticHeadType::kSink;
  if (name == "local") return SyntheticHeadType::kLocal;
  if (name == "heavy") return SyntheticHeadType::kHeavyHitter;
  if (name == "needle") return SyntheticHeadType::kNeedle;
  if (name == "mixed") return SyntheticHeadType::kMixed;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown synthetic head type '", name, "'; known: sink, local, heavy, needle, mixed"));
}

int64_t SyntheticNeedlePosition(const SyntheticTraceOptions& options, int sample) {
  // In the middle 60% of the prompt, away from the sinks and the query window.
  const int64_t span = std::max<int64_t>(1, options.prompt_len * 6 / 10);
  return options.prompt_len / 5 + static_cast<int64_t>(Mix64(options.seed * 1315423911ull + sample) % span);
}

SyntheticTrace GenerateSyntheticTrace(const SyntheticTraceOptions& o) {
  KVSIM_CHECK(o.num_samples > 0 && o.num_layers > 0 && o.num_kv_heads > 0 && o.group_size > 0 && o.prompt_len > 0 &&
              o.decode_steps >= 0 && o.head_dim >= 40);
  SyntheticTrace trace;
  AttentionTraceHeader& h = trace.header;
  h.model = "synthetic";
  h.num_layers = o.num_layers;
  h.num_kv_heads = o.num_kv_heads;
  h.num_query_heads = o.num_kv_heads * o.group_size;
  h.head_dim = o.head_dim;
  h.dtype = o.dtype;
  h.synthetic = true;
  for (int l = 0; l < o.num_layers; ++l) h.kept_layers.push_back(l);
  for (int k = 0; k < o.num_kv_heads; ++k) h.kept_kv_heads.push_back(k);
  std::vector<SyntheticHeadType> types = o.head_types;
  if (types.empty()) {
    types = {SyntheticHeadType::kSink, SyntheticHeadType::kLocal, SyntheticHeadType::kHeavyHitter,
             SyntheticHeadType::kNeedle};
  }
  for (int s = 0; s < o.num_samples; ++s) {
    AttentionSample sample;
    sample.prompt_len = o.prompt_len;
    sample.num_decode_steps = o.decode_steps;
    sample.query_start = o.prompt_len - std::min(o.prompt_len, o.query_window);
    sample.boundaries = {0, o.prompt_len};
    if (o.decode_steps == 0) sample.boundaries.pop_back();
    const int64_t needle = SyntheticNeedlePosition(o, s);
    for (int l = 0; l < o.num_layers; ++l) {
      for (int k = 0; k < o.num_kv_heads; ++k) {
        HeadTensors head;
        head.layer = l;
        head.kv_head = k;
        const uint64_t seed = Mix64(Mix64(Mix64(o.seed) + s) + l * 1000003ull + k);
        FillHead(o, types[k % types.size()], needle, seed, sample, &head);
        sample.heads.push_back(std::move(head));
      }
    }
    trace.samples.push_back(std::move(sample));
  }
  return trace;
}

}  // namespace kvsim
