// File: policies/token/kvp_model.h
//
// The KVP model (KV Policy, "Learning to Evict from Key-Value Cache", arXiv 2602.10238): one small MLP
// ranker per (layer, KV head) that scores each cached token from its key, value and position only (no
// queries, no attention), and the versioned file that holds them (proto/kvp_model.proto; written by
// `kvsim train`, sim/train/, and read by the `kvp` token policy, kvp_policy.h).
//
// Features of token i among n cached tokens (KvpFeatures): x = (k_i, v_i, i / n, log(1 + i), log(n - i)),
// dimension 2 * head_dim + 3, standardised per agent with the training data's mean and standard deviation.
// Network: s = w3 . relu(W2 relu(W1 z + b1) + b2) + b3 (two hidden layers of `hidden` units).
//
// File: the 8 bytes "KVSKVPM\x01", then a kvsim.proto.KvpModel in binary wire format (format_version 1).
// Serialisation is deterministic: the same model gives the same bytes.
//
// Thread-safety: KvpMlp::Forward is const and may run concurrently; a KvpModel is immutable once loaded.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(KvpModel model, LoadKvpModel("m.kvpm"));
//   KVSIM_RETURN_IF_ERROR(CheckKvpLayout(model, "m.kvpm", trace_header, "t.kvat"));
//   const KvpMlp* agent = model.Agent(layer, kv_head);
//   RowMatrixXf x;  KvpFeatures(keys, values, n, head_dim, &x);
//   Eigen::VectorXf scores;  agent->Forward(x, &scores);
#ifndef KVSIM_POLICIES_TOKEN_KVP_MODEL_H_
#define KVSIM_POLICIES_TOKEN_KVP_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/kvp_model.pb.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

using KvpMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kKvpPositionFeatures = 3;
constexpr uint32_t kKvpFormatVersion = 1;
inline constexpr char kKvpMagic[] = "KVSKVPM\x01";  // 8 bytes on disk (without the terminating NUL)
constexpr int kKvpMagicBytes = 8;

inline int KvpInputDim(int head_dim) { return 2 * head_dim + kKvpPositionFeatures; }

// The raw (unstandardised) features of tokens 0..n-1 of a cache of n tokens into *x (n x KvpInputDim).
// keys and values are n x head_dim row-major. REQUIRES: n >= 1.
void KvpFeatures(const float* keys, const float* values, int64_t n, int head_dim, KvpMatrix* x);

// Activations of one forward pass, kept for back-propagation (sim/train/).
struct KvpActivations {
  KvpMatrix z;   // standardised input, n x dim
  KvpMatrix h1;  // after the first ReLU, n x hidden
  KvpMatrix h2;  // after the second ReLU, n x hidden
};

// One agent's ranker.
struct KvpMlp {
  int32_t layer = 0, kv_head = 0;
  Eigen::RowVectorXf input_mean, input_std;  // dim; std > 0
  KvpMatrix w1;                              // hidden x dim
  Eigen::RowVectorXf b1;                     // hidden
  KvpMatrix w2;                              // hidden x hidden
  Eigen::RowVectorXf b2;                     // hidden
  Eigen::VectorXf w3;                        // hidden
  float b3 = 0;

  int dim() const { return static_cast<int>(w1.cols()); }
  int hidden() const { return static_cast<int>(w1.rows()); }
  int64_t num_parameters() const { return w1.size() + b1.size() + w2.size() + b2.size() + w3.size() + 1; }

  // Scores of the rows of raw features `x` (n x dim) into *scores (n). `act`, when not null, receives
  // the activations. Deterministic.
  void Forward(const KvpMatrix& x, Eigen::VectorXf* scores, KvpActivations* act = nullptr) const;
};

// Decoded from / encoded into the file's message. FromProto: InvalidArgument naming the agent and field
// when a tensor has the wrong size, a value is not finite or a standard deviation is not positive.
absl::StatusOr<KvpMlp> KvpMlpFromProto(const proto::KvpAgent& agent, int head_dim, int hidden);
void KvpMlpToProto(const KvpMlp& mlp, proto::KvpAgent* agent);

struct KvpModel {
  proto::KvpModel meta;        // everything the file holds (agents' weights included)
  std::vector<KvpMlp> agents;  // decoded, in meta.agents order

  // The agent of (layer, kv_head), or null when the model has none.
  const KvpMlp* Agent(int32_t layer, int32_t kv_head) const;
};

// The file's bytes for `model` (magic, then the message, deterministically serialised).
std::string SerializeKvpModel(const proto::KvpModel& model);

// Parses file bytes; `path` names the file in errors. InvalidArgument for a wrong magic or version, a
// message that does not parse, an inconsistent layout (agents not layer-major over layers x kv_heads)
// or a bad agent.
absl::StatusOr<KvpModel> ParseKvpModel(const std::string& bytes, const std::string& path);
absl::StatusOr<KvpModel> LoadKvpModel(const std::string& path);
// Writes atomically (util/file.h).
absl::Status SaveKvpModel(const std::string& path, const proto::KvpModel& model);

// OK if the model can rank every kept (layer, KV head) of a trace with `header`: the same model layout
// (layers, query heads, KV heads, head_dim) and an agent for each kept layer and KV head. InvalidArgument
// naming both files and both layouts otherwise.
absl::Status CheckKvpLayout(const KvpModel& model, const std::string& model_path, const AttentionTraceHeader& header,
                            const std::string& trace_name);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_KVP_MODEL_H_
