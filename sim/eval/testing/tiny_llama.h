// File: sim/eval/testing/tiny_llama.h
//
// Shared set-up of the closed-loop tests: a tiny Llama configuration (hidden 24, 4 query and 2 KV heads of
// 8 dims, MLP 40) and the model's own greedy continuation of a prompt, computed by a plain session with no
// policy (the independent expectation policy-controlled runs are checked against).
#ifndef KVSIM_SIM_EVAL_TESTING_TINY_LLAMA_H_
#define KVSIM_SIM_EVAL_TESTING_TINY_LLAMA_H_

#include <cstdint>
#include <vector>

#include "sim/eval/llama_config.h"
#include "sim/eval/llama_model.h"
#include "sim/eval/llama_session.h"

namespace kvsim {
namespace testing {

inline LlamaConfig TinyLlamaConfig(int32_t num_layers, int32_t vocab_size) {
  LlamaConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_layers = num_layers;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = vocab_size;
  c.rms_norm_eps = 1e-5;
  c.max_position_embeddings = 512;
  return c;
}

// The n greedy tokens after `prompt` (argmax of each step's logits), without a policy.
inline std::vector<int32_t> GreedyIds(const LlamaModel& model, const std::vector<int32_t>& prompt, int n) {
  LlamaSession s(model, prompt.size() + n);
  std::vector<float> logits = *s.Prefill(prompt);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(ArgMax(logits));
    if (i + 1 < n) logits = *s.Decode(out.back());
  }
  return out;
}

}  // namespace testing
}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_TESTING_TINY_LLAMA_H_
