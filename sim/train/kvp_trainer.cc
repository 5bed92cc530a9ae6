#include "sim/train/kvp_trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/train/kvp_objective.h"
#include "sim/train/kvp_target.h"
#include "traces/attention/attention_trace_io.h"
#include "util/mix64.h"
#include "util/parallel.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// A uniform index in [0, bound) (bound >= 1): the high bits of a 64-bit draw scaled, no modulo bias worth
// speaking of at these sizes, and the same on every platform.
int64_t UniformIndex(std::mt19937_64& rng, int64_t bound) {
  return static_cast<int64_t>(UniformOpen(rng) * static_cast<double>(bound)) % bound;
}

bool SameLayout(const AttentionTraceHeader& a, const AttentionTraceHeader& b) {
  return a.model == b.model && a.num_layers == b.num_layers && a.num_query_heads == b.num_query_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim && a.kept_layers == b.kept_layers &&
         a.kept_kv_heads == b.kept_kv_heads;
}

absl::Status AddSample(const AttentionTraceHeader& header, const AttentionSample& sample, int64_t index,
                       const std::string& name, const KvpTrainOptions& options, bool heldout, KvpTrainData* data) {
  if (sample.num_decode_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": sample ", index, " has no decode steps: the target needs future queries"));
  }
  const int64_t n = sample.prompt_len;
  const int64_t f = std::min<int64_t>(options.future_queries, sample.num_decode_steps);
  const int d = header.head_dim;
  const int64_t bytes = static_cast<int64_t>(sample.heads.size()) * n * (2 * d * sizeof(float) + sizeof(double));
  if (data->bytes + bytes > options.max_data_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: sample %d would take the training data to %.1f MiB, above the bound of %.1f MiB (prompt keys, "
        "values and targets of every kept head): train on fewer or shorter samples, or raise the bound",
        name, index, (data->bytes + bytes) / 1048576.0, options.max_data_bytes / 1048576.0));
  }
  data->bytes += bytes;
  for (size_t h = 0; h < sample.heads.size(); ++h) {
    const HeadTensors& head = sample.heads[h];
    auto importance = FutureImportance(header, sample, head, n, f);
    if (!importance.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": sample ", index, ": ", importance.status().message()));
    }
    KvpExample example;
    example.sample = index;
    example.n = n;
    example.keys.assign(head.keys.begin(), head.keys.begin() + n * d);
    example.values.assign(head.values.begin(), head.values.begin() + n * d);
    example.importance = *std::move(importance);
    (heldout ? data->heldout : data->train)[h].push_back(std::move(example));
  }
  return absl::OkStatus();
}

int64_t NumHeldOut(int64_t total, double fraction) {
  return std::min<int64_t>(total - 1, std::llround(fraction * static_cast<double>(total)));
}

void InitData(const AttentionTraceHeader& header, KvpTrainData* data) {
  data->header = header;
  data->train.assign(header.num_kept_heads(), {});
  data->heldout.assign(header.num_kept_heads(), {});
}

// One agent's parameters and their gradients, as the optimiser sees them.
struct Gradients {
  KvpMatrix w1, w2;
  Eigen::RowVectorXf b1, b2;
  Eigen::VectorXf w3;
  float b3 = 0;
};

void Backward(const KvpMlp& mlp, const KvpActivations& act, const Eigen::VectorXf& ds, Gradients* g) {
  g->w3.noalias() = act.h2.transpose() * ds;
  g->b3 = ds.sum();
  KvpMatrix dh2 = ds * mlp.w3.transpose();
  dh2.array() *= (act.h2.array() > 0).cast<float>();
  g->w2.noalias() = dh2.transpose() * act.h1;
  g->b2 = dh2.colwise().sum();
  KvpMatrix dh1;
  dh1.noalias() = dh2 * mlp.w2;
  dh1.array() *= (act.h1.array() > 0).cast<float>();
  g->w1.noalias() = dh1.transpose() * act.z;
  g->b1 = dh1.colwise().sum();
}

KvpMlp InitialAgent(int32_t layer, int32_t kv_head, int head_dim, int hidden, const std::vector<KvpExample>& train,
                    std::mt19937_64& rng) {
  const int dim = KvpInputDim(head_dim);
  KvpMlp mlp;
  mlp.layer = layer;
  mlp.kv_head = kv_head;
  // Standardisation from every training token of this head.
  std::vector<double> sum(dim, 0.0), sum_sq(dim, 0.0);
  int64_t count = 0;
  KvpMatrix x;
  for (const KvpExample& example : train) {
    KvpFeatures(example.keys.data(), example.values.data(), example.n, head_dim, &x);
    for (int64_t i = 0; i < x.rows(); ++i) {
      for (int c = 0; c < dim; ++c) {
        sum[c] += x(i, c);
        sum_sq[c] += static_cast<double>(x(i, c)) * x(i, c);
      }
    }
    count += x.rows();
  }
  mlp.input_mean.resize(dim);
  mlp.input_std.resize(dim);
  for (int c = 0; c < dim; ++c) {
    const double mean = count > 0 ? sum[c] / count : 0.0;
    const double var = count > 0 ? std::max(0.0, sum_sq[c] / count - mean * mean) : 1.0;
    mlp.input_mean[c] = static_cast<float>(mean);
    mlp.input_std[c] = var > 1e-12 ? static_cast<float>(std::sqrt(var)) : 1.0f;
  }
  // PyTorch's nn.Linear initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
  auto fill = [&rng](float* p, int64_t size, int fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (int64_t i = 0; i < size; ++i) p[i] = static_cast<float>((2 * UniformOpen(rng) - 1) * bound);
  };
  mlp.w1.resize(hidden, dim);
  mlp.b1.resize(hidden);
  mlp.w2.resize(hidden, hidden);
  mlp.b2.resize(hidden);
  mlp.w3.resize(hidden);
  fill(mlp.w1.data(), mlp.w1.size(), dim);
  fill(mlp.b1.data(), mlp.b1.size(), dim);
  fill(mlp.w2.data(), mlp.w2.size(), hidden);
  fill(mlp.b2.data(), mlp.b2.size(), hidden);
  fill(mlp.w3.data(), mlp.w3.size(), hidden);
  float b3 = 0;
  fill(&b3, 1, hidden);
  mlp.b3 = b3;
  return mlp;
}

proto::KvpAgent TrainAgent(const KvpTrainData& data, size_t h, const KvpTrainOptions& options, int64_t steps) {
  const AttentionTraceHeader& header = data.header;
  const int32_t layer = header.kept_layers[h / header.kept_kv_heads.size()];
  const int32_t kv_head = header.kept_kv_heads[h % header.kept_kv_heads.size()];
  const int d = header.head_dim;
  const std::vector<KvpExample>& train = data.train[h];
  std::mt19937_64 rng(Mix64(options.seed ^ Mix64((static_cast<uint64_t>(layer) << 32) | static_cast<uint32_t>(kv_head))));
  KvpMlp mlp = InitialAgent(layer, kv_head, d, options.hidden_units, train, rng);
  Gradients g;
  AdamW adam({{mlp.w1.data(), mlp.w1.size()},
              {mlp.b1.data(), mlp.b1.size()},
              {mlp.w2.data(), mlp.w2.size()},
              {mlp.b2.data(), mlp.b2.size()},
              {mlp.w3.data(), mlp.w3.size()},
              {&mlp.b3, 1}},
             options.adam);
  proto::KvpAgent agent;
  std::vector<int64_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  KvpMatrix full, x;
  KvpActivations act;
  Eigen::VectorXf scores, ds;
  std::vector<int64_t> tokens;
  std::vector<double> importance;
  const int64_t curve_every = std::max<int64_t>(1, steps / std::max(1, options.curve_points));
  double curve_sum = 0;
  int64_t curve_count = 0;
  for (int64_t t = 0; t < steps && !train.empty(); ++t) {
    if (t % static_cast<int64_t>(train.size()) == 0) {  // a new pass: Fisher-Yates shuffle
      for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
        std::swap(order[i], order[UniformIndex(rng, i + 1)]);
      }
    }
    const KvpExample& example = train[order[t % train.size()]];
    KvpFeatures(example.keys.data(), example.values.data(), example.n, d, &full);
    const int64_t m =
        options.max_tokens_per_step > 0 ? std::min<int64_t>(options.max_tokens_per_step, example.n) : example.n;
    if (m == example.n) {
      x = full;
      importance = example.importance;
    } else {  // a seeded subset of m tokens (partial Fisher-Yates), in position order
      tokens.resize(example.n);
      std::iota(tokens.begin(), tokens.end(), 0);
      for (int64_t i = 0; i < m; ++i) std::swap(tokens[i], tokens[i + UniformIndex(rng, example.n - i)]);
      std::sort(tokens.begin(), tokens.begin() + m);
      x.resize(m, full.cols());
      importance.resize(m);
      for (int64_t i = 0; i < m; ++i) {
        x.row(i) = full.row(tokens[i]);
        importance[i] = example.importance[tokens[i]];
      }
    }
    mlp.Forward(x, &scores, &act);
    const ObjectiveResult objective = options.objective == KvpObjective::kReinforce
                                          ? ReinforceGradient(scores.data(), importance, options.samples_per_step, rng)
                                          : SoftSortGradient(scores.data(), importance, options.softsort_temperature);
    ds.resize(m);
    for (int64_t i = 0; i < m; ++i) ds[i] = static_cast<float>(objective.grad[i]);
    Backward(mlp, act, ds, &g);
    adam.Step({g.w1.data(), g.b1.data(), g.w2.data(), g.b2.data(), g.w3.data(), &g.b3}, t, steps);
    const double oracle_cost = AllBudgetCost(OracleRanking(importance), importance);
    curve_sum += NormalisedReward(AllBudgetCost(RankByScores(scores.data(), m), importance), oracle_cost);
    ++curve_count;
    if ((t + 1) % curve_every == 0 || t + 1 == steps) {
      proto::KvpCurvePoint* point = agent.add_curve();
      point->set_step(t + 1);
      point->set_train_reward(curve_sum / curve_count);
      curve_sum = 0;
      curve_count = 0;
    }
  }
  KvpMlpToProto(mlp, &agent);
  agent.set_train_examples(train.size());
  agent.set_heldout_examples(data.heldout[h].size());
  agent.set_heldout_reward(KvpMeanReward(mlp, d, data.heldout[h]));
  return agent;
}

}  // namespace

KvpTrainOptions KvpSmallModelOptions() {
  KvpTrainOptions options;
  options.hidden_units = 32;
  options.steps = 600;
  options.adam.learning_rate = 3e-3;
  options.adam.final_learning_rate = 1e-4;
  options.max_tokens_per_step = 1024;
  return options;
}

absl::Status ValidateKvpTrainOptions(const KvpTrainOptions& o) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (o.hidden_units < 1 || o.hidden_units > 65536)
    return bad(absl::StrCat("hidden units ", o.hidden_units, ": must be in [1, 65536]"));
  if (o.future_queries < 1) return bad(absl::StrCat("future queries ", o.future_queries, ": must be >= 1"));
  if (o.samples_per_step < 2)
    return bad(absl::StrCat("samples per step ", o.samples_per_step, ": must be >= 2 (leave-one-out baseline)"));
  if (o.steps < 1 && o.epochs < 1) return bad("steps or epochs must be >= 1");
  if (o.epochs < 0) return bad(absl::StrCat("epochs ", o.epochs, ": must be >= 0"));
  if (!(o.adam.learning_rate > 0) || !(o.adam.final_learning_rate >= 0) || !(o.adam.weight_decay >= 0)) {
    return bad("learning rates must be > 0 (final >= 0) and weight decay >= 0");
  }
  if (!(o.softsort_temperature > 0)) return bad("soft-sort temperature must be > 0");
  if (o.max_tokens_per_step < 0) return bad("max tokens per step must be >= 0");
  if (!(o.holdout_fraction >= 0 && o.holdout_fraction < 1)) {
    return bad(absl::StrCat("holdout fraction ", o.holdout_fraction, ": must be in [0, 1)"));
  }
  if (o.num_threads < 0 || o.num_threads > kMaxThreads) {
    return bad(absl::StrCat("threads ", o.num_threads, ": must be in [0, ", kMaxThreads, "]"));
  }
  if (o.curve_points < 1) return bad("curve points must be >= 1");
  if (o.max_data_bytes < 1) return bad("the training-data memory bound must be >= 1 byte");
  return absl::OkStatus();
}

absl::StatusOr<KvpTrainData> BuildKvpTrainData(const std::vector<std::string>& paths, const KvpTrainOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateKvpTrainOptions(options));
  if (paths.empty()) return absl::InvalidArgumentError("no traces given");
  std::vector<std::unique_ptr<AttentionTraceReader>> readers;
  int64_t total = 0;
  for (const std::string& path : paths) {
    KVSIM_ASSIGN_OR_RETURN(auto reader, AttentionTraceReader::Open(path));
    if (!readers.empty() && !SameLayout(readers[0]->header(), reader->header())) {
      const AttentionTraceHeader &a = readers[0]->header(), &b = reader->header();
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": its layout (model '", b.model, "', ", b.num_layers, " layers, ", b.num_kv_heads,
          " KV heads, head_dim ", b.head_dim, ", ", b.kept_layers.size(), " kept layers x ", b.kept_kv_heads.size(),
          " kept KV heads) differs from ", paths[0], "'s (model '", a.model, "', ", a.num_layers, " layers, ",
          a.num_kv_heads, " KV heads, head_dim ", a.head_dim, ", ", a.kept_layers.size(), " x ", a.kept_kv_heads.size(),
          "): one model trains on traces of one layout"));
    }
    total += reader->num_samples();
    readers.push_back(std::move(reader));
  }
  if (total < 1) return absl::InvalidArgumentError("the traces hold no samples");
  const int64_t heldout = NumHeldOut(total, options.holdout_fraction);
  KvpTrainData data;
  InitData(readers[0]->header(), &data);
  data.traces = paths;
  int64_t index = 0;
  for (size_t r = 0; r < readers.size(); ++r) {
    for (int64_t s = 0; s < readers[r]->num_samples(); ++s, ++index) {
      KVSIM_ASSIGN_OR_RETURN(AttentionSample sample, readers[r]->ReadSample(s));
      KVSIM_RETURN_IF_ERROR(AddSample(data.header, sample, s, paths[r], options, index >= total - heldout, &data));
    }
  }
  data.heldout_samples = heldout;
  data.train_samples = total - heldout;
  return data;
}

absl::StatusOr<KvpTrainData> BuildKvpTrainData(const AttentionTraceHeader& header,
                                               const std::vector<AttentionSample>& samples, const std::string& name,
                                               const KvpTrainOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateKvpTrainOptions(options));
  KVSIM_RETURN_IF_ERROR(ValidateHeader(header));
  const int64_t total = samples.size();
  if (total < 1) return absl::InvalidArgumentError(absl::StrCat(name, ": no samples"));
  const int64_t heldout = NumHeldOut(total, options.holdout_fraction);
  KvpTrainData data;
  InitData(header, &data);
  data.traces = {name};
  for (int64_t s = 0; s < total; ++s) {
    if (auto status = ValidateSample(header, samples[s]); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": sample ", s, ": ", status.message()));
    }
    KVSIM_RETURN_IF_ERROR(AddSample(header, samples[s], s, name, options, s >= total - heldout, &data));
  }
  data.heldout_samples = heldout;
  data.train_samples = total - heldout;
  return data;
}

double KvpMeanReward(const KvpMlp& agent, int head_dim, const std::vector<KvpExample>& examples) {
  if (examples.empty()) return std::numeric_limits<double>::quiet_NaN();
  KvpMatrix x;
  Eigen::VectorXf scores;
  double sum = 0;
  for (const KvpExample& example : examples) {
    KvpFeatures(example.keys.data(), example.values.data(), example.n, head_dim, &x);
    agent.Forward(x, &scores);
    const double oracle = AllBudgetCost(OracleRanking(example.importance), example.importance);
    sum += NormalisedReward(AllBudgetCost(RankByScores(scores.data(), example.n), example.importance), oracle);
  }
  return sum / examples.size();
}

absl::StatusOr<proto::KvpModel> TrainKvp(const KvpTrainData& data, const KvpTrainOptions& options,
                                         const KvpProgress& progress) {
  KVSIM_RETURN_IF_ERROR(ValidateKvpTrainOptions(options));
  const AttentionTraceHeader& header = data.header;
  const size_t num_agents = header.num_kept_heads();
  if (data.train.size() != num_agents || data.heldout.size() != num_agents) {
    return absl::InvalidArgumentError("training data does not match its header's kept heads");
  }
  for (size_t h = 0; h < num_agents; ++h) {
    if (data.train[h].empty()) return absl::InvalidArgumentError("no training examples (every sample is held out)");
  }
  proto::KvpModel model;
  model.set_format_version(kKvpFormatVersion);
  model.set_model(header.model);
  model.set_num_layers(header.num_layers);
  model.set_num_query_heads(header.num_query_heads);
  model.set_num_kv_heads(header.num_kv_heads);
  model.set_head_dim(header.head_dim);
  for (int32_t l : header.kept_layers) model.add_layers(l);
  for (int32_t h : header.kept_kv_heads) model.add_kv_heads(h);
  model.set_synthetic(header.synthetic);
  model.set_seed(options.seed);
  for (const std::string& trace : data.traces) model.add_traces(trace);
  model.set_train_samples(data.train_samples);
  model.set_heldout_samples(data.heldout_samples);
  const int64_t steps =
      options.epochs > 0 ? options.epochs * static_cast<int64_t>(data.train[0].size()) : options.steps;
  proto::KvpHyperparameters* hp = model.mutable_hyperparameters();
  hp->set_hidden_units(options.hidden_units);
  hp->set_future_queries(options.future_queries);
  hp->set_samples_per_step(options.samples_per_step);
  hp->set_steps(steps);
  hp->set_learning_rate(options.adam.learning_rate);
  hp->set_final_learning_rate(options.adam.final_learning_rate);
  hp->set_weight_decay(options.adam.weight_decay);
  hp->set_objective(options.objective == KvpObjective::kReinforce ? "reinforce" : "softsort");
  hp->set_softsort_temperature(options.softsort_temperature);
  hp->set_max_tokens_per_step(options.max_tokens_per_step);
  hp->set_holdout_fraction(options.holdout_fraction);
  std::vector<proto::KvpAgent> agents(num_agents);
  std::mutex progress_mutex;
  int done = 0;
  ParallelFor(ResolveThreadCount(options.num_threads), num_agents, [&](size_t h, int) {
    agents[h] = TrainAgent(data, h, options, steps);
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(++done, static_cast<int>(num_agents));
    }
  });
  for (proto::KvpAgent& agent : agents) *model.add_agents() = std::move(agent);
  return model;
}

}  // namespace kvsim
