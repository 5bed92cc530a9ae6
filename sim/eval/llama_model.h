// File: sim/eval/llama_model.h
//
// LlamaModel: the float32 weights of a Llama-family decoder (sim/eval/llama_config.h), loaded from a
// Hugging Face model folder (config.json + safetensors, sim/eval/safetensors.h) or generated at random
// for tests and benchmarks. Every tensor is checked against the shape the config implies; a missing
// tensor, a wrong shape or an unsupported dtype is refused naming the file and tensor. With
// tie_word_embeddings the output projection is the embedding matrix (lm_head.weight, if present anyway,
// is ignored); without it lm_head.weight is required.
//
// Matrices are row-major [out_features x in_features], as PyTorch stores nn.Linear weights.
// Immutable once built; shared read-only by any number of threads.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model, LoadLlamaModel("/models/tiny"));
#ifndef KVSIM_SIM_EVAL_LLAMA_MODEL_H_
#define KVSIM_SIM_EVAL_LLAMA_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/eval/llama_config.h"
#include "sim/eval/safetensors.h"

namespace kvsim {

struct LlamaLayerWeights {
  std::vector<float> input_norm;      // hidden
  std::vector<float> wq, wk, wv, wo;  // [heads*d x hidden], [kv*d x hidden] x2, [hidden x heads*d]
  std::vector<float> bq, bk, bv;      // empty unless attention_bias
  std::vector<float> bo;              // empty unless o_bias
  std::vector<float> post_norm;       // hidden
  std::vector<float> gate, up, down;  // [inter x hidden] x2, [hidden x inter]
};

struct LlamaModel {
  LlamaConfig config;
  std::string source;        // the folder, or "random(seed=N)"
  std::vector<float> embed;  // [vocab x hidden]
  std::vector<LlamaLayerWeights> layers;
  std::vector<float> final_norm;  // hidden
  std::vector<float> lm_head;     // [vocab x hidden]; empty when tied (embed is used)

  const float* output_weights() const { return lm_head.empty() ? embed.data() : lm_head.data(); }
  int64_t NumParameters() const;
};

// Loads `dir`/config.json and its safetensors (see the file comment).
absl::StatusOr<std::unique_ptr<LlamaModel>> LoadLlamaModel(const std::string& dir);

// Weights from a fixed-seed generator: uniform in [-scale, scale] / sqrt(fan_in) for matrices and
// biases, 1 + uniform [-0.1, 0.1] for norm weights. Same config and seed give the same weights.
std::unique_ptr<LlamaModel> RandomLlamaModel(const LlamaConfig& config, uint64_t seed, float scale = 1.0f);

// The model's tensors under their Hugging Face names (for EncodeSafetensors: writing a model folder).
std::map<std::string, FloatTensor> LlamaModelTensors(const LlamaModel& model);

// Writes `dir`/config.json and `dir`/model.safetensors (dtype "F32", "F16" or "BF16"), atomically.
absl::Status WriteLlamaModelFolder(const LlamaModel& model, const std::string& dir, const std::string& dtype);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_LLAMA_MODEL_H_
