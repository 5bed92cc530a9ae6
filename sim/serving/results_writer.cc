#include "sim/serving/results_writer.h"


#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {

namespace {

// Appends the fields of one CSV row (integers in decimal, as absl::StrCat writes them) without building
// temporaries: each field is formatted straight into a small buffer and appended with its separator.
class CsvRow {
 public:
  explicit CsvRow(std::string* out) : out_(out) {}
  template <typename Int>
  CsvRow& operator<<(Int value) {
    char* end = absl::numbers_internal::FastIntToBuffer(value, cursor_);
    cursor_ = end;
    *cursor_++ = ',';
    return *this;
  }
  // An empty field: a value that does not exist (TPOT of a one-token output).
  CsvRow& Empty() {
    *cursor_++ = ',';
    return *this;
  }
  // Ends the row: the last field's comma becomes the newline.
  ~CsvRow() {
    cursor_[-1] = '\n';
    out_->append(buffer_, cursor_ - buffer_);
  }

 private:
  static constexpr int kMaxFields = 24;
  std::string* out_;
  char buffer_[kMaxFields * absl::numbers_internal::kFastToBufferSize];
  char* cursor_ = buffer_;
};

constexpr char kRequestsCsvHeader[] =
    "request_id,replica,finished,arrival_ns,queueing_ns,ttft_ns,tpot_ns,e2e_ns,input_tokens,output_tokens,"
    "prefix_reused_tokens,segment_reused_tokens,reused_tokens,reused_blocks,recomputed_tokens,"
    "reloaded_tokens,swapped_tokens,preemptions\n";
constexpr char kTimeSeriesCsvHeader[] =
    "time_ns,replica,gpu_blocks_used,gpu_blocks_pinned,host_blocks_used,batch_size,batched_tokens,"
    "queued_requests,running_requests,iteration_ns\n";

// Field numbers of Results.requests, Results.series and Results.sessions (proto/results.proto).
constexpr uint32_t kRequestsField = 3;
constexpr uint32_t kSeriesField = 4;
constexpr uint32_t kSessionsField = 10;

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// The wire encoding of one element of a repeated message field `field`: its tag (wire type 2, length-
// delimited), the message's length and its bytes, as protobuf serializes the element in its parent.
void AppendRepeatedMessage(uint32_t field, const google::protobuf::MessageLite& message, std::string* out) {
  AppendVarint((field << 3) | 2, out);
  const size_t size = message.ByteSizeLong();  // computed once: the serialization below uses the cached sizes
  AppendVarint(size, out);
  const size_t start = out->size();
  out->resize(start + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&(*out)[start]));
}

// Bytes a stream buffers before writing them out (and the chunk CopySpill copies in). Five streams buffer
// at once: at 128 KiB a write is still large, and the buffers touch under 1 MiB of memory, not 6.
constexpr size_t kStreamBufferBytes = size_t{1} << 17;

}  // namespace

void AppendRequestCsvRow(const proto::RequestResult& r, std::string* csv) {
  CsvRow row(csv);
  row << r.request_id() << r.replica() << (r.finished() ? 1 : 0) << r.arrival_ns() << r.queueing_ns() << r.ttft_ns();
  if (r.has_tpot_ns()) {
    row << r.tpot_ns();
  } else {
    row.Empty();
  }
  row << r.e2e_ns() << r.input_tokens() << r.output_tokens() << r.prefix_reused_tokens() << r.segment_reused_tokens()
      << r.reused_tokens() << r.reused_blocks() << r.recomputed_tokens() << r.reloaded_tokens() << r.swapped_tokens()
      << r.preemptions();
}

void AppendTimeSeriesCsvRow(const proto::TimeSeriesPoint& p, std::string* csv) {
  CsvRow(csv) << p.time_ns() << p.replica() << p.gpu_blocks_used() << p.gpu_blocks_pinned() << p.host_blocks_used()
              << p.batch_size() << p.batched_tokens() << p.queued_requests() << p.running_requests()
              << p.iteration_ns();
}

std::string RequestsCsv(const proto::Results& results) {
  std::string csv = kRequestsCsvHeader;
  csv.reserve(csv.size() + results.requests_size() * 96);
  for (const proto::RequestResult& r : results.requests()) AppendRequestCsvRow(r, &csv);
  return csv;
}

std::string TimeSeriesCsv(const proto::Results& results) {
  std::string csv = kTimeSeriesCsvHeader;
  csv.reserve(csv.size() + results.series_size() * 64);
  for (const proto::TimeSeriesPoint& p : results.series()) AppendTimeSeriesCsvRow(p, &csv);
  return csv;
}

absl::StatusOr<std::string> SummaryJson(const proto::Results& results) {
  Json head = Json::object();
  if (results.has_run()) head["run"] = ProtoToJson(results.run());
  if (results.has_summary()) head["summary"] = ProtoToJson(results.summary());
  return DumpJson(head);
}

// The error of this run's kernel mix (each kind's held-out error weighted by the predicted time it
// contributed) and the share of predicted time outside the measurements; "" without per-kind figures.
std::string TimeWeightedAccuracy(const proto::CostModelAccuracy& a) {
  if (a.kinds_size() == 0) return "";
  std::string out = absl::StrFormat("held-out median %.1f%%, p95 %.1f%% weighted by this run's kernel time (",
                                    100 * a.time_weighted_median_error(), 100 * a.time_weighted_p95_error());
  for (int i = 0; i < a.kinds_size(); ++i) {
    const proto::KernelKindAccuracy& k = a.kinds(i);
    absl::StrAppend(&out, i > 0 ? "; " : "", absl::StrFormat("%s %.0f%%: ", k.kind(), 100 * k.time_fraction()),
                    k.fitted()
                        ? absl::StrFormat("%.1f%%/%.1f%%", 100 * k.heldout_median_error(), 100 * k.heldout_p95_error())
                        : std::string("no held-out error"));
  }
  absl::StrAppend(&out,
                  absl::StrFormat("); %.1f%% of predicted time extrapolated", 100 * a.extrapolated_time_fraction()));
  return out;
}

std::string ExtrapolationWarning(const proto::CostModelAccuracy& a) {
  if (a.extrapolated_time_fraction() <= 0.10) return "";
  return absl::StrFormat("WARNING: %.1f%% of predicted kernel time extrapolated beyond the measurements; ",
                         100 * a.extrapolated_time_fraction());
}

std::string CostModelAccuracyLine(const proto::CostModelAccuracy& a) {
  if (a.per_kind_only()) return ExtrapolationWarning(a) + TimeWeightedAccuracy(a);
  if (!a.calibrated()) {
    if (a.kinds_size() == 0) {
      return "not calibrated (analytic roofline: no measurements of this GPU are bundled, so no fitted model and "
             "no held-out error; `kvsim calibrate` measures a table)";
    }
    std::string out =
        "not calibrated (analytic roofline); its held-out error against this GPU's measurements, "
        "median/p95:";
    for (int i = 0; i < a.kinds_size(); ++i) {
      absl::StrAppend(&out, i > 0 ? "," : "",
                      absl::StrFormat(" %s %.1f%%/%.1f%%", a.kinds(i).kind(), 100 * a.kinds(i).heldout_median_error(),
                                      100 * a.kinds(i).heldout_p95_error()));
    }
    return out + " (cost_model.kind FITTED fits them)";
  }
  std::string out =
      absl::StrFormat("held-out median %.1f%%, p95 %.1f%%, worst %.1f%% over %d %s points",
                      100 * a.heldout_median_error(), 100 * a.heldout_p95_error(), 100 * a.heldout_worst_error(),
                      a.heldout_points(), a.synthetic_table() ? "synthetic (datasheet)" : "measured");
  absl::StrAppend(&out, absl::StrFormat("; %d of %d kernel predictions extrapolated", a.extrapolated_predictions(),
                                        a.kernel_predictions()));
  if (a.unmeasured_predictions() > 0) {
    absl::StrAppend(&out, absl::StrFormat(" (%d unmeasured)", a.unmeasured_predictions()));
  }
  if (a.kinds_size() > 0) absl::StrAppend(&out, "; by kind: ", TimeWeightedAccuracy(a));
  return ExtrapolationWarning(a) + out;
}

std::string SummaryTable(const proto::Results& results) {
  const proto::Summary& s = results.summary();
  std::string out;
  auto line = [&out](absl::string_view name, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("  %-28s %s\n", name, value));
  };
  auto dist = [&](absl::string_view name, const proto::Distribution& d) {
    line(name, absl::StrFormat("mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f", d.mean(), d.p50(), d.p90(), d.p99(),
                               d.max()));
  };
  absl::StrAppend(&out, "kvsim replay: ", results.run().trace_path(), "\n");
  line("requests finished",
       absl::StrFormat("%d of %d (%d rejected)", s.finished_requests(), s.num_requests(), s.rejected_requests()));
  line("simulated duration", absl::StrFormat("%.3f s", s.duration_s()));
  line("throughput", absl::StrFormat("%.3f req/s, %.1f output tok/s", s.throughput_requests_per_s(),
                                     s.throughput_output_tokens_per_s()));
  line("goodput", s.slo_set() ? absl::StrFormat("%.3f req/s (%.1f%% of finished)", s.goodput_requests_per_s(),
                                                100 * s.goodput_fraction())
                              : "no SLO set (config slo.ttft_ms, slo.tpot_ms, slo.e2e_ms)");
  dist("TTFT (ms)", s.ttft_ms());
  dist("TPOT (ms)", s.tpot_ms());
  dist("end-to-end (ms)", s.e2e_ms());
  dist("queueing (ms)", s.queueing_ms());
  line("hit ratio (reused/prefix/segment)",
       absl::StrFormat("%.4f / %.4f / %.4f", s.reuse_hit_ratio(), s.prefix_hit_ratio(), s.segment_hit_ratio()));
  line("prompt / recomputed tokens", absl::StrFormat("%d / %d", s.input_tokens(), s.recomputed_tokens()));
  line("output tokens", absl::StrFormat("%d", s.output_tokens()));
  line("GPU capacity (blocks)",
       absl::StrFormat("%d of %d tokens, max used %d, mean occupancy %.1f%%", s.gpu_capacity_blocks(),
                       results.run().block_tokens(), s.max_gpu_blocks_used(), 100 * s.mean_gpu_occupancy()));
  line("evicted GPU blocks", absl::StrFormat("%d", s.evicted_blocks()));
  line("preemptions", absl::StrFormat("%d", s.preemptions()));
  line("bytes reloaded/demoted/swapped",
       absl::StrFormat("%d / %d / %d", s.reloaded_bytes(), s.demoted_bytes(), s.swapped_bytes()));
  line("iterations", absl::StrFormat("%d, batch mean %.2f max %d, busy %.1f%%", s.num_iterations(), s.mean_batch_size(),
                                     s.max_batch_size(), 100 * s.busy_fraction()));
  line("cost model", results.run().cost_model());
  line("cost model error", CostModelAccuracyLine(results.run().cost_model_accuracy()));
  return out;
}

absl::Status WriteResultsFiles(const std::string& out_dir, const proto::Results& results,
                               absl::string_view timeline_json) {
  KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
  std::string binary;
  if (!results.SerializeToString(&binary)) return absl::InternalError("results.pb: serialization failed");
  KVSIM_ASSIGN_OR_RETURN(std::string json, SummaryJson(results));
  std::vector<std::pair<std::string, std::string>> files = {{out_dir + "/results.pb", std::move(binary)},
                                                            {out_dir + "/summary.json", std::move(json)},
                                                            {out_dir + "/requests.csv", RequestsCsv(results)},
                                                            {out_dir + "/timeseries.csv", TimeSeriesCsv(results)}};
  if (!timeline_json.empty()) files.emplace_back(out_dir + "/timeline.json", std::string(timeline_json));
  return WriteFilesAtomically(files);
}

absl::StatusOr<std::unique_ptr<ResultsFileStream>> ResultsFileStream::Open(const std::string& out_dir) {
  KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
  std::unique_ptr<ResultsFileStream> stream(new ResultsFileStream(out_dir));
  KVSIM_RETURN_IF_ERROR(stream->OpenOutput("requests.csv", &stream->requests_csv_));
  KVSIM_RETURN_IF_ERROR(stream->OpenOutput("timeseries.csv", &stream->timeseries_csv_));
  stream->requests_pb_ = std::tmpfile();
  stream->series_pb_ = std::tmpfile();
  stream->sessions_pb_ = std::tmpfile();
  if (stream->requests_pb_ == nullptr || stream->series_pb_ == nullptr || stream->sessions_pb_ == nullptr) {
    return absl::InternalError(absl::StrCat(
        out_dir,
        "/results.pb: cannot create its temporary spill file (std::tmpfile, in TMPDIR): ", std::strerror(errno)));
  }
  stream->requests_csv_.buffer = kRequestsCsvHeader;
  stream->timeseries_csv_.buffer = kTimeSeriesCsvHeader;
  return stream;
}

ResultsFileStream::~ResultsFileStream() {
  if (!finished_) RemoveAll();
  if (requests_pb_ != nullptr) std::fclose(requests_pb_);
  if (series_pb_ != nullptr) std::fclose(series_pb_);
  if (sessions_pb_ != nullptr) std::fclose(sessions_pb_);
}

absl::Status ResultsFileStream::OpenOutput(const std::string& name, Output* output) {
  KVSIM_ASSIGN_OR_RETURN(output->file, OpenTempFile(absl::StrCat(out_dir_, "/", name)));
  return absl::OkStatus();
}

void ResultsFileStream::Fail(const std::string& what) {
  if (error_.ok()) error_ = absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void ResultsFileStream::Drain(std::FILE* file, const std::string& name, std::string* buffer, bool force) {
  if (!force && buffer->size() < kStreamBufferBytes) return;
  if (error_.ok() && std::fwrite(buffer->data(), 1, buffer->size(), file) != buffer->size()) {
    Fail(absl::StrCat("cannot write ", name));
  }
  buffer->clear();
}

void ResultsFileStream::AddRequest(const proto::RequestResult& request) {
  AppendRequestCsvRow(request, &requests_csv_.buffer);
  Drain(requests_csv_.file.file, requests_csv_.file.tmp, &requests_csv_.buffer, false);
  AppendRepeatedMessage(kRequestsField, request, &requests_pb_buffer_);
  Drain(requests_pb_, "results.pb's temporary spill file", &requests_pb_buffer_, false);
}

void ResultsFileStream::AddPoint(const proto::TimeSeriesPoint& point) {
  AppendTimeSeriesCsvRow(point, &timeseries_csv_.buffer);
  Drain(timeseries_csv_.file.file, timeseries_csv_.file.tmp, &timeseries_csv_.buffer, false);
  AppendRepeatedMessage(kSeriesField, point, &series_pb_buffer_);
  Drain(series_pb_, "results.pb's temporary spill file", &series_pb_buffer_, false);
}

void ResultsFileStream::AddSession(const proto::SessionResult& session) {
  ++streamed_sessions_;
  AppendRepeatedMessage(kSessionsField, session, &sessions_pb_buffer_);
  Drain(sessions_pb_, "results.pb's temporary spill file", &sessions_pb_buffer_, false);
}

void ResultsFileStream::CopySpill(std::FILE* from, Output* to) {
  if (!error_.ok()) return;
  if (std::fflush(from) != 0 || std::fseek(from, 0, SEEK_SET) != 0) {
    Fail("cannot read back results.pb's temporary spill file");
    return;
  }
  std::string chunk(kStreamBufferBytes, '\0');
  size_t n;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), from)) > 0) {
    to->buffer.assign(chunk.data(), n);
    Drain(to->file.file, to->file.tmp, &to->buffer, true);
  }
  if (std::ferror(from)) Fail("cannot read back results.pb's temporary spill file");
}

absl::Status ResultsFileStream::Assemble(proto::Results rest, absl::string_view timeline_json) {
  if (rest.requests_size() > 0 || rest.series_size() > 0 || (streamed_sessions_ > 0 && rest.sessions_size() > 0)) {
    return absl::InvalidArgumentError("ResultsFileStream::Finish: the records were streamed; `rest` must hold none");
  }
  // results.pb = run and summary (fields 1, 2), the records (3, 4), sessions (10: streamed, or from `rest`)
  // and TTFT breakdown (11).
  proto::Results tail;
  tail.mutable_sessions()->Swap(rest.mutable_sessions());
  if (rest.has_ttft_breakdown()) tail.set_allocated_ttft_breakdown(rest.release_ttft_breakdown());
  std::string head_bytes, tail_bytes;
  if (!rest.SerializeToString(&head_bytes) || !tail.SerializeToString(&tail_bytes)) {
    return absl::InternalError(absl::StrCat(out_dir_, "/results.pb: serialization failed"));
  }
  KVSIM_ASSIGN_OR_RETURN(std::string json, SummaryJson(rest));
  Drain(requests_csv_.file.file, requests_csv_.file.tmp, &requests_csv_.buffer, true);
  Drain(timeseries_csv_.file.file, timeseries_csv_.file.tmp, &timeseries_csv_.buffer, true);
  Drain(requests_pb_, "results.pb's temporary spill file", &requests_pb_buffer_, true);
  Drain(series_pb_, "results.pb's temporary spill file", &series_pb_buffer_, true);
  Drain(sessions_pb_, "results.pb's temporary spill file", &sessions_pb_buffer_, true);
  KVSIM_RETURN_IF_ERROR(error_);
  KVSIM_RETURN_IF_ERROR(OpenOutput("results.pb", &results_pb_));
  KVSIM_RETURN_IF_ERROR(OpenOutput("summary.json", &summary_json_));
  if (!timeline_json.empty()) KVSIM_RETURN_IF_ERROR(OpenOutput("timeline.json", &timeline_json_));
  results_pb_.buffer = std::move(head_bytes);
  Drain(results_pb_.file.file, results_pb_.file.tmp, &results_pb_.buffer, true);
  CopySpill(requests_pb_, &results_pb_);
  CopySpill(series_pb_, &results_pb_);
  CopySpill(sessions_pb_, &results_pb_);
  results_pb_.buffer = std::move(tail_bytes);
  Drain(results_pb_.file.file, results_pb_.file.tmp, &results_pb_.buffer, true);
  summary_json_.buffer = std::move(json);
  Drain(summary_json_.file.file, summary_json_.file.tmp, &summary_json_.buffer, true);
  if (!timeline_json.empty()) {
    timeline_json_.buffer.assign(timeline_json.data(), timeline_json.size());
    Drain(timeline_json_.file.file, timeline_json_.file.tmp, &timeline_json_.buffer, true);
  }
  KVSIM_RETURN_IF_ERROR(error_);
  // The order of WriteResultsFiles.
  std::vector<TempFile> files = {results_pb_.file, summary_json_.file, requests_csv_.file, timeseries_csv_.file};
  if (!timeline_json.empty()) files.push_back(timeline_json_.file);
  for (Output* output : {&results_pb_, &summary_json_, &requests_csv_, &timeseries_csv_, &timeline_json_}) {
    output->file.file = nullptr;  // CommitTempFiles closes them
  }
  finished_ = true;
  return CommitTempFiles(files);
}

absl::Status ResultsFileStream::Finish(proto::Results rest, absl::string_view timeline_json) {
  if (finished_) return absl::FailedPreconditionError("ResultsFileStream::Finish called twice");
  absl::Status status = Assemble(std::move(rest), timeline_json);
  if (!status.ok() && !finished_) RemoveAll();
  finished_ = true;
  return status;
}

void ResultsFileStream::RemoveAll() {
  for (Output* output : {&results_pb_, &summary_json_, &requests_csv_, &timeseries_csv_, &timeline_json_}) {
    DiscardTempFile(&output->file);
  }
}

}  // namespace kvsim
