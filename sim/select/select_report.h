// File: sim/select/select_report.h
//
// Reports of per-prompt selection: the text summary `kvsim select` prints, and the files it writes with
// --out (CSV with a header row; numbers with up to 6 significant digits):
//   csr_grid.csv            latency_ms, memory_mb, feasible (0/1), infeasible_prompts, selector_csr,
//                           best_static_csr, best_static_config, oracle_csr, gain_over_best_static,
//                           fallbacks; the CSR cells are empty where the budget is infeasible for every prompt
//   csr_grid.svg            heat maps over (L, M) of the selector, the best static configuration and the
//                           oracle, side by side (infeasible budgets grey with a cross), and the gain
//   selections.csv          for the single budget (--latency_ms, --memory_mb): prompt_id, config,
//                           fallback, predicted_p_correct, predicted_latency_ms, predicted_peak_memory_mb,
//                           correct, latency_ms, peak_memory_mb, success
//   calibration.csv         lower, upper, count, mean_predicted, observed_rate of each reliability bin
//   feature_importance.csv  feature, importance (share of the P(correct) models' importance)
//   outcomes.csv            the outcome table as evaluated (costs filled in where they come from the model)
//
// Pure functions of their inputs; thread-safe.
#ifndef KVSIM_SIM_SELECT_SELECT_REPORT_H_
#define KVSIM_SIM_SELECT_SELECT_REPORT_H_

#include <string>
#include <vector>

#include "sim/select/outcome_table.h"
#include "sim/select/predictors.h"
#include "sim/select/selector.h"

namespace kvsim {

std::string CsrGridCsv(const OutcomeTable& table, const CsrSurface& surface);
// `title` heads the figure (say there whether the table is synthetic).
std::string CsrGridSvg(const OutcomeTable& table, const CsrSurface& surface, const std::string& title);
std::string SelectionsCsv(const OutcomeTable& table, const std::vector<Prediction>& predictions, const CsrPoint& point);
std::string CalibrationCsv(const Calibration& calibration);
std::string FeatureImportanceCsv(const OutcomeTable& table, const std::vector<double>& importance);

// Human-readable lines.
std::string FormatCalibration(const Calibration& calibration);
std::string FormatFeatureImportance(const OutcomeTable& table, const std::vector<double>& importance);
std::string FormatCsrPoint(const OutcomeTable& table, const CsrPoint& point);
std::string FormatCsrSurface(const OutcomeTable& table, const CsrSurface& surface);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_SELECT_REPORT_H_
