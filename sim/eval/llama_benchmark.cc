// Prefill and decode speed of the closed-loop forward pass (sim/eval/llama_session.h), in tokens per
// second, next to a baseline measured in the same run: Eigen GEMMs of exactly the model's linear layers
// (q, k, v, o, gate, up, down of every layer and the output head for the last position) on the same
// number of tokens, single-threaded like the forward pass. The ratio forward / baseline says how close the
// whole pass (attention, norms, rotary, SiLU, the cache) comes to its matrix products alone at Eigen's
// speed; above 1 means the project's AVX2/AVX-512 GEMM kernels beat Eigen's.
// Models, random weights generated in memory (nothing stored):
//   small   a byte-level model of a few million parameters (hidden 256, 6 layers, 8 heads / 4 KV heads)
//   0.5b    the Qwen2.5-0.5B configuration (hidden 896, 24 layers, 14 / 2 heads, vocab 151936; ~2 GB float32)
// Each figure is the fastest of three repetitions (the machine is shared).
//
//   bazel run -c opt //sim/eval:llama_benchmark            # both
//   bazel run -c opt //sim/eval:llama_benchmark -- small   # the small model only
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "Eigen/Core"
#include "sim/eval/llama_model.h"
#include "sim/eval/llama_session.h"

namespace kvsim {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double BestSeconds(int repetitions, const std::function<void()>& body) {
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The model's linear layers on `rows` tokens as Eigen products (the head on one row).
double EigenBaseline(const LlamaModel& m, int64_t rows, int repetitions) {
  const LlamaConfig& c = m.config;
  const int h = c.hidden_size;
  RowMatrix x = RowMatrix::Random(rows, std::max<int>(h, std::max(c.intermediate_size, c.num_heads * c.head_dim)));
  RowMatrix y(rows, std::max<int>(c.vocab_size, c.intermediate_size));
  auto product = [&](const std::vector<float>& w, int out, int in, int64_t r) {
    Eigen::Map<const RowMatrix> weights(w.data(), out, in);
    y.topLeftCorner(r, out).noalias() = x.topLeftCorner(r, in) * weights.transpose();
  };
  return BestSeconds(repetitions, [&] {
    for (const LlamaLayerWeights& l : m.layers) {
      product(l.wq, c.num_heads * c.head_dim, h, rows);
      product(l.wk, c.num_kv_heads * c.head_dim, h, rows);
      product(l.wv, c.num_kv_heads * c.head_dim, h, rows);
      product(l.wo, h, c.num_heads * c.head_dim, rows);
      product(l.gate, c.intermediate_size, h, rows);
      product(l.up, c.intermediate_size, h, rows);
      product(l.down, h, c.intermediate_size, rows);
    }
    Eigen::Map<const RowMatrix> head(m.output_weights(), c.vocab_size, h);
    y.topLeftCorner(1, c.vocab_size).noalias() = x.topLeftCorner(1, h) * head.transpose();
  });
}

void Run(const std::string& name, const LlamaConfig& config, int64_t prompt, int64_t decode) {
  std::printf("%s: generating %s random weights...\n", name.c_str(), name.c_str());
  std::fflush(stdout);
  auto model = RandomLlamaModel(config, 1);
  std::vector<int32_t> ids(prompt);
  for (int64_t i = 0; i < prompt; ++i) ids[i] = static_cast<int32_t>((i * 7919) % config.vocab_size);
  std::unique_ptr<LlamaSession> prefilled;
  const double prefill = BestSeconds(3, [&] {
    prefilled = std::make_unique<LlamaSession>(*model, prompt + decode);
    (void)prefilled->Prefill(ids);
  });
  const double decode_s = BestSeconds(3, [&] {
    std::unique_ptr<LlamaSession> s = prefilled->Clone();
    for (int64_t t = 0; t < decode; ++t) (void)s->Decode(ids[t]);
  });
  const double base_prefill = EigenBaseline(*model, prompt, 3);
  const double base_decode = EigenBaseline(*model, 1, 3) * decode;
  std::printf("%s (%.1fM parameters), prompt %lld tokens, %lld decode steps, one thread:\n", name.c_str(),
              model->NumParameters() / 1e6, static_cast<long long>(prompt), static_cast<long long>(decode));
  std::printf("  prefill  %10.1f tokens/s   Eigen GEMM baseline %10.1f tokens/s   ratio %.2f\n", prompt / prefill,
              prompt / base_prefill, base_prefill / prefill);
  std::printf("  decode   %10.1f tokens/s   Eigen GEMV baseline %10.1f tokens/s   ratio %.2f\n", decode / decode_s,
              decode / base_decode, base_decode / decode_s);
  std::fflush(stdout);
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  using kvsim::LlamaConfig;
  const std::string only = argc > 1 ? argv[1] : "";
  LlamaConfig small;
  small.architecture = "LlamaForCausalLM";
  small.hidden_size = 256;
  small.intermediate_size = 704;
  small.num_layers = 6;
  small.num_heads = 8;
  small.num_kv_heads = 4;
  small.head_dim = 32;
  small.vocab_size = 259;
  small.rms_norm_eps = 1e-5;
  small.max_position_embeddings = 4096;
  if (only.empty() || only == "small") kvsim::Run("small", small, 1024, 64);
  LlamaConfig qwen;
  qwen.architecture = "Qwen2ForCausalLM";
  qwen.hidden_size = 896;
  qwen.intermediate_size = 4864;
  qwen.num_layers = 24;
  qwen.num_heads = 14;
  qwen.num_kv_heads = 2;
  qwen.head_dim = 64;
  qwen.vocab_size = 151936;
  qwen.rms_norm_eps = 1e-6;
  qwen.rope_theta = 1000000;
  qwen.max_position_embeddings = 32768;
  qwen.tie_word_embeddings = true;
  qwen.attention_bias = true;
  if (only.empty() || only == "0.5b") kvsim::Run("0.5b", qwen, 128, 8);
  return 0;
}
