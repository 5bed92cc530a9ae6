#include "sim/eval/llama_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "simdjson.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

constexpr double kPi = 3.14159265358979323846;

class ConfigParser {
 public:
  ConfigParser(simdjson::dom::object root, const std::string& path) : root_(root), path_(path) {}

  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": \"", key, "\" ", what));
  }
  bool Present(simdjson::dom::object o, const char* key) const {
    simdjson::dom::element e;
    return o[key].get(e) == simdjson::SUCCESS && !e.is_null();
  }
  absl::Status Int(simdjson::dom::object o, const char* key, int64_t lo, int64_t hi, bool required,
                   int64_t* out) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) {
      return required ? Error(key, "is missing") : absl::OkStatus();
    }
    int64_t v;
    if (e.get_int64().get(v) != simdjson::SUCCESS || v < lo || v > hi) {
      return Error(key, absl::StrCat("must be an integer in [", lo, ", ", hi, "], got ", simdjson::minify(e)));
    }
    *out = v;
    return absl::OkStatus();
  }
  absl::Status Int32(simdjson::dom::object o, const char* key, int64_t lo, bool required, int32_t* out) const {
    int64_t v = *out;
    KVSIM_RETURN_IF_ERROR(Int(o, key, lo, int64_t{1} << 30, required, &v));
    *out = static_cast<int32_t>(v);
    return absl::OkStatus();
  }
  absl::Status Double(simdjson::dom::object o, const char* key, bool required, double* out) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) {
      return required ? Error(key, "is missing") : absl::OkStatus();
    }
    if (!e.is_number() || e.get_double().get(*out) != simdjson::SUCCESS || !std::isfinite(*out)) {
      return Error(key, absl::StrCat("must be a number, got ", simdjson::minify(e)));
    }
    return absl::OkStatus();
  }
  absl::Status Bool(simdjson::dom::object o, const char* key, bool* out) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return absl::OkStatus();
    if (e.get_bool().get(*out) != simdjson::SUCCESS) {
      return Error(key, absl::StrCat("must be true or false, got ", simdjson::minify(e)));
    }
    return absl::OkStatus();
  }
  absl::Status String(simdjson::dom::object o, const char* key, std::string* out) const {
    simdjson::dom::element e;
    if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return absl::OkStatus();
    std::string_view s;
    if (e.get_string().get(s) != simdjson::SUCCESS) return Error(key, "must be a string");
    *out = std::string(s);
    return absl::OkStatus();
  }

  absl::StatusOr<LlamaConfig> Parse() const {
    LlamaConfig c;
    simdjson::dom::array archs;
    if (root_["architectures"].get_array().get(archs) != simdjson::SUCCESS || archs.size() != 1) {
      return Error("architectures", "must be a list of one name, e.g. [\"LlamaForCausalLM\"]");
    }
    std::string_view arch;
    if (archs.at(0).get_string().get(arch) != simdjson::SUCCESS) return Error("architectures", "must hold a string");
    c.architecture = std::string(arch);
    if (c.architecture != "LlamaForCausalLM" && c.architecture != "Qwen2ForCausalLM" &&
        c.architecture != "MistralForCausalLM") {
      return Error("architectures", absl::StrCat("'", c.architecture,
                                                 "' is not supported (LlamaForCausalLM, Qwen2ForCausalLM, "
                                                 "MistralForCausalLM)"));
    }
    std::string act = "silu";
    KVSIM_RETURN_IF_ERROR(String(root_, "hidden_act", &act));
    if (act != "silu") return Error("hidden_act", absl::StrCat("'", act, "' is not supported (silu)"));
    KVSIM_RETURN_IF_ERROR(Int32(root_, "hidden_size", 1, true, &c.hidden_size));
    KVSIM_RETURN_IF_ERROR(Int32(root_, "intermediate_size", 1, true, &c.intermediate_size));
    KVSIM_RETURN_IF_ERROR(Int32(root_, "num_hidden_layers", 1, true, &c.num_layers));
    KVSIM_RETURN_IF_ERROR(Int32(root_, "num_attention_heads", 1, true, &c.num_heads));
    c.num_kv_heads = c.num_heads;
    KVSIM_RETURN_IF_ERROR(Int32(root_, "num_key_value_heads", 1, false, &c.num_kv_heads));
    if (c.num_heads % c.num_kv_heads != 0) {
      return Error("num_key_value_heads",
                   absl::StrCat(c.num_kv_heads, " does not divide num_attention_heads ", c.num_heads));
    }
    if (Present(root_, "head_dim")) {
      KVSIM_RETURN_IF_ERROR(Int32(root_, "head_dim", 2, true, &c.head_dim));
    } else {
      if (c.hidden_size % c.num_heads != 0) {
        return Error("hidden_size", absl::StrCat(c.hidden_size, " is not a multiple of num_attention_heads ",
                                                 c.num_heads, " (and no head_dim is given)"));
      }
      c.head_dim = c.hidden_size / c.num_heads;
    }
    if (c.head_dim % 2 != 0) return Error("head_dim", absl::StrCat(c.head_dim, " must be even (rotary pairs)"));
    KVSIM_RETURN_IF_ERROR(Int32(root_, "vocab_size", 1, true, &c.vocab_size));
    KVSIM_RETURN_IF_ERROR(Double(root_, "rms_norm_eps", true, &c.rms_norm_eps));
    if (!(c.rms_norm_eps > 0)) return Error("rms_norm_eps", "must be > 0");
    KVSIM_RETURN_IF_ERROR(Double(root_, "rope_theta", false, &c.rope_theta));
    if (!(c.rope_theta > 1)) return Error("rope_theta", "must be > 1");
    KVSIM_RETURN_IF_ERROR(Int(root_, "max_position_embeddings", 1, int64_t{1} << 40, true, &c.max_position_embeddings));
    KVSIM_RETURN_IF_ERROR(Bool(root_, "tie_word_embeddings", &c.tie_word_embeddings));
    if (c.architecture == "Qwen2ForCausalLM") {
      c.attention_bias = true;  // Qwen2's q/k/v always have biases, its o_proj never
    } else if (c.architecture == "LlamaForCausalLM") {
      KVSIM_RETURN_IF_ERROR(Bool(root_, "attention_bias", &c.attention_bias));
      c.o_bias = c.attention_bias;  // transformers' LlamaAttention biases o_proj too
    }
    KVSIM_RETURN_IF_ERROR(Bool(root_, "mlp_bias", &c.mlp_bias));
    if (c.mlp_bias) return Error("mlp_bias", "true is not supported");
    KVSIM_RETURN_IF_ERROR(String(root_, "torch_dtype", &c.torch_dtype));
    if (c.architecture == "MistralForCausalLM") {
      KVSIM_RETURN_IF_ERROR(Int(root_, "sliding_window", 1, int64_t{1} << 40, false, &c.sliding_window));
    }
    simdjson::dom::element eos;
    if (root_["eos_token_id"].get(eos) == simdjson::SUCCESS && !eos.is_null()) {
      std::vector<simdjson::dom::element> items;
      if (eos.is_array()) {
        for (simdjson::dom::element e : eos.get_array()) items.push_back(e);
      } else {
        items.push_back(eos);
      }
      for (simdjson::dom::element e : items) {
        int64_t id;
        if (e.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id >= c.vocab_size) {
          return Error("eos_token_id",
                       absl::StrCat("must be token ids in [0, vocab_size), got ", simdjson::minify(eos)));
        }
        c.eos_token_ids.push_back(static_cast<int32_t>(id));
      }
    }
    bool qwen_sliding = false;
    if (c.architecture == "Qwen2ForCausalLM") KVSIM_RETURN_IF_ERROR(Bool(root_, "use_sliding_window", &qwen_sliding));
    if (qwen_sliding) return Error("use_sliding_window", "true is not supported for Qwen2ForCausalLM");
    simdjson::dom::element scaling;
    if (root_["rope_scaling"].get(scaling) == simdjson::SUCCESS && !scaling.is_null()) {
      simdjson::dom::object s;
      if (scaling.get_object().get(s) != simdjson::SUCCESS) return Error("rope_scaling", "must be null or an object");
      std::string type;
      KVSIM_RETURN_IF_ERROR(String(s, "rope_type", &type));
      if (type.empty()) KVSIM_RETURN_IF_ERROR(String(s, "type", &type));
      LlamaRopeScaling& r = c.rope_scaling;
      if (type == "default") {
        r.type = RopeScaling::kNone;
      } else if (type == "linear" || type == "dynamic" || type == "llama3" || type == "yarn") {
        r.type = type == "linear"    ? RopeScaling::kLinear
                 : type == "dynamic" ? RopeScaling::kDynamic
                 : type == "llama3"  ? RopeScaling::kLlama3
                                     : RopeScaling::kYarn;
        KVSIM_RETURN_IF_ERROR(Double(s, "factor", true, &r.factor));
        if (!(r.factor >= 1)) return Error("rope_scaling.factor", "must be >= 1");
      } else {
        return Error("rope_scaling.rope_type",
                     absl::StrCat("'", type, "' is not supported (default, linear, dynamic, llama3, yarn)"));
      }
      KVSIM_RETURN_IF_ERROR(Int(s, "original_max_position_embeddings", 1, int64_t{1} << 40,
                                r.type == RopeScaling::kLlama3, &r.original_max_position_embeddings));
      if (r.type == RopeScaling::kLlama3) {
        KVSIM_RETURN_IF_ERROR(Double(s, "low_freq_factor", true, &r.low_freq_factor));
        KVSIM_RETURN_IF_ERROR(Double(s, "high_freq_factor", true, &r.high_freq_factor));
        if (!(r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0)) {
          return Error("rope_scaling.high_freq_factor", "must exceed low_freq_factor > 0");
        }
      }
      if (r.type == RopeScaling::kYarn) {
        KVSIM_RETURN_IF_ERROR(Double(s, "beta_fast", false, &r.beta_fast));
        KVSIM_RETURN_IF_ERROR(Double(s, "beta_slow", false, &r.beta_slow));
        KVSIM_RETURN_IF_ERROR(Double(s, "attention_factor", false, &r.attention_factor));
        KVSIM_RETURN_IF_ERROR(Double(s, "mscale", false, &r.mscale));
        KVSIM_RETURN_IF_ERROR(Double(s, "mscale_all_dim", false, &r.mscale_all_dim));
      }
    }
    return c;
  }

 private:
  simdjson::dom::object root_;
  std::string path_;
};

// transformers' default frequencies: 1 / base^(2i / dim), each step in float32.
std::vector<float> DefaultInvFreq(double base, int dim) {
  std::vector<float> inv(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    const float power = static_cast<float>(std::pow(base, static_cast<double>(exponent)));
    inv[i] = 1.0f / power;
  }
  return inv;
}

double YarnMscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

absl::StatusOr<LlamaConfig> ParseLlamaConfig(const std::string& text, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(simdjson::padded_string(text)).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object"));
  }
  return ConfigParser(object, path).Parse();
}

absl::StatusOr<LlamaConfig> ReadLlamaConfig(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseLlamaConfig(text, path);
}

std::string LlamaConfigJson(const LlamaConfig& c) {
  const LlamaRopeScaling& r = c.rope_scaling;
  Json scaling = nullptr;
  if (r.type != RopeScaling::kNone) {
    scaling = Json::object();
    scaling["rope_type"] = r.type == RopeScaling::kLinear    ? "linear"
                           : r.type == RopeScaling::kDynamic ? "dynamic"
                           : r.type == RopeScaling::kLlama3  ? "llama3"
                                                             : "yarn";
    scaling["factor"] = JsonNumberOrNull(r.factor);
    if (r.original_max_position_embeddings > 0) {
      scaling["original_max_position_embeddings"] = r.original_max_position_embeddings;
    }
    if (r.type == RopeScaling::kLlama3) {
      scaling["low_freq_factor"] = JsonNumberOrNull(r.low_freq_factor);
      scaling["high_freq_factor"] = JsonNumberOrNull(r.high_freq_factor);
    }
    if (r.type == RopeScaling::kYarn) {
      scaling["beta_fast"] = JsonNumberOrNull(r.beta_fast);
      scaling["beta_slow"] = JsonNumberOrNull(r.beta_slow);
    }
  }
  Json j = Json::object();
  j["architectures"] = Json::array({c.architecture});
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["rms_norm_eps"] = JsonNumberOrNull(c.rms_norm_eps);
  j["rope_theta"] = JsonNumberOrNull(c.rope_theta);
  j["rope_scaling"] = std::move(scaling);
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  if (c.sliding_window > 0) j["sliding_window"] = c.sliding_window;
  if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  j["torch_dtype"] = "float32";
  return DumpJson(j);
}

RopeFrequencies RopeFrequenciesAt(const LlamaConfig& c, int64_t seq_len) {
  const int dim = c.head_dim;
  const LlamaRopeScaling& r = c.rope_scaling;
  RopeFrequencies f;
  switch (r.type) {
    case RopeScaling::kLinear: {
      f.inv_freq = DefaultInvFreq(c.rope_theta, dim);
      for (float& x : f.inv_freq) x = x / static_cast<float>(r.factor);
      break;
    }
    case RopeScaling::kDynamic: {
      const double max_pos = static_cast<double>(c.max_position_embeddings);
      const double len = seq_len > c.max_position_embeddings ? static_cast<double>(seq_len) : max_pos;
      const double base =
          c.rope_theta * std::pow(r.factor * len / max_pos - (r.factor - 1), static_cast<double>(dim) / (dim - 2));
      f.inv_freq = DefaultInvFreq(base, dim);
      break;
    }
    case RopeScaling::kLlama3: {
      f.inv_freq = DefaultInvFreq(c.rope_theta, dim);
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
      for (float& x : f.inv_freq) {
        const double wavelen = 2 * kPi / x;
        if (wavelen < high_wavelen) continue;  // high frequencies: unchanged
        if (wavelen > low_wavelen) {
          x = static_cast<float>(x / r.factor);
        } else {
          const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
          x = static_cast<float>((1 - smooth) * x / r.factor + smooth * x);
        }
      }
      break;
    }
    case RopeScaling::kYarn: {
      const double original =
          r.original_max_position_embeddings > 0 ? r.original_max_position_embeddings : c.max_position_embeddings;
      if (r.attention_factor > 0) {
        f.attention_scaling = static_cast<float>(r.attention_factor);
      } else if (r.mscale > 0 && r.mscale_all_dim > 0) {
        f.attention_scaling =
            static_cast<float>(YarnMscale(r.factor, r.mscale) / YarnMscale(r.factor, r.mscale_all_dim));
      } else {
        f.attention_scaling = static_cast<float>(YarnMscale(r.factor, 1.0));
      }
      auto correction_dim = [&](double rotations) {
        return dim * std::log(original / (rotations * 2 * kPi)) / (2 * std::log(c.rope_theta));
      };
      const double low = std::max(0.0, std::floor(correction_dim(r.beta_fast)));
      double high = std::min(static_cast<double>(dim - 1), std::ceil(correction_dim(r.beta_slow)));
      if (low == high) high += 0.001;
      const std::vector<float> extrapolation = DefaultInvFreq(c.rope_theta, dim);
      f.inv_freq.resize(dim / 2);
      for (int i = 0; i < dim / 2; ++i) {
        const float pos_freq = 1.0f / extrapolation[i];
        const float interpolation = 1.0f / (static_cast<float>(r.factor) * pos_freq);
        const float ramp = std::min(1.0f, std::max(0.0f, static_cast<float>((i - low) / (high - low))));
        const float extrapolation_factor = 1.0f - ramp;
        f.inv_freq[i] = interpolation * (1 - extrapolation_factor) + extrapolation[i] * extrapolation_factor;
      }
      break;
    }
    default:
      f.inv_freq = DefaultInvFreq(c.rope_theta, dim);
  }
  return f;
}

RopeConfig TraceRopeConfig(const LlamaConfig& c) {
  RopeConfig rope;
  rope.base = c.rope_theta;
  rope.scaling = c.rope_scaling.type;
  rope.scaling_factor = c.rope_scaling.factor;
  return rope;
}

AttentionTraceHeader TraceLayout(const LlamaConfig& c) {
  AttentionTraceHeader header;
  header.num_layers = c.num_layers;
  header.num_query_heads = c.num_heads;
  header.num_kv_heads = c.num_kv_heads;
  header.head_dim = c.head_dim;
  header.rope = TraceRopeConfig(c);
  for (int32_t l = 0; l < c.num_layers; ++l) header.kept_layers.push_back(l);
  for (int32_t h = 0; h < c.num_kv_heads; ++h) header.kept_kv_heads.push_back(h);
  return header;
}

}  // namespace kvsim
