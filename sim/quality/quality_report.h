// File: sim/quality/quality_report.h
//
// Renders QualityResults (sim/quality/quality_evaluator.h) as a text table, CSV files, JSON and an SVG plot of
// recall and output error against budget, one line per policy. Pure functions of the results: the same
// results give byte-identical text. Results on synthetic traces say so in every format.
//
// Example:
//   out << FormatQualityTable(results);
//   KVSIM_RETURN_IF_ERROR(WriteQualityReports(results, "/tmp/run"));  // summary.csv, ..., curves.svg
#ifndef KVSIM_SIM_QUALITY_QUALITY_REPORT_H_
#define KVSIM_SIM_QUALITY_QUALITY_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "sim/quality/quality_evaluator.h"

namespace kvsim {

// One row per (policy, budget): recall / error / overlap aggregates, tokens read; then the areas.
std::string FormatQualityTable(const QualityResults& results);

// summary.csv: one row per (policy, budget) with every aggregate.
std::string QualitySummaryCsv(const QualityResults& results);
// per_layer.csv: policy, budget, layer, mean recall, mean error.
std::string QualityLayerCsv(const QualityResults& results);
// per_head.csv: policy, budget, layer, kv_head, mean recall, mean error.
std::string QualityHeadCsv(const QualityResults& results);
// areas.csv: policy, axis, areas and their ratios to oracle_select.
std::string QualityAreaCsv(const QualityResults& results);
// Everything above as one JSON document.
std::string QualityJson(const QualityResults& results);
// Recall and output error versus budget, one polyline per policy; a row of two panels per budget axis.
std::string QualitySvg(const QualityResults& results);

// Writes summary.csv, per_layer.csv, per_head.csv, areas.csv, results.json and curves.svg into `dir`
// (created if missing), each atomically.
absl::Status WriteQualityReports(const QualityResults& results, const std::string& dir);

}  // namespace kvsim

#endif  // KVSIM_SIM_QUALITY_QUALITY_REPORT_H_
