// File: sim/select/selector.h
//
// The per-prompt selector and its metric, the constrained success rate (MetaKV, arXiv 2609.07966):
//
//   success(i, c) = correct(i, c) and latency_ms(i, c) <= L and peak_memory_mb(i, c) <= M   (actual values)
//   CSR(choice)   = (1 / N) sum_i success(i, choice(i))
//
// Selector: for prompt i, among the candidates whose PREDICTED latency and memory are within (L, M), the
// one with the highest predicted P(correct) (ties: lower predicted latency, then set order). Fallback when
// no candidate is predicted to fit: the candidate with the smallest predicted overshoot
// max(latency / L, memory / M) (ties: higher P(correct), then set order) — the one closest to fitting,
// counted in CSR by what it actually did (usually a failure).
// Best static: the one candidate with the highest CSR over all prompts at (L, M), chosen in hindsight on
// the evaluated prompts (ties: set order). Oracle: success(i) = any candidate succeeds on prompt i; an
// upper bound of every selector.
// A budget is infeasible for a prompt when no candidate's actual latency and memory fit it; a budget
// infeasible for every prompt is reported as such (CsrPoint::feasible false), not as a CSR of 0.
//
// Pure functions; thread-safe.
#ifndef KVSIM_SIM_SELECT_SELECTOR_H_
#define KVSIM_SIM_SELECT_SELECTOR_H_

#include <string>
#include <vector>

#include "sim/select/outcome_table.h"
#include "sim/select/predictors.h"

namespace kvsim {

struct Budget {
  double latency_ms = 0;
  double memory_mb = 0;
};

bool Succeeds(const Outcome& outcome, const Budget& budget);

struct Selection {
  std::vector<int> choice;     // per prompt: candidate index
  std::vector<bool> fallback;  // per prompt: no candidate was predicted to fit
};

// REQUIRES: predictions.size() == table.cells.size(); budget values > 0.
Selection SelectPerPrompt(const OutcomeTable& table, const std::vector<Prediction>& predictions, const Budget& budget);

// REQUIRES: choice.size() == table.num_prompts().
double Csr(const OutcomeTable& table, const std::vector<int>& choice, const Budget& budget);
// CSR of every candidate used for every prompt.
std::vector<double> StaticCsr(const OutcomeTable& table, const Budget& budget);
double OracleCsr(const OutcomeTable& table, const Budget& budget);

// The predictions a perfect predictor would make: P(correct) = correct, latency and memory as measured.
std::vector<Prediction> PerfectPredictions(const OutcomeTable& table);

struct CsrPoint {
  Budget budget;
  double selector = 0;
  double best_static = 0;
  int best_static_candidate = 0;
  double oracle = 0;
  int infeasible_prompts = 0;  // prompts no candidate can serve within the budget
  int fallbacks = 0;           // prompts where no candidate was predicted to fit
  bool feasible = true;        // false when infeasible_prompts == all prompts
  Selection selection;
};

CsrPoint EvaluateBudget(const OutcomeTable& table, const std::vector<Prediction>& predictions, const Budget& budget);

struct CsrSurface {
  std::vector<double> latency_grid_ms;  // ascending
  std::vector<double> memory_grid_mb;   // ascending
  std::vector<CsrPoint> points;         // latency-major: points[l * memory_grid.size() + m]
  int feasible_points = 0;
  double mean_gain = 0;         // mean over feasible points of selector - best static
  double max_gain = 0;          // max over feasible points (0 if none)
  double mean_oracle_gain = 0;  // mean over feasible points of oracle - best static
};

CsrSurface EvaluateGrid(const OutcomeTable& table, const std::vector<Prediction>& predictions,
                        const std::vector<double>& latency_grid_ms, const std::vector<double>& memory_grid_mb);

// `n` budgets spread over the range of `values` (the actual latencies or memories of a table): the
// quantiles q = (k + 1) / n, k = 0 .. n - 1, deduplicated, ascending; so the last one admits every value.
std::vector<double> QuantileGrid(std::vector<double> values, int n);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_SELECTOR_H_
