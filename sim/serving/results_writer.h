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
// results give byte-identical files. ResultsFileStream writes the same files while the run goes, from the
// records as they are made (a ResultsSink), so a replay need not hold its requests in memory.
//
// Example:
//   KVSIM_RETURN_IF_ERROR(WriteResultsFiles("out/replay", results, timeline.Json()));
//   std::cout << SummaryTable(results);
//
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<ResultsFileStream> stream, ResultsFileStream::Open("out/replay"));
//   ... MetricsCollector with {.sink = stream.get()}; run ...
//   KVSIM_RETURN_IF_ERROR(stream->Finish(std::move(results_without_records), ""));
#ifndef KVSIM_SIM_SERVING_RESULTS_WRITER_H_
#define KVSIM_SIM_SERVING_RESULTS_WRITER_H_

#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/results.pb.h"
#include "sim/serving/results_sink.h"
#include "util/file.h"

namespace kvsim {

std::string RequestsCsv(const proto::Results& results);
std::string TimeSeriesCsv(const proto::Results& results);
// One row of requests.csv / timeseries.csv (with its newline) appended to *csv.
void AppendRequestCsvRow(const proto::RequestResult& request, std::string* csv);
void AppendTimeSeriesCsvRow(const proto::TimeSeriesPoint& point, std::string* csv);
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

// The files of WriteResultsFiles, written as the run goes: each request's row of requests.csv and each
// point's row of timeseries.csv is appended to the file's temporary name (util/file.h's TempPathFor) as
// it arrives, and its results.pb encoding, like each session's, to an anonymous spill file
// (std::tmpfile). Finish writes summary.json, assembles results.pb (run and summary, the spilled records
// and sessions, the TTFT breakdown: the field order protobuf serializes in) and renames every file into
// place. The files are byte-identical
// to WriteResultsFiles of the Results holding the same records in the same order. Memory: 1 MiB buffers
// per file, whatever the number of records; disk: the records' results.pb bytes twice until Finish.
class ResultsFileStream final : public ResultsSink {
 public:
  // Creates `out_dir` if needed and the temporary files; errors name the file.
  static absl::StatusOr<std::unique_ptr<ResultsFileStream>> Open(const std::string& out_dir);
  // Unless Finish succeeded: closes and removes every temporary file (no file is left half-written).
  ~ResultsFileStream() override;
  ResultsFileStream(const ResultsFileStream&) = delete;
  ResultsFileStream& operator=(const ResultsFileStream&) = delete;

  // A write failure is remembered and returned by Finish.
  void AddRequest(const proto::RequestResult& request) override;
  void AddPoint(const proto::TimeSeriesPoint& point) override;
  void AddSession(const proto::SessionResult& session) override;

  // `rest` is the rest of the Results: run, summary, sessions unless they were streamed, TTFT breakdown
  // (InvalidArgument if it holds requests or series, or sessions beside streamed ones). Writes timeline.json too if `timeline_json` is not empty. Call once; errors name
  // the file, and leave none of the files.
  absl::Status Finish(proto::Results rest, absl::string_view timeline_json);

 private:
  struct Output {
    TempFile file;
    std::string buffer;
  };
  explicit ResultsFileStream(std::string out_dir) : out_dir_(std::move(out_dir)) {}
  // Creates out_dir_/name's temporary file.
  absl::Status OpenOutput(const std::string& name, Output* output);
  // Writes *buffer to `file` once it holds 1 MiB (or at once if `force`), then empties it; a failure sets
  // error_, naming `name`.
  void Drain(std::FILE* file, const std::string& name, std::string* buffer, bool force);
  // Appends the spill `from` to `to`'s file.
  void CopySpill(std::FILE* from, Output* to);
  // Finish without the clean-up of its failures.
  absl::Status Assemble(proto::Results rest, absl::string_view timeline_json);
  // Sets error_ (the first failure only), with errno's message.
  void Fail(const std::string& what);
  // Closes every file; removes the temporary ones not yet renamed.
  void RemoveAll();

  const std::string out_dir_;
  Output requests_csv_, timeseries_csv_, results_pb_, summary_json_, timeline_json_;
  std::FILE* requests_pb_ = nullptr;  // spills: each record's results.pb field, in order
  std::FILE* series_pb_ = nullptr;
  std::FILE* sessions_pb_ = nullptr;
  std::string requests_pb_buffer_, series_pb_buffer_, sessions_pb_buffer_;
  int64_t streamed_sessions_ = 0;
  std::string encoded_;  // scratch
  absl::Status error_;
  bool finished_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_RESULTS_WRITER_H_
