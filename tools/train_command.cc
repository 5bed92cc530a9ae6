// `kvsim train`: trains KVP's per-(layer, KV head) rankers (sim/train/kvp_trainer.h) on attention traces and
// writes the model file the `kvp` token policy reads (policies/token/kvp_model.h).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <ostream>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "policies/token/kvp_model.h"
#include "sim/train/kvp_trainer.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/progress.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, traces, "", "comma-separated attention traces (.kvat) to train on, all of one layout");
ABSL_FLAG(bool, small_model, false,
          "start from the small-model setting (32 hidden units, 600 steps, lr 3e-3 to 1e-4, 1,024 tokens per "
          "step) instead of the paper's (256 hidden, 4,000 steps, lr 5e-5 to 1e-6, every token)");
ABSL_FLAG(int64_t, steps, -1, "optimiser steps per agent; -1 = the setting's (paper: 4000)");
ABSL_FLAG(int32_t, epochs, 0, "> 0: steps = epochs x the training samples (overrides --steps)");
ABSL_FLAG(int32_t, future_queries, -1, "f: the target sums the attention of the next f queries; -1 = 64");
ABSL_FLAG(int32_t, samples_per_step, -1, "K permutations per step for REINFORCE (>= 2); -1 = 8");
ABSL_FLAG(int32_t, hidden, -1, "units in each of the two hidden layers; -1 = the setting's (paper: 256)");
ABSL_FLAG(double, holdout, 0, "fraction of the samples (the last ones) held out, in [0, 1)");
ABSL_FLAG(std::string, objective, "reinforce",
          "reinforce (the paper's) or softsort (the supervised soft-sort baseline the paper reports failing)");
ABSL_FLAG(double, learning_rate, -1, "peak AdamW learning rate; -1 = the setting's");
ABSL_FLAG(double, final_learning_rate, -1, "learning rate at the end of the cosine schedule; -1 = the setting's");
ABSL_FLAG(int64_t, train_memory_mib, 16384,
          "bound on the training data held in memory (prompt keys, values and targets of every kept head), MiB");
ABSL_FLAG(int32_t, max_tokens_per_step, -1,
          "tokens of a sample used per step (a seeded subset); 0 = all; -1 = the setting's");

namespace kvsim {
namespace {

double CpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

double PeakRssMib() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // KiB on Linux
}

absl::StatusOr<KvpTrainOptions> OptionsFromFlags() {
  // -1 = the setting's value; anything else below 0 is a mistake, not a request for the default.
  for (const auto& [name, value] :
       std::vector<std::pair<const char*, double>>{{"steps", absl::GetFlag(FLAGS_steps)},
                                                   {"future_queries", absl::GetFlag(FLAGS_future_queries)},
                                                   {"samples_per_step", absl::GetFlag(FLAGS_samples_per_step)},
                                                   {"hidden", absl::GetFlag(FLAGS_hidden)},
                                                   {"learning_rate", absl::GetFlag(FLAGS_learning_rate)},
                                                   {"final_learning_rate", absl::GetFlag(FLAGS_final_learning_rate)},
                                                   {"max_tokens_per_step", absl::GetFlag(FLAGS_max_tokens_per_step)}}) {
    if (value < 0 && value != -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, ": must be >= 0 (or -1 for the setting's)"));
    }
  }
  KvpTrainOptions o = absl::GetFlag(FLAGS_small_model) ? KvpSmallModelOptions() : KvpTrainOptions();
  if (absl::GetFlag(FLAGS_steps) >= 0) o.steps = absl::GetFlag(FLAGS_steps);
  o.epochs = absl::GetFlag(FLAGS_epochs);
  if (absl::GetFlag(FLAGS_future_queries) >= 0) o.future_queries = absl::GetFlag(FLAGS_future_queries);
  if (absl::GetFlag(FLAGS_samples_per_step) >= 0) o.samples_per_step = absl::GetFlag(FLAGS_samples_per_step);
  if (absl::GetFlag(FLAGS_hidden) >= 0) o.hidden_units = absl::GetFlag(FLAGS_hidden);
  if (absl::GetFlag(FLAGS_learning_rate) >= 0) o.adam.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  if (absl::GetFlag(FLAGS_final_learning_rate) >= 0) {
    o.adam.final_learning_rate = absl::GetFlag(FLAGS_final_learning_rate);
  }
  if (absl::GetFlag(FLAGS_max_tokens_per_step) >= 0) o.max_tokens_per_step = absl::GetFlag(FLAGS_max_tokens_per_step);
  o.holdout_fraction = absl::GetFlag(FLAGS_holdout);
  const int64_t mib = absl::GetFlag(FLAGS_train_memory_mib);
  if (mib < 1 || mib > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat("--train_memory_mib=", mib, ": must be in [1, 2^30]"));
  }
  o.max_data_bytes = mib << 20;
  const std::string objective = absl::GetFlag(FLAGS_objective);
  if (objective == "reinforce") {
    o.objective = KvpObjective::kReinforce;
  } else if (objective == "softsort") {
    o.objective = KvpObjective::kSoftSort;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--objective=", objective, ": expected reinforce or softsort"));
  }
  o.seed = absl::GetFlag(FLAGS_seed);
  KVSIM_ASSIGN_OR_RETURN(o.num_threads, ThreadsFromFlag());
  if (auto status = ValidateKvpTrainOptions(o); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad training options: ", status.message()));
  }
  return o;
}

absl::Status RunTrain(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --traces=A.kvat,B.kvat)");
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (out_path.empty()) return absl::InvalidArgumentError("--out=MODEL.kvpm (the model file to write) is required");
  std::vector<std::string> traces;
  for (absl::string_view t : absl::StrSplit(absl::GetFlag(FLAGS_traces), ',')) {
    if (t.empty()) return absl::InvalidArgumentError("--traces: a comma list of .kvat files without empty entries");
    traces.emplace_back(t);
  }
  KVSIM_ASSIGN_OR_RETURN(KvpTrainOptions options, OptionsFromFlags());
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  KVSIM_ASSIGN_OR_RETURN(KvpTrainData data, BuildKvpTrainData(traces, options));
  // Progress on a terminal only (util/progress.h).
  Progress bar("train", 0, "agents", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  KvpProgress progress = [&bar](int done, int total) {
    bar.set_total(total);
    bar.Update(done);
  };
  KVSIM_ASSIGN_OR_RETURN(proto::KvpModel model, TrainKvp(data, options, progress));
  bar.Finish();
  const std::string bytes = SerializeKvpModel(model);
  KVSIM_RETURN_IF_ERROR(SaveKvpModel(out_path, model));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double cpu_s = CpuSeconds() - cpu_start;
  double heldout = 0, final_train = 0;
  int heldout_count = 0;
  for (const proto::KvpAgent& agent : model.agents()) {
    if (!std::isnan(agent.heldout_reward())) {
      heldout += agent.heldout_reward();
      ++heldout_count;
    }
    if (agent.curve_size() > 0) final_train += agent.curve(agent.curve_size() - 1).train_reward();
  }
  const int agents = model.agents_size();
  const int64_t params = model.agents_size() > 0
                             ? (model.agents(0).w1_size() + model.agents(0).b1_size() + model.agents(0).w2_size() +
                                model.agents(0).b2_size() + model.agents(0).w3_size() + 1)
                             : 0;
  const int64_t steps_total = model.hyperparameters().steps() * agents;
  out << absl::StrFormat("wrote KVP model %s: %d agents (%d layers x %d KV heads), %d parameters each, %.1f KiB%s\n",
                         out_path, agents, model.layers_size(), model.kv_heads_size(), params, bytes.size() / 1024.0,
                         model.synthetic() ? " (trained on synthetic traces)" : "");
  out << absl::StrFormat("trained on %d samples (%d held out), objective %s, %d steps per agent, seed %d\n",
                         model.train_samples(), model.heldout_samples(), model.hyperparameters().objective(),
                         model.hyperparameters().steps(), model.seed());
  out << absl::StrFormat("normalised all-budget reward (oracle = 1): final training %.4f", final_train / agents);
  if (heldout_count > 0) out << absl::StrFormat(", held out %.4f", heldout / heldout_count);
  out << "\n";
  out << absl::StrFormat(
      "time: %.2f s wall, %.2f s CPU (%.1f steps/s per core); memory: training data %.1f MiB, peak RSS %.1f MiB\n",
      wall_s, cpu_s, cpu_s > 0 ? steps_total / cpu_s : 0.0, data.bytes / 1048576.0, PeakRssMib());
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    train,
    {
        .name = "train",
        .summary = "train KVP's learned eviction rankers on attention traces (the kvp token policy's model)",
        .usage = "kvsim train --traces=A.kvat[,B.kvat] --out=MODEL.kvpm [--small_model] [--steps=N] [--epochs=N]\n"
                 "            [--future_queries=F] [--samples_per_step=K] [--hidden=H] [--holdout=0.2] [--seed=S]\n"
                 "            [--threads=0] [--objective=reinforce|softsort]",
        .details =
            "KVP (arXiv 2602.10238): one MLP per (layer, KV head) scores each cached token from its key, value and\n"
            "position; eviction keeps the top B. Target: the attention the next f queries pay each prompt token\n"
            "(max over the GQA group). Policy: Plackett-Luce sampled by Gumbel-sort; reward: the importance kept at\n"
            "every budget at once, normalised so the oracle ranking scores 1; REINFORCE with a leave-one-out\n"
            "baseline over K permutations; AdamW with a cosine schedule.\n"
            "Defaults are the paper's (256 hidden, 4,000 steps, lr 5e-5 to 1e-6); --small_model starts from a CPU\n"
            "setting (32 hidden, 600 steps, lr 3e-3 to 1e-4, 1,024 tokens per step), which other flags override.\n"
            "The model is byte-identical for the same traces, flags and --seed, whatever --threads (agents train in\n"
            "parallel). Use it as kvsim quality --policies=kvp:model=MODEL.kvpm. Time, CPU and peak memory are\n"
            "reported; the training data is bounded by --train_memory_mib; a progress line goes to stderr when it\n"
            "is a terminal.",
        .flags = {"traces", "out", "seed", "threads", "small_model", "steps", "epochs", "future_queries",
                  "samples_per_step", "hidden", "holdout", "objective", "learning_rate", "final_learning_rate",
                  "max_tokens_per_step", "train_memory_mib", "quiet"},
        .run = RunTrain,
    });

}  // namespace kvsim
