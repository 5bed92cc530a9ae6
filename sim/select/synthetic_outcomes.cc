#include "sim/select/synthetic_outcomes.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "policies/token/token_policy.h"
#include "sim/select/candidates.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Uniform in [0, 1) from the top 53 bits.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int64_t LogUniform(std::mt19937_64& rng, double lo, double hi) {
  return static_cast<int64_t>(std::floor(std::exp(std::log(lo) + Uniform(rng) * (std::log(hi) - std::log(lo)))));
}

}  // namespace

double PlantedCorrectProbability(const proto::SelectCandidate& candidate, int64_t input_tokens, int task_type,
                                 double attention_entropy, double difficulty) {
  double damage = 0;
  if (candidate.has_quant()) {
    const int bits = candidate.quant().bits();
    double base = bits >= 8 ? 0 : bits == 4 ? 0.15 : bits == 3 ? 0.6 : 1.8;
    if (candidate.quant().outlier_fraction() > 0) base *= 0.6;
    damage += (task_type == 0 ? 2.0 : 1.0) * base;
  }
  if (candidate.has_token()) {
    const double kept =
        std::min(1.0, static_cast<double>(CandidateBudgetTokens(candidate, input_tokens)) / input_tokens);
    absl::StatusOr<std::unique_ptr<TokenPolicy>> policy = CreateTokenPolicy(candidate.token().policy());
    const bool evict = policy.ok() && (*policy)->kind() == TokenPolicy::Kind::kEvict;
    damage += (task_type == 3 ? 1.5 : 1.0) * (evict ? 5.0 : 3.0) * attention_entropy * (1 - kept);
  }
  return 1 / (1 + std::exp(-(2.5 - 3 * difficulty - damage)));
}

absl::StatusOr<OutcomeTable> MakeSyntheticOutcomeTable(const proto::SelectCandidateSet& set,
                                                       const proto::ExperimentConfig& config,
                                                       const SyntheticOutcomeOptions& options) {
  if (options.num_prompts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("synthetic prompts=", options.num_prompts, ": must be >= 1"));
  }
  OutcomeTable table;
  table.source = "synthetic";
  for (const proto::SelectCandidate& c : set.candidate()) table.candidates.push_back(c.name());
  table.feature_names = {"input_tokens", "output_tokens", "task_type", "attention_entropy"};
  std::mt19937_64 rng(options.seed);
  for (int p = 0; p < options.num_prompts; ++p) {
    const int64_t input = LogUniform(rng, 256, 32768);
    const int64_t output = LogUniform(rng, 16, 1024);
    const int task = static_cast<int>(rng() % 4);
    const double entropy = Uniform(rng);
    const double difficulty = Uniform(rng);
    const double draw = Uniform(rng);
    table.prompt_ids.push_back(absl::StrCat("synthetic-", p));
    for (const proto::SelectCandidate& c : set.candidate()) {
      Outcome outcome;
      outcome.correct = draw < PlantedCorrectProbability(c, input, task, entropy, difficulty);
      outcome.features = {static_cast<double>(input), static_cast<double>(output), static_cast<double>(task),
                          std::round(entropy * 1e6) / 1e6};
      table.cells.push_back(std::move(outcome));
    }
  }
  KVSIM_RETURN_IF_ERROR(FillCostsFromModel(config, set, &table));
  return table;
}

}  // namespace kvsim
