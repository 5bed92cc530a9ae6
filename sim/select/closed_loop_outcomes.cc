#include "sim/select/closed_loop_outcomes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "policies/token/token_policy.h"
#include "sim/eval/closed_loop_eval.h"
#include "sim/eval/llama_session.h"
#include "sim/select/candidates.h"
#include "util/parallel.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

int TaskFamilyCode(const std::string& family) {
  for (size_t i = 0; i < std::size(kTaskFamilies); ++i) {
    if (family == kTaskFamilies[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

// Column sums of one prompt's prefill attention per (layer, KV head), summed over the query heads of
// the group: key i's total attention from the prompt's queries.
absl::StatusOr<std::vector<std::vector<double>>> PrefillColumnSums(const LlamaModel& model, const EvalTask& task) {
  const int64_t n = task.prompt_ids.size();
  LlamaSession session(model, n, /*query_window=*/0);
  absl::StatusOr<std::vector<float>> logits = session.Prefill(task.prompt_ids);
  if (!logits.ok()) return absl::InvalidArgumentError(absl::StrCat(task.source, ": ", logits.status().message()));
  const int layers = model.config.num_layers, kv_heads = model.config.num_kv_heads;
  std::vector<std::vector<double>> sums;
  for (int l = 0; l < layers; ++l) {
    for (int c = 0; c < kv_heads; ++c) {
      const std::vector<float>& member_sums = session.column_sums(l, c);  // group x n
      std::vector<double> column(n, 0.0);
      for (size_t k = 0; k < member_sums.size(); ++k) column[k % n] += member_sums[k];
      sums.push_back(std::move(column));
    }
  }
  return sums;
}

double NormalisedEntropy(const std::vector<double>& column) {
  const double total = std::accumulate(column.begin(), column.end(), 0.0);
  if (column.size() < 2 || !(total > 0)) return 0;
  double h = 0;
  for (double v : column) {
    if (v > 0) h -= (v / total) * std::log(v / total);
  }
  return h / std::log(static_cast<double>(column.size()));
}

// Share of the column's total held by its `budget` largest entries (1 when budget >= its size).
double MassKept(std::vector<double> column, int64_t budget) {
  const double total = std::accumulate(column.begin(), column.end(), 0.0);
  if (budget >= static_cast<int64_t>(column.size()) || !(total > 0)) return 1;
  std::nth_element(column.begin(), column.begin() + budget, column.end(), std::greater<double>());
  return std::accumulate(column.begin(), column.begin() + budget, 0.0) / total;
}

double Mean(const std::vector<double>& values) {
  return values.empty() ? 0 : std::accumulate(values.begin(), values.end(), 0.0) / values.size();
}

// Rounded so that the CSV (10 significant digits) reads back to the same features.
double Round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

std::vector<std::string> ClosedLoopFeatureNames() {
  return {"input_tokens", "output_tokens", "task_family", "prefill_entropy", "prefill_mass_kept"};
}

absl::StatusOr<std::string> ClosedLoopPolicySpec(const proto::SelectCandidate& candidate) {
  std::string spec;
  if (candidate.has_quant()) {
    const proto::KvQuantSpec& q = candidate.quant();
    if (q.method() == proto::KV_QUANT_METHOD_KVQUANT) {
      if (q.outlier_fraction() != 0 && q.outlier_fraction() != 0.01) {
        return absl::FailedPreconditionError(
            absl::StrCat("candidate '", candidate.name(), "': the closed loop's KVQuant quantiser keeps an outlier ",
                         "share of 0 or 0.01 (kvquant<b>, kvquant<b>-1pct); got quant.outlier_fraction=",
                         q.outlier_fraction()));
      }
      spec = absl::StrCat("kvquant", q.bits(), q.outlier_fraction() > 0 ? "-1pct" : "");
    } else {
      spec = absl::StrCat("kivi", q.bits());
    }
  }
  if (candidate.has_token()) {
    spec = spec.empty() ? candidate.token().policy() : absl::StrCat(spec, "+", candidate.token().policy());
  }
  if (spec.empty()) spec = "full";
  const absl::Status runnable = CheckClosedLoopPolicy(spec);
  if (!runnable.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("candidate '", candidate.name(), "' (closed-loop policy ", spec, "): ", runnable.message()));
  }
  absl::StatusOr<std::unique_ptr<TokenPolicy>> policy = CreateTokenPolicy(spec);
  if (!policy.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("candidate '", candidate.name(), "': closed-loop policy ", spec,
                                                      ": ", policy.status().message()));
  }
  return spec;
}

absl::StatusOr<OutcomeTable> MakeClosedLoopOutcomeTable(const LlamaModel& model, const std::vector<EvalTask>& tasks,
                                                        const proto::SelectCandidateSet& set,
                                                        const proto::ExperimentConfig& config,
                                                        const ClosedLoopOutcomeOptions& options) {
  std::vector<std::string> specs;
  for (const proto::SelectCandidate& c : set.candidate()) {
    KVSIM_ASSIGN_OR_RETURN(std::string spec, ClosedLoopPolicySpec(c));
    specs.push_back(spec);
  }
  std::vector<EvalTask> exact;
  for (const EvalTask& task : tasks) {
    if (!task.is_perplexity()) exact.push_back(task);
  }
  if (exact.empty()) {
    return absl::InvalidArgumentError("no exact-match task (perplexity tasks have no correct answer to score)");
  }
  for (const EvalTask& task : exact) KVSIM_RETURN_IF_ERROR(ValidateTaskIds(task, model.config.vocab_size));

  OutcomeTable table;
  table.source = model.source;
  for (const proto::SelectCandidate& c : set.candidate()) table.candidates.push_back(c.name());
  table.feature_names = ClosedLoopFeatureNames();
  const int num_candidates = table.num_candidates();
  table.cells.resize(exact.size() * num_candidates);

  // Prefill statistics, one prefill per prompt; the entropy is the same for all of a prompt's rows.
  std::vector<std::vector<std::vector<double>>> column_sums(exact.size());
  std::vector<double> prefill_entropy(exact.size());
  std::vector<absl::Status> status(exact.size());
  ParallelFor(ResolveThreadCount(options.num_threads), exact.size(), [&](size_t t, int) {
    absl::StatusOr<std::vector<std::vector<double>>> sums = PrefillColumnSums(model, exact[t]);
    if (!sums.ok()) {
      status[t] = sums.status();
      return;
    }
    std::vector<double> entropy;
    for (const std::vector<double>& column : *sums) entropy.push_back(NormalisedEntropy(column));
    prefill_entropy[t] = Round6(Mean(entropy));
    column_sums[t] = std::move(*sums);
  });
  for (const absl::Status& s : status) KVSIM_RETURN_IF_ERROR(s);

  int64_t longest = 1;
  for (const EvalTask& task : exact) longest = std::max<int64_t>(longest, task.prompt_ids.size());
  for (int c = 0; c < num_candidates; ++c) {
    const proto::SelectCandidate& candidate = set.candidate(c);
    // The closed loop takes one budget per call: the tasks grouped by the budget their length resolves to.
    std::map<int64_t, std::vector<size_t>> by_budget;
    for (size_t t = 0; t < exact.size(); ++t) {
      const int64_t budget = CandidateBudgetTokens(candidate, exact[t].prompt_ids.size());
      by_budget[budget < 0 ? longest : budget].push_back(t);
    }
    for (const auto& [budget, members] : by_budget) {
      std::vector<EvalTask> subset;
      for (size_t t : members) subset.push_back(exact[t]);
      EvalOptions eval;
      eval.policies = {specs[c]};
      eval.budget_tokens = {budget};
      eval.seed = options.seed;
      eval.num_threads = options.num_threads;
      eval.query_window = options.query_window;
      absl::StatusOr<EvalResults> results = RunClosedLoopEval(model, subset, eval);
      if (!results.ok()) {
        return absl::Status(results.status().code(), absl::StrCat("candidate '", candidate.name(), "' (", specs[c],
                                                                  "): ", results.status().message()));
      }
      for (size_t i = 0; i < members.size(); ++i) {
        const EvalTask& task = exact[members[i]];
        Outcome& outcome = table.cells[members[i] * num_candidates + c];
        outcome.correct = results->runs[i].correct;
        const bool budgeted = candidate.has_token();
        std::vector<double> kept;
        for (const std::vector<double>& column : column_sums[members[i]]) {
          kept.push_back(budgeted ? MassKept(column, budget) : 1.0);
        }
        outcome.features = {static_cast<double>(task.prompt_ids.size()), static_cast<double>(task.answer_ids.size()),
                            static_cast<double>(TaskFamilyCode(task.task)), prefill_entropy[members[i]],
                            Round6(Mean(kept))};
      }
    }
  }
  for (const EvalTask& task : exact) table.prompt_ids.push_back(task.id);
  KVSIM_RETURN_IF_ERROR(FillCostsFromModel(config, set, &table));
  return table;
}

}  // namespace kvsim
