// `kvsim select`: per-prompt choice of a KV-compression configuration under latency and memory budgets,
// scored by the constrained success rate. Thin: parsing and output only; the work is in sim/select/.
#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "config/experiment_config.h"
#include "sim/eval/eval_tasks.h"
#include "sim/eval/llama_model.h"
#include "sim/select/candidates.h"
#include "sim/select/closed_loop_outcomes.h"
#include "sim/select/outcome_table.h"
#include "sim/select/predictors.h"
#include "sim/select/select_report.h"
#include "tools/model_flags.h"
#include "sim/select/selector.h"
#include "sim/select/synthetic_outcomes.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, outcomes, "",
          "outcome table CSV (prompt_id, config, correct, latency_ms, peak_memory_mb, input_tokens, "
          "output_tokens, features...; see 'kvsim help select')");
ABSL_FLAG(std::string, costs, "table",
          "where latency and peak memory come from: 'table' (the CSV's columns) or 'model' (the roofline cost "
          "model for each row's input_tokens and output_tokens on --config's model and GPU)");
ABSL_FLAG(double, latency_ms, 0, "latency budget L, ms; with --memory_mb: evaluate this one budget");
ABSL_FLAG(double, memory_mb, 0, "peak-memory budget M, MiB; with --latency_ms");
ABSL_FLAG(std::string, latency_grid, "",
          "comma-separated latency budgets in ms for the CSR surface; empty = --grid_points quantiles of the "
          "table's latencies");
ABSL_FLAG(std::string, memory_grid, "", "comma-separated memory budgets in MiB; empty = quantiles of the table's");
ABSL_FLAG(int32_t, grid_points, 8, "budgets per axis of the default grid, in [1, 64]");
ABSL_FLAG(std::string, predictor, "xgboost", "xgboost (gradient-boosted trees) or logistic (the baseline)");
ABSL_FLAG(std::string, predict_costs, "auto",
          "the selector's predicted latency and memory: 'learned' (the predictors'), 'model' (the cost model's for "
          "the prompt's input and output tokens; needs costs from the model), 'auto' = model when the table's "
          "costs come from the model, else learned");
ABSL_FLAG(int32_t, folds, 5, "cross-validation folds over prompts, >= 2");
ABSL_FLAG(int32_t, synthetic_prompts, 0,
          "instead of --outcomes, a SYNTHETIC table of this many prompts with planted correctness (costs from "
          "the model; sim/select/synthetic_outcomes.h), for demos");

namespace kvsim {
namespace {

// Replaces the predicted latency and memory with the table's (the cost model's when it computed them).
void UseTableCosts(const OutcomeTable& table, std::vector<Prediction>* predictions) {
  for (size_t i = 0; i < table.cells.size(); ++i) {
    (*predictions)[i].latency_ms = table.cells[i].latency_ms;
    (*predictions)[i].peak_memory_mb = table.cells[i].peak_memory_mb;
  }
}

absl::StatusOr<std::vector<double>> ParseGrid(absl::string_view flag, const std::string& text) {
  std::vector<double> grid;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    double value;
    if (!absl::SimpleAtod(item, &value) || !(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", item, "' is not a positive number"));
    }
    grid.push_back(value);
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

absl::Status RunSelect(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --outcomes=FILE)");
  const std::string outcomes_path = absl::GetFlag(FLAGS_outcomes);
  const int synthetic = absl::GetFlag(FLAGS_synthetic_prompts);
  const std::string model_dir = absl::GetFlag(FLAGS_model), task_file = absl::GetFlag(FLAGS_tasks);
  if (model_dir.empty() != task_file.empty()) {
    return absl::InvalidArgumentError("--model=DIR and --tasks=FILE go together (the closed-loop outcome table)");
  }
  const bool closed_loop = !model_dir.empty();
  const int sources = (outcomes_path.empty() ? 0 : 1) + (synthetic != 0 ? 1 : 0) + (closed_loop ? 1 : 0);
  if (sources != 1) {
    return absl::InvalidArgumentError(
        "give exactly one of --outcomes=FILE, --model=DIR --tasks=FILE (closed loop) or --synthetic_prompts=N");
  }
  if (synthetic < 0 || synthetic > 1000000) {
    return absl::InvalidArgumentError(absl::StrCat("--synthetic_prompts=", synthetic, ": must be in [1, 1000000]"));
  }
  const std::string costs = absl::GetFlag(FLAGS_costs);
  if (costs != "table" && costs != "model") {
    return absl::InvalidArgumentError(absl::StrCat("--costs=", costs, ": must be 'table' or 'model'"));
  }
  const double latency = absl::GetFlag(FLAGS_latency_ms), memory = absl::GetFlag(FLAGS_memory_mb);
  if (!(latency >= 0) || !(memory >= 0) || (latency > 0) != (memory > 0)) {
    return absl::InvalidArgumentError("--latency_ms and --memory_mb go together, both > 0");
  }
  const int grid_points = absl::GetFlag(FLAGS_grid_points);
  if (grid_points < 1 || grid_points > 64) {
    return absl::InvalidArgumentError(absl::StrCat("--grid_points=", grid_points, ": must be in [1, 64]"));
  }
  KVSIM_ASSIGN_OR_RETURN(PredictorKind kind, ParsePredictorKind(absl::GetFlag(FLAGS_predictor)));
  KVSIM_ASSIGN_OR_RETURN(PredictorFactory factory, MakePredictorFactory(kind, {.seed = absl::GetFlag(FLAGS_seed)}));
  KVSIM_ASSIGN_OR_RETURN(proto::SelectCandidateSet set, LoadSelectCandidates(absl::GetFlag(FLAGS_configs)));

  // The synthetic and the closed-loop tables measure no time or memory: theirs are the cost model's.
  const bool from_model = synthetic > 0 || closed_loop || costs == "model";
  proto::ExperimentConfig config;
  if (from_model) {
    // Candidates are costed with the roofline (sim/select/candidate_cost.h), also where the device's
    // default is the fitted model.
    KVSIM_ASSIGN_OR_RETURN(config, LoadExperimentConfig(absl::GetFlag(FLAGS_config), proto::COST_MODEL_KIND_ROOFLINE));
  }
  OutcomeTable table;
  if (synthetic > 0) {
    SyntheticOutcomeOptions options;
    options.num_prompts = synthetic;
    options.seed = absl::GetFlag(FLAGS_seed);
    KVSIM_ASSIGN_OR_RETURN(table, MakeSyntheticOutcomeTable(set, config, options));
  } else if (closed_loop) {
    // With --model and --tasks instead of --outcomes, the closed-loop evaluation makes the table.
    ClosedLoopOutcomeOptions options;
    KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
    options.seed = absl::GetFlag(FLAGS_seed);
    KVSIM_ASSIGN_OR_RETURN(options.query_window, QueryWindowFromFlag());
    KVSIM_ASSIGN_OR_RETURN(std::vector<EvalTask> tasks, TasksFromFlags());
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model, LoadLlamaModel(model_dir));
    KVSIM_ASSIGN_OR_RETURN(table, MakeClosedLoopOutcomeTable(*model, tasks, set, config, options));
  } else {
    KVSIM_ASSIGN_OR_RETURN(table, ReadOutcomeTable(outcomes_path, set, {.costs_from_model = from_model}));
    if (from_model) KVSIM_RETURN_IF_ERROR(FillCostsFromModel(config, set, &table));
  }
  const std::string predict_costs = absl::GetFlag(FLAGS_predict_costs);
  if (predict_costs != "auto" && predict_costs != "learned" && predict_costs != "model") {
    return absl::InvalidArgumentError(
        absl::StrCat("--predict_costs=", predict_costs, ": must be 'auto', 'learned' or 'model'"));
  }
  if (predict_costs == "model" && !from_model) {
    return absl::InvalidArgumentError("--predict_costs=model needs costs from the model (--costs=model)");
  }
  const bool costs_by_model = predict_costs == "model" || (predict_costs == "auto" && from_model);
  const int folds = absl::GetFlag(FLAGS_folds);
  KVSIM_ASSIGN_OR_RETURN(CrossValidation cv, CrossValidate(table, folds, absl::GetFlag(FLAGS_seed), factory));
  const Calibration calibration = CalibrationReport(table, cv.predictions);
  // The calibration above reports the learned cost predictors either way; with costs by the model the
  // selector uses the model's figures, which are the table's (FillCostsFromModel computed them).
  if (costs_by_model) UseTableCosts(table, &cv.predictions);
  // The baseline beside gradient-boosted trees, on the same folds.
  std::optional<CsrSurface> baseline;

  std::vector<double> latency_grid, memory_grid;
  if (!absl::GetFlag(FLAGS_latency_grid).empty()) {
    KVSIM_ASSIGN_OR_RETURN(latency_grid, ParseGrid("latency_grid", absl::GetFlag(FLAGS_latency_grid)));
  } else {
    std::vector<double> values;
    for (const Outcome& o : table.cells) values.push_back(o.latency_ms);
    latency_grid = QuantileGrid(values, grid_points);
  }
  if (!absl::GetFlag(FLAGS_memory_grid).empty()) {
    KVSIM_ASSIGN_OR_RETURN(memory_grid, ParseGrid("memory_grid", absl::GetFlag(FLAGS_memory_grid)));
  } else {
    std::vector<double> values;
    for (const Outcome& o : table.cells) values.push_back(o.peak_memory_mb);
    memory_grid = QuantileGrid(values, grid_points);
  }
  // A zero cost (a user's table may hold one) would give a zero budget; budgets must be positive.
  latency_grid.erase(std::remove_if(latency_grid.begin(), latency_grid.end(), [](double v) { return !(v > 0); }),
                     latency_grid.end());
  memory_grid.erase(std::remove_if(memory_grid.begin(), memory_grid.end(), [](double v) { return !(v > 0); }),
                    memory_grid.end());
  const CsrSurface surface = EvaluateGrid(table, cv.predictions, latency_grid, memory_grid);
  if (kind == PredictorKind::kXgboost) {
    KVSIM_ASSIGN_OR_RETURN(PredictorFactory logistic, MakePredictorFactory(PredictorKind::kLogistic));
    KVSIM_ASSIGN_OR_RETURN(CrossValidation base, CrossValidate(table, folds, absl::GetFlag(FLAGS_seed), logistic));
    if (costs_by_model) UseTableCosts(table, &base.predictions);
    baseline = EvaluateGrid(table, base.predictions, latency_grid, memory_grid);
  }

  const std::string source =
      synthetic > 0 ? absl::StrCat("SYNTHETIC table (planted correctness, seed ", absl::GetFlag(FLAGS_seed), ")")
      : closed_loop ? absl::StrCat("closed-loop table (", model_dir, " on ", task_file, ", correctness measured)")
                    : outcomes_path;
  std::string report = absl::StrFormat(
      "outcomes: %s: %d prompts x %d configurations; latency and peak memory %s\n", source, table.num_prompts(),
      table.num_candidates(),
      from_model
          ? absl::StrCat("from the roofline cost model (", config.model().name(), " on ", config.device().name(), ")")
          : "as measured in the table");
  absl::StrAppend(&report, absl::StrFormat("predictor: %s, %d-fold cross-validation by prompt (no prompt in both "
                                           "the training and the test folds)\n",
                                           PredictorKindName(kind), folds));
  absl::StrAppend(
      &report, "selector's latency and memory: ",
      costs_by_model ? "the cost model's for each prompt's input and output tokens\n" : "the learned predictors'\n");
  absl::StrAppend(&report, FormatCalibration(calibration), FormatFeatureImportance(table, cv.feature_importance));
  std::vector<std::pair<std::string, std::string>> files;
  if (latency > 0) {
    const CsrPoint point = EvaluateBudget(table, cv.predictions, {latency, memory});
    absl::StrAppend(&report, FormatCsrPoint(table, point));
    files.push_back({"selections.csv", SelectionsCsv(table, cv.predictions, point)});
  }
  absl::StrAppend(&report, FormatCsrSurface(table, surface));
  if (baseline.has_value()) {
    absl::StrAppend(&report, absl::StrFormat("  logistic baseline on the same folds: CSR gain over best static mean "
                                             "%+.4f, max %+.4f\n",
                                             baseline->mean_gain, baseline->max_gain));
  }
  out << report;

  const std::string dir = absl::GetFlag(FLAGS_out);
  if (!dir.empty()) {
    KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
    const std::string title = absl::StrCat("CSR over (L, M): ", PredictorKindName(kind), " selector on ", source);
    files.push_back({"csr_grid.csv", CsrGridCsv(table, surface)});
    files.push_back({"csr_grid.svg", CsrGridSvg(table, surface, title)});
    files.push_back({"calibration.csv", CalibrationCsv(calibration)});
    files.push_back({"feature_importance.csv", FeatureImportanceCsv(table, cv.feature_importance)});
    files.push_back({"outcomes.csv", FormatOutcomeTableCsv(table)});
    files.push_back({"summary.txt", report});
    for (auto& [name, contents] : files) name = dir + "/" + name;
    KVSIM_RETURN_IF_ERROR(WriteFilesAtomically(files));
  }
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    select,
    {
        .name = "select",
        .summary = "per-prompt choice of KV compression under latency and memory budgets (constrained success rate)",
        .usage =
            "kvsim select (--outcomes=T.csv | --model=DIR --tasks=FILE | --synthetic_prompts=N) "
            "[--configs=C.textproto] [--costs=table|model] "
            "[--config=EXP] [--latency_ms=L --memory_mb=M] [--latency_grid=..] [--memory_grid=..] [--grid_points=8] "
            "[--predictor=xgboost|logistic] [--predict_costs=auto|learned|model] [--folds=5] [--seed=S] [--out=DIR]",
        .details =
            "For each prompt, predicts every candidate configuration's P(correct), latency and peak memory from\n"
            "the prompt's features (per-configuration models, cross-validated by prompt), picks the most likely\n"
            "correct configuration predicted to fit the budget (none fits: the one closest to fitting), and\n"
            "reports CSR = mean over prompts of 1[correct and latency <= L and peak memory <= M] against the best\n"
            "static configuration and the oracle, at one budget and over a grid of budgets (mean and max gain).\n"
            "Outcome table columns: prompt_id, config (a candidate's name), correct (0/1), latency_ms,\n"
            "peak_memory_mb (MiB), input_tokens, output_tokens, and any other numeric column as a feature.\n"
            "--costs=model fills latency and memory from the roofline cost model on --config's model and GPU\n"
            "(sim/select/candidate_cost.h); the two columns may then be absent. The selector then uses the cost\n"
            "model's figures as its latency and memory predictions (--predict_costs=auto; 'learned' uses the\n"
            "trained predictors instead). With --predictor=xgboost the logistic baseline is reported beside.\n"
            "--model=DIR --tasks=FILE: the table is made by running every candidate through the\n"
            "closed-loop evaluation of 'kvsim eval' on the task file's exact-match tasks (correct measured; KVQuant\n"
            "runs as KIVI at its bits; features input/output tokens, task_family, prefill_entropy,\n"
            "prefill_mass_kept; sim/select/closed_loop_outcomes.h), costs from the cost model as with --costs=model;\n"
            "--threads, --max_tasks and --query_window apply.\n"
            "--synthetic_prompts=N uses a SYNTHETIC table with planted correctness instead (demo and tests).\n"
            "--out=DIR writes csr_grid.csv, csr_grid.svg, calibration.csv, feature_importance.csv, outcomes.csv,\n"
            "summary.txt, and selections.csv for the single budget.",
        .flags = {"outcomes", "model", "tasks", "max_tasks", "query_window", "threads", "configs", "costs", "config",
                  "latency_ms", "memory_mb", "latency_grid", "memory_grid", "grid_points", "predictor",
                  "predict_costs", "folds", "synthetic_prompts", "seed", "out"},
        .run = RunSelect,
    });

}  // namespace kvsim
