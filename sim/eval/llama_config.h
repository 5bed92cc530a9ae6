// File: sim/eval/llama_config.h
//
// LlamaConfig: the architecture of a Llama-family decoder (LlamaForCausalLM, Qwen2ForCausalLM,
// MistralForCausalLM) as a Hugging Face config.json gives it, and the rotary-embedding frequencies its
// rope_scaling implies (transformers' ROPE_INIT_FUNCTIONS: default, linear, dynamic, llama3, yarn).
//
// ParseLlamaConfig refuses an unsupported architecture, hidden_act other than silu, a missing or
// out-of-range size, head counts that do not divide, an unknown rope_type or missing scaling keys,
// naming the file and key. Plain structs; pure functions, thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(LlamaConfig config, ReadLlamaConfig("/models/tiny/config.json"));
//   RopeFrequencies rope = RopeFrequenciesAt(config, /*seq_len=*/512);
#ifndef KVSIM_SIM_EVAL_LLAMA_CONFIG_H_
#define KVSIM_SIM_EVAL_LLAMA_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

struct LlamaRopeScaling {
  RopeScaling type = RopeScaling::kNone;  // kNone, kLinear, kDynamic, kLlama3, kYarn
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;  // llama3 and yarn (0: max_position_embeddings)
  // yarn
  double beta_fast = 32, beta_slow = 1;
  double attention_factor = 0;  // 0: derived from factor (and mscale / mscale_all_dim)
  double mscale = 0, mscale_all_dim = 0;
};

struct LlamaConfig {
  std::string architecture;  // e.g. "LlamaForCausalLM"
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // hidden_size / num_heads unless given; even
  int32_t vocab_size = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  LlamaRopeScaling rope_scaling;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // q/k/v biases (Qwen2 always; Llama's attention_bias; never Mistral)
  bool o_bias = false;                 // o_proj bias (Llama's attention_bias only)
  bool mlp_bias = false;               // refused if true
  int64_t sliding_window = 0;          // 0: none; else a query sees only the last sliding_window keys (Mistral)
  std::string torch_dtype;             // informational
  std::vector<int32_t> eos_token_ids;  // "eos_token_id" (one id or a list); may be empty

  int32_t group_size() const { return num_heads / num_kv_heads; }
};

// Parses config.json text; `path` names it in errors.
absl::StatusOr<LlamaConfig> ParseLlamaConfig(const std::string& text, const std::string& path);
absl::StatusOr<LlamaConfig> ReadLlamaConfig(const std::string& path);

// The config as config.json text (the keys ParseLlamaConfig reads), for generated models and tests.
std::string LlamaConfigJson(const LlamaConfig& config);

// Rotary frequencies for head_dim / 2 channel pairs: channel i of a position p rotates by
// p * inv_freq[i] (computed in float32, as transformers does), and cos/sin are multiplied by
// attention_scaling (yarn's mscale; 1 otherwise).
struct RopeFrequencies {
  std::vector<float> inv_freq;
  float attention_scaling = 1.0f;
};

// The frequencies for a forward pass whose largest position is seq_len - 1 (only "dynamic" depends on it:
// NTK-scaled base once seq_len exceeds max_position_embeddings, as transformers recomputes it per call).
RopeFrequencies RopeFrequenciesAt(const LlamaConfig& config, int64_t seq_len);

// The RopeConfig of attention traces and token policies (base, scaling type and factor).
RopeConfig TraceRopeConfig(const LlamaConfig& config);

// The attention-trace layout of the model: its layer, query- and KV-head counts, head_dim and rotary
// config, every layer and KV head kept (model name empty, fp16). A recorded trace's header starts from it;
// closed-loop policies are checked against it (TokenPolicy::CheckTrace), since they run on every head.
AttentionTraceHeader TraceLayout(const LlamaConfig& config);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_LLAMA_CONFIG_H_
