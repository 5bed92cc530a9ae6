#include "sim/select/selector.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/percentile.h"

namespace kvsim {

bool Succeeds(const Outcome& outcome, const Budget& budget) {
  return outcome.correct && outcome.latency_ms <= budget.latency_ms && outcome.peak_memory_mb <= budget.memory_mb;
}

Selection SelectPerPrompt(const OutcomeTable& table, const std::vector<Prediction>& predictions, const Budget& budget) {
  const int n = table.num_prompts(), num_candidates = table.num_candidates();
  Selection selection;
  selection.choice.assign(n, 0);
  selection.fallback.assign(n, false);
  for (int p = 0; p < n; ++p) {
    const Prediction* row = &predictions[static_cast<size_t>(p) * num_candidates];
    int best = -1;
    for (int c = 0; c < num_candidates; ++c) {
      if (row[c].latency_ms > budget.latency_ms || row[c].peak_memory_mb > budget.memory_mb) continue;
      if (best < 0 || row[c].p_correct > row[best].p_correct ||
          (row[c].p_correct == row[best].p_correct && row[c].latency_ms < row[best].latency_ms)) {
        best = c;
      }
    }
    if (best < 0) {
      selection.fallback[p] = true;
      double best_overshoot = std::numeric_limits<double>::infinity();
      for (int c = 0; c < num_candidates; ++c) {
        const double overshoot =
            std::max(row[c].latency_ms / budget.latency_ms, row[c].peak_memory_mb / budget.memory_mb);
        if (best < 0 || overshoot < best_overshoot ||
            (overshoot == best_overshoot && row[c].p_correct > row[best].p_correct)) {
          best = c;
          best_overshoot = overshoot;
        }
      }
    }
    selection.choice[p] = best;
  }
  return selection;
}

double Csr(const OutcomeTable& table, const std::vector<int>& choice, const Budget& budget) {
  int successes = 0;
  for (int p = 0; p < table.num_prompts(); ++p) successes += Succeeds(table.at(p, choice[p]), budget);
  return table.num_prompts() > 0 ? static_cast<double>(successes) / table.num_prompts() : 0;
}

std::vector<double> StaticCsr(const OutcomeTable& table, const Budget& budget) {
  std::vector<double> csr;
  for (int c = 0; c < table.num_candidates(); ++c) {
    csr.push_back(Csr(table, std::vector<int>(table.num_prompts(), c), budget));
  }
  return csr;
}

double OracleCsr(const OutcomeTable& table, const Budget& budget) {
  int successes = 0;
  for (int p = 0; p < table.num_prompts(); ++p) {
    bool any = false;
    for (int c = 0; c < table.num_candidates() && !any; ++c) any = Succeeds(table.at(p, c), budget);
    successes += any;
  }
  return table.num_prompts() > 0 ? static_cast<double>(successes) / table.num_prompts() : 0;
}

std::vector<Prediction> PerfectPredictions(const OutcomeTable& table) {
  std::vector<Prediction> out;
  for (const Outcome& o : table.cells) out.push_back({o.correct ? 1.0 : 0.0, o.latency_ms, o.peak_memory_mb});
  return out;
}

CsrPoint EvaluateBudget(const OutcomeTable& table, const std::vector<Prediction>& predictions, const Budget& budget) {
  CsrPoint point;
  point.budget = budget;
  point.selection = SelectPerPrompt(table, predictions, budget);
  point.selector = Csr(table, point.selection.choice, budget);
  const std::vector<double> statics = StaticCsr(table, budget);
  for (int c = 0; c < static_cast<int>(statics.size()); ++c) {
    if (statics[c] > statics[point.best_static_candidate]) point.best_static_candidate = c;
  }
  point.best_static = statics[point.best_static_candidate];
  point.oracle = OracleCsr(table, budget);
  for (int p = 0; p < table.num_prompts(); ++p) {
    bool fits = false;
    for (int c = 0; c < table.num_candidates() && !fits; ++c) {
      const Outcome& o = table.at(p, c);
      fits = o.latency_ms <= budget.latency_ms && o.peak_memory_mb <= budget.memory_mb;
    }
    point.infeasible_prompts += !fits;
    point.fallbacks += point.selection.fallback[p];
  }
  point.feasible = point.infeasible_prompts < table.num_prompts();
  return point;
}

CsrSurface EvaluateGrid(const OutcomeTable& table, const std::vector<Prediction>& predictions,
                        const std::vector<double>& latency_grid_ms, const std::vector<double>& memory_grid_mb) {
  CsrSurface surface;
  surface.latency_grid_ms = latency_grid_ms;
  surface.memory_grid_mb = memory_grid_mb;
  double gain_sum = 0, oracle_gain_sum = 0;
  for (double latency : latency_grid_ms) {
    for (double memory : memory_grid_mb) {
      CsrPoint point = EvaluateBudget(table, predictions, {latency, memory});
      point.selection = {};  // not kept for a grid
      if (point.feasible) {
        const double gain = point.selector - point.best_static;
        gain_sum += gain;
        oracle_gain_sum += point.oracle - point.best_static;
        surface.max_gain = surface.feasible_points == 0 ? gain : std::max(surface.max_gain, gain);
        ++surface.feasible_points;
      }
      surface.points.push_back(std::move(point));
    }
  }
  if (surface.feasible_points > 0) {
    surface.mean_gain = gain_sum / surface.feasible_points;
    surface.mean_oracle_gain = oracle_gain_sum / surface.feasible_points;
  }
  return surface;
}

std::vector<double> QuantileGrid(std::vector<double> values, int n) {
  std::vector<double> grid;
  if (values.empty() || n < 1) return grid;
  std::sort(values.begin(), values.end());
  for (int k = 0; k < n; ++k) {
    const double q = static_cast<double>(k + 1) / n;
    const double value = NearestRank(values, q);
    if (grid.empty() || value > grid.back()) grid.push_back(value);
  }
  return grid;
}

}  // namespace kvsim
