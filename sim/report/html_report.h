// File: sim/report/html_report.h
//
// The HTML report of `kvsim report`: one self-contained page (inline SVG from util/svg_plot.h and inline
// CSS; no script, no external resource) over one or several result sets (sim/report/result_set.h):
//   serving    a summary table; TTFT, TPOT, ITL and end-to-end CDFs (one curve per result set); request
//              throughput and goodput, output-token throughput; GPU occupancy, queue length and batch size
//              over time (summed over replicas)
//   cache      hit ratio vs capacity per policy, Belady's offline bound drawn where it was run; miss-ratio
//              curves (1 - hit ratio) of the cache, mrc and sweep cache results
//   sweep      per sweep, a heat map of one metric over two grid axes and a line plot of it along the
//              first axis, one line per value of the second (other axes: mean over them, said in the note)
//   quality    attention-mass recall and output error vs budget per policy (`kvsim quality`)
//   eval       closed-loop accuracy vs budget per policy (mean NLL where no task is scored by accuracy)
//   svg        included as it is (e.g. the cost model's predicted-vs-measured plot)
// Every plot is an <svg> with a stable id (listed in HtmlReport::plot_ids, in page order): ttft-cdf,
// tpot-cdf, itl-cdf, e2e-cdf, throughput, token-throughput, gpu-occupancy, queue-length, batch-size,
// hit-ratio-capacity, miss-ratio-curves, sweep-heatmap-N, sweep-lines-N, quality-recall-N, quality-error-N,
// eval-accuracy-N, included-svg-N (N counts result sets of that kind from 1).
//
// Deterministic: same inputs, same bytes. Thread-safety: stateless.
#ifndef KVSIM_SIM_REPORT_HTML_REPORT_H_
#define KVSIM_SIM_REPORT_HTML_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/report/result_set.h"

namespace kvsim {

struct ReportOptions {
  std::string title = "kvsim report";
  // Two sweep axes for the heat map (x, y); empty = the sweep's first two axes.
  std::vector<std::string> sweep_axes;
  // The sweep metric (a column); empty = hit_ratio for cache points, ttft_p50_ms for replay points.
  std::string sweep_metric;
};

struct HtmlReport {
  std::string html;
  std::vector<std::string> plot_ids;
};

// InvalidArgument when `sets` is empty, or an option names a sweep axis or metric a sweep lacks.
absl::StatusOr<HtmlReport> BuildHtmlReport(const std::vector<ResultSet>& sets, const ReportOptions& options);

// The grid axes of a sweep table: columns named "axis.*", or else those before its `point` column.
std::vector<std::string> SweepAxes(const CsvTable& table);

}  // namespace kvsim

#endif  // KVSIM_SIM_REPORT_HTML_REPORT_H_
