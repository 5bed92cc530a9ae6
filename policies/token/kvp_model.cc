#include "policies/token/kvp_model.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Copies `values` into `out` (size n) or says which field of which agent is wrong.
template <typename Out>
absl::Status Decode(const google::protobuf::RepeatedField<float>& values, int64_t n, const std::string& where,
                    const char* field, Out* out) {
  if (values.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": field ", field, " has ", values.size(), " values, expected ", n));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": field ", field, "[", i, "] = ", values[i], " is not finite"));
    }
  }
  std::memcpy(out->data(), values.data(), n * sizeof(float));
  return absl::OkStatus();
}

template <typename In>
void Encode(const In& in, google::protobuf::RepeatedField<float>* out) {
  out->Clear();
  out->Add(in.data(), in.data() + in.size());
}

std::string Layout(const std::string& model, int layers, int query_heads, int kv_heads, int head_dim) {
  return absl::StrCat("model '", model, "', ", layers, " layers, ", query_heads, " query heads, ", kv_heads,
                      " KV heads, head_dim ", head_dim);
}

}  // namespace

void KvpFeatures(const float* keys, const float* values, int64_t n, int head_dim, KvpMatrix* x) {
  x->resize(n, KvpInputDim(head_dim));
  for (int64_t i = 0; i < n; ++i) {
    float* row = x->row(i).data();
    std::memcpy(row, keys + i * head_dim, head_dim * sizeof(float));
    std::memcpy(row + head_dim, values + i * head_dim, head_dim * sizeof(float));
    row[2 * head_dim] = static_cast<float>(static_cast<double>(i) / n);
    row[2 * head_dim + 1] = static_cast<float>(std::log1p(static_cast<double>(i)));
    row[2 * head_dim + 2] = static_cast<float>(std::log(static_cast<double>(n - i)));
  }
}

void KvpMlp::Forward(const KvpMatrix& x, Eigen::VectorXf* scores, KvpActivations* act) const {
  KvpActivations local;
  KvpActivations& a = act != nullptr ? *act : local;
  const Eigen::RowVectorXf inv_std = input_std.cwiseInverse();
  a.z = (x.rowwise() - input_mean).array().rowwise() * inv_std.array();
  a.h1.noalias() = a.z * w1.transpose();
  a.h1.rowwise() += b1;
  a.h1 = a.h1.cwiseMax(0.0f);
  a.h2.noalias() = a.h1 * w2.transpose();
  a.h2.rowwise() += b2;
  a.h2 = a.h2.cwiseMax(0.0f);
  scores->noalias() = a.h2 * w3;
  scores->array() += b3;
}

absl::StatusOr<KvpMlp> KvpMlpFromProto(const proto::KvpAgent& agent, int head_dim, int hidden) {
  const std::string where = absl::StrCat("agent (layer ", agent.layer(), ", KV head ", agent.kv_head(), ")");
  const int dim = KvpInputDim(head_dim);
  KvpMlp mlp;
  mlp.layer = agent.layer();
  mlp.kv_head = agent.kv_head();
  mlp.input_mean.resize(dim);
  mlp.input_std.resize(dim);
  mlp.w1.resize(hidden, dim);
  mlp.b1.resize(hidden);
  mlp.w2.resize(hidden, hidden);
  mlp.b2.resize(hidden);
  mlp.w3.resize(hidden);
  KVSIM_RETURN_IF_ERROR(Decode(agent.input_mean(), dim, where, "input_mean", &mlp.input_mean));
  KVSIM_RETURN_IF_ERROR(Decode(agent.input_std(), dim, where, "input_std", &mlp.input_std));
  KVSIM_RETURN_IF_ERROR(Decode(agent.w1(), int64_t{hidden} * dim, where, "w1", &mlp.w1));
  KVSIM_RETURN_IF_ERROR(Decode(agent.b1(), hidden, where, "b1", &mlp.b1));
  KVSIM_RETURN_IF_ERROR(Decode(agent.w2(), int64_t{hidden} * hidden, where, "w2", &mlp.w2));
  KVSIM_RETURN_IF_ERROR(Decode(agent.b2(), hidden, where, "b2", &mlp.b2));
  KVSIM_RETURN_IF_ERROR(Decode(agent.w3(), hidden, where, "w3", &mlp.w3));
  if (!std::isfinite(agent.b3())) return absl::InvalidArgumentError(absl::StrCat(where, ": b3 is not finite"));
  mlp.b3 = agent.b3();
  for (int i = 0; i < dim; ++i) {
    if (!(mlp.input_std[i] > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": input_std[", i, "] = ", mlp.input_std[i], ", expected > 0"));
    }
  }
  return mlp;
}

void KvpMlpToProto(const KvpMlp& mlp, proto::KvpAgent* agent) {
  agent->set_layer(mlp.layer);
  agent->set_kv_head(mlp.kv_head);
  Encode(mlp.input_mean, agent->mutable_input_mean());
  Encode(mlp.input_std, agent->mutable_input_std());
  Encode(mlp.w1, agent->mutable_w1());
  Encode(mlp.b1, agent->mutable_b1());
  Encode(mlp.w2, agent->mutable_w2());
  Encode(mlp.b2, agent->mutable_b2());
  Encode(mlp.w3, agent->mutable_w3());
  agent->set_b3(mlp.b3);
}

const KvpMlp* KvpModel::Agent(int32_t layer, int32_t kv_head) const {
  for (const KvpMlp& agent : agents) {
    if (agent.layer == layer && agent.kv_head == kv_head) return &agent;
  }
  return nullptr;
}

std::string SerializeKvpModel(const proto::KvpModel& model) {
  std::string bytes(kKvpMagic, kKvpMagicBytes);
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    model.SerializeToCodedStream(&coded);
  }
  return bytes;
}

absl::StatusOr<KvpModel> ParseKvpModel(const std::string& bytes, const std::string& path) {
  if (bytes.size() < kKvpMagicBytes || std::memcmp(bytes.data(), kKvpMagic, kKvpMagicBytes) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a KVP model file (it does not start with the magic \"KVSKVPM\\x01\"; ",
                     "`kvsim train` writes them)"));
  }
  KvpModel model;
  if (!model.meta.ParseFromArray(bytes.data() + kKvpMagicBytes, static_cast<int>(bytes.size() - kKvpMagicBytes))) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the KVP model message does not parse (truncated or corrupt)"));
  }
  const proto::KvpModel& m = model.meta;
  if (m.format_version() != kKvpFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": KVP model format_version ", m.format_version(),
                                                   ", this kvsim reads version ", kKvpFormatVersion));
  }
  if (m.head_dim() < 1 || m.hyperparameters().hidden_units() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": head_dim ", m.head_dim(), " and hidden_units ",
                                                   m.hyperparameters().hidden_units(), " must be >= 1"));
  }
  const int64_t expected = static_cast<int64_t>(m.layers_size()) * m.kv_heads_size();
  if (m.agents_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", m.agents_size(), " agents, expected ", m.layers_size(),
                                                   " layers x ", m.kv_heads_size(), " KV heads = ", expected));
  }
  for (int l = 0; l < m.layers_size(); ++l) {
    for (int h = 0; h < m.kv_heads_size(); ++h) {
      const proto::KvpAgent& agent = m.agents(l * m.kv_heads_size() + h);
      if (agent.layer() != m.layers(l) || agent.kv_head() != m.kv_heads(h)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": agent ", l * m.kv_heads_size() + h, " is (layer ", agent.layer(), ", KV head ", agent.kv_head(),
            "), expected (layer ", m.layers(l), ", KV head ", m.kv_heads(h), ") (layer-major order)"));
      }
      auto mlp = KvpMlpFromProto(agent, m.head_dim(), m.hyperparameters().hidden_units());
      if (!mlp.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", mlp.status().message()));
      model.agents.push_back(*std::move(mlp));
    }
  }
  return model;
}

absl::StatusOr<KvpModel> LoadKvpModel(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseKvpModel(bytes, path);
}

absl::Status SaveKvpModel(const std::string& path, const proto::KvpModel& model) {
  return WriteFileAtomically(path, SerializeKvpModel(model));
}

absl::Status CheckKvpLayout(const KvpModel& model, const std::string& model_path, const AttentionTraceHeader& header,
                            const std::string& trace_name) {
  const proto::KvpModel& m = model.meta;
  const std::string trained = Layout(m.model(), m.num_layers(), m.num_query_heads(), m.num_kv_heads(), m.head_dim());
  const std::string traced =
      Layout(header.model, header.num_layers, header.num_query_heads, header.num_kv_heads, header.head_dim);
  if (m.num_layers() != header.num_layers || m.num_query_heads() != header.num_query_heads ||
      m.num_kv_heads() != header.num_kv_heads || m.head_dim() != header.head_dim) {
    return absl::InvalidArgumentError(absl::StrCat("KVP model ", model_path, " was trained for ", trained,
                                                   "; the trace", trace_name.empty() ? "" : " ", trace_name, " has ",
                                                   traced));
  }
  for (int32_t layer : header.kept_layers) {
    for (int32_t kv_head : header.kept_kv_heads) {
      if (model.Agent(layer, kv_head) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "KVP model ", model_path, " has no agent for layer ", layer, ", KV head ", kv_head, " of the trace",
            trace_name.empty() ? "" : " ", trace_name, " (the model's layers: ", absl::StrJoin(m.layers(), ","),
            "; KV heads: ", absl::StrJoin(m.kv_heads(), ","), ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace kvsim
