// `kvsim report RESULTS... --out=report.html`: one self-contained HTML page (inline SVG, no script, no
// network) over one or several result sets (sim/report/html_report.h).
#include <ostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/report/html_report.h"
#include "sim/report/result_set.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, labels, "",
          "report, compare: names of the result sets, comma-separated, in the order given; empty = folder "
          "or file names");
ABSL_FLAG(std::string, title, "kvsim report", "report: the page's title");
ABSL_FLAG(std::string, sweep_axes, "",
          "report: the two sweep axes of the heat map, X,Y (column names as in the sweep's CSV); empty = the "
          "first two");
ABSL_FLAG(std::string, sweep_metric, "",
          "report: the sweep column to plot; empty = hit_ratio (cache points) or ttft_p50_ms (replay points)");

namespace kvsim {
namespace {

absl::Status RunReport(const std::vector<std::string>& args, std::ostream& out) {
  if (args.empty()) return absl::InvalidArgumentError("expected one or more result folders or files");
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) return absl::InvalidArgumentError("--out=FILE.html is required");
  std::vector<std::string> labels;
  if (!absl::GetFlag(FLAGS_labels).empty()) labels = absl::StrSplit(absl::GetFlag(FLAGS_labels), ',');
  if (!labels.empty() && labels.size() != args.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--labels has ", labels.size(), " names for ", args.size(), " result sets"));
  }
  std::vector<ResultSet> sets;
  for (size_t i = 0; i < args.size(); ++i) {
    KVSIM_ASSIGN_OR_RETURN(ResultSet set, LoadResultSet(args[i]));
    if (!labels.empty()) set.label = labels[i];
    sets.push_back(std::move(set));
  }
  ReportOptions options;
  options.title = absl::GetFlag(FLAGS_title);
  options.sweep_metric = absl::GetFlag(FLAGS_sweep_metric);
  if (!absl::GetFlag(FLAGS_sweep_axes).empty()) {
    options.sweep_axes = absl::StrSplit(absl::GetFlag(FLAGS_sweep_axes), ',');
    if (options.sweep_axes.size() != 2) return absl::InvalidArgumentError("--sweep_axes: expected X,Y");
  }
  KVSIM_ASSIGN_OR_RETURN(HtmlReport report, BuildHtmlReport(sets, options));
  KVSIM_RETURN_IF_ERROR(WriteFileAtomically(path, report.html));
  out << "wrote " << path << ": " << sets.size() << " result set" << (sets.size() == 1 ? "" : "s") << ", "
      << report.plot_ids.size() << " plots\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(report, {
                                   .name = "report",
                                   .summary = "one self-contained HTML page of plots over result sets",
                                   .usage = "kvsim report RESULTS... --out=report.html [--labels=A,B] "
                                            "[--sweep_axes=X,Y] [--sweep_metric=COLUMN]",
                                   .details = "RESULTS are result folders or files of replay (summary.json, "
                                              "requests.csv, timeseries.csv), cache (cache.csv), mrc (its CSV), sweep "
                                              "(folder, results.csv or results.json), quality and eval (results.json), "
                                              "or an .svg to include (e.g. from costmodel validate). The page has "
                                              "TTFT/TPOT/ITL/end-to-end CDFs, throughput and goodput, GPU occupancy, "
                                              "queue and batch over time, hit ratio vs capacity with Belady's bound, "
                                              "miss-ratio curves, sweep heat maps and line plots, quality and "
                                              "closed-loop curves; no script and no network.",
                                   .flags = {"out", "labels", "title", "sweep_axes", "sweep_metric"},
                                   .flag_aliases = {{"report_title", "title"}},
                                   .run = RunReport,
                               });

}  // namespace kvsim
