// File: sim/serving/results_writer.h
//
// The files of a replay, each written atomically (temp file + rename) into one directory:
//   results.pb       proto::Results, binary: run info, summary, every request, the time series
//   summary.json     run info and summary as JSON (proto3 JSON mapping: field names as in results.proto,
//                    64-bit integers as strings, every field printed)
//   requests.csv     one row per request (header names the RequestResult fields, times in ns)
//   timeseries.csv   one row per TimeSeriesPoint
//   timeline.json    Chrome trace-event JSON for Perfetto (only when given)
// plus the summary table printed by `kvsim replay`. Output is a function of the Results alone, so equal
// results give byte-identical files.
//
// Example:
//   KVSIM_RETURN_IF_ERROR(WriteResultsFiles("out/replay", results, timeline.Json()));
//   std::cout << SummaryTable(results);
#ifndef KVSIM_SIM_SERVING_RESULTS_WRITER_H_
#define KVSIM_SIM_SERVING_RESULTS_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/results.pb.h"

namespace kvsim {

std::string RequestsCsv(const proto::Results& results);
std::string TimeSeriesCsv(const proto::Results& results);
// Run info and summary; Internal if the JSON printer fails.
absl::StatusOr<std::string> SummaryJson(const proto::Results& results);
// A human-readable table of the summary (fixed-width columns, one figure per line).
std::string SummaryTable(const proto::Results& results);
// One line on how far to trust the cost model: the table's held-out error and this run's extrapolations,
// or that the model is not calibrated.
std::string CostModelAccuracyLine(const proto::CostModelAccuracy& accuracy);

// Creates `out_dir` if needed and writes every file above (timeline.json only if `timeline_json` is not
// empty). Errors name the file.
absl::Status WriteResultsFiles(const std::string& out_dir, const proto::Results& results,
                               absl::string_view timeline_json);

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_RESULTS_WRITER_H_
