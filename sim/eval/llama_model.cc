#include "sim/eval/llama_model.h"

#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

std::string LayerName(int i, const char* suffix) { return absl::StrCat("model.layers.", i, ".", suffix); }

// The tensor names and shapes of the model, in load order, with where each goes.
struct Slot {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float>* data;
};

std::vector<Slot> Slots(LlamaModel* m) {
  const LlamaConfig& c = m->config;
  const int64_t h = c.hidden_size, q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim,
                inter = c.intermediate_size, vocab = c.vocab_size;
  std::vector<Slot> slots;
  slots.push_back({"model.embed_tokens.weight", {vocab, h}, &m->embed});
  m->layers.resize(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    LlamaLayerWeights& l = m->layers[i];
    slots.push_back({LayerName(i, "input_layernorm.weight"), {h}, &l.input_norm});
    slots.push_back({LayerName(i, "self_attn.q_proj.weight"), {q, h}, &l.wq});
    slots.push_back({LayerName(i, "self_attn.k_proj.weight"), {kv, h}, &l.wk});
    slots.push_back({LayerName(i, "self_attn.v_proj.weight"), {kv, h}, &l.wv});
    if (c.attention_bias) {
      slots.push_back({LayerName(i, "self_attn.q_proj.bias"), {q}, &l.bq});
      slots.push_back({LayerName(i, "self_attn.k_proj.bias"), {kv}, &l.bk});
      slots.push_back({LayerName(i, "self_attn.v_proj.bias"), {kv}, &l.bv});
    }
    slots.push_back({LayerName(i, "self_attn.o_proj.weight"), {h, q}, &l.wo});
    if (c.o_bias) slots.push_back({LayerName(i, "self_attn.o_proj.bias"), {h}, &l.bo});
    slots.push_back({LayerName(i, "post_attention_layernorm.weight"), {h}, &l.post_norm});
    slots.push_back({LayerName(i, "mlp.gate_proj.weight"), {inter, h}, &l.gate});
    slots.push_back({LayerName(i, "mlp.up_proj.weight"), {inter, h}, &l.up});
    slots.push_back({LayerName(i, "mlp.down_proj.weight"), {h, inter}, &l.down});
  }
  slots.push_back({"model.norm.weight", {h}, &m->final_norm});
  if (!c.tie_word_embeddings) slots.push_back({"lm_head.weight", {vocab, h}, &m->lm_head});
  return slots;
}

}  // namespace

int64_t LlamaModel::NumParameters() const {
  int64_t n = embed.size() + final_norm.size() + lm_head.size();
  for (const LlamaLayerWeights& l : layers) {
    n += l.input_norm.size() + l.wq.size() + l.wk.size() + l.wv.size() + l.wo.size() + l.bq.size() + l.bk.size() +
         l.bv.size() + l.bo.size() + l.post_norm.size() + l.gate.size() + l.up.size() + l.down.size();
  }
  return n;
}

absl::StatusOr<std::unique_ptr<LlamaModel>> LoadLlamaModel(const std::string& dir) {
  auto model = std::make_unique<LlamaModel>();
  KVSIM_ASSIGN_OR_RETURN(model->config, ReadLlamaConfig((std::filesystem::path(dir) / "config.json").string()));
  model->source = dir;
  KVSIM_ASSIGN_OR_RETURN(TensorStore store, TensorStore::OpenFolder(dir));
  for (const Slot& slot : Slots(model.get())) {
    KVSIM_ASSIGN_OR_RETURN(FloatTensor t, store.Read(slot.name, slot.shape));
    *slot.data = std::move(t.data);
  }
  return model;
}

std::unique_ptr<LlamaModel> RandomLlamaModel(const LlamaConfig& config, uint64_t seed, float scale) {
  auto model = std::make_unique<LlamaModel>();
  model->config = config;
  model->source = absl::StrCat("random(seed=", seed, ")");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const Slot& slot : Slots(model.get())) {
    int64_t n = 1;
    for (int64_t d : slot.shape) n *= d;
    slot.data->resize(n);
    const bool norm = slot.shape.size() == 1 && slot.name.find("bias") == std::string::npos;
    const float bound = scale / std::sqrt(static_cast<float>(slot.shape.back()));
    for (float& x : *slot.data) x = norm ? 1.0f + 0.1f * uniform(rng) : bound * uniform(rng);
  }
  return model;
}

std::map<std::string, FloatTensor> LlamaModelTensors(const LlamaModel& model) {
  LlamaModel& m = const_cast<LlamaModel&>(model);  // Slots() only takes addresses (layers keep their size)
  std::map<std::string, FloatTensor> tensors;
  for (const Slot& slot : Slots(&m)) tensors[slot.name] = FloatTensor{slot.shape, *slot.data};
  return tensors;
}

absl::Status WriteLlamaModelFolder(const LlamaModel& model, const std::string& dir, const std::string& dtype) {
  KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::filesystem::path p(dir);
  return WriteFilesAtomically(
      {{(p / "config.json").string(), LlamaConfigJson(model.config)},
       {(p / "model.safetensors").string(), EncodeSafetensors(LlamaModelTensors(model), dtype)}});
}

}  // namespace kvsim
