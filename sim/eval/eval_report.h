// File: sim/eval/eval_report.h
//
// Renders EvalResults (sim/eval/closed_loop_eval.h) in the shapes `kvsim quality` uses: a text table,
// CSV, JSON and an SVG of accuracy against budget (one panel per task family and one over all
// exact-match tasks, one polyline per policy; perplexity panels plot the mean NLL). Pure functions: the
// same results give byte-identical text, except timing.csv (wall-clock times).
//
// Example:
//   out << FormatEvalTable(results);
//   KVSIM_RETURN_IF_ERROR(WriteEvalReports(results, tasks, "/tmp/eval"));
#ifndef KVSIM_SIM_EVAL_EVAL_REPORT_H_
#define KVSIM_SIM_EVAL_EVAL_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/eval/closed_loop_eval.h"
#include "sim/eval/eval_tasks.h"

namespace kvsim {

// One row per (policy, budget) over all exact-match tasks, then the perplexity groups.
std::string FormatEvalTable(const EvalResults& results);
// results.csv: one row per group (policy, kind, budget, task, context_tokens, tasks, correct, accuracy,
// needle_tasks, needle_covered, nll_tokens, mean_nll, perplexity, mean_tokens_read, mean_budget_tokens).
std::string EvalResultsCsv(const EvalResults& results);
// tasks.csv: one row per (task, policy, budget): the outcome and the generated ids.
std::string EvalTasksCsv(const EvalResults& results, const std::vector<EvalTask>& tasks);
// timing.csv: per (policy, budget) the runs' wall time after the shared prefills, and the prefills' total.
std::string EvalTimingCsv(const EvalResults& results);
// results.json: the model, the points and their groups.
std::string EvalJson(const EvalResults& results);
// accuracy.svg.
std::string EvalSvg(const EvalResults& results);

// Writes results.csv, tasks.csv, timing.csv, results.json and accuracy.svg into `dir` (created if
// missing), all atomically.
absl::Status WriteEvalReports(const EvalResults& results, const std::vector<EvalTask>& tasks, const std::string& dir);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_EVAL_REPORT_H_
