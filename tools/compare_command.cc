// `kvsim compare BASELINE CANDIDATE`: metric deltas between result sets, with intervals over repeated
// seeds, and exit status 3 when a metric regresses beyond its tolerance (sim/report/compare.h).
#include <ostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/report/compare.h"
#include "sim/report/result_set.h"
#include "tools/command.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, tolerance, "",
          "compare: per-metric tolerances in %, METRIC:PCT comma-separated; METRIC may end in * (a prefix); "
          "the first match wins, others get --default_tolerance");
ABSL_FLAG(double, default_tolerance, 5.0, "compare: tolerance in % of metrics no --tolerance entry names");
ABSL_FLAG(std::string, format, "text", "compare: text | markdown (a table for a pull-request comment)");

namespace kvsim {
namespace {

constexpr int kRegressionExitCode = 3;

absl::StatusOr<std::vector<ResultSet>> LoadSide(const std::string& list) {
  std::vector<ResultSet> sets;
  for (absl::string_view path : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    // The per-request and time-series files are not compared: only summary.json is read.
    KVSIM_ASSIGN_OR_RETURN(ResultSet set, LoadResultSet(std::string(path), ReplayDetail::kSummaryOnly));
    sets.push_back(std::move(set));
  }
  return sets;
}

absl::Status RunCompare(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 2) {
    return absl::InvalidArgumentError("expected BASELINE CANDIDATE (each a result path, or several comma-separated)");
  }
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "markdown") {
    return absl::InvalidArgumentError(absl::StrCat("--format: expected text or markdown, got '", format, "'"));
  }
  KVSIM_ASSIGN_OR_RETURN(std::vector<Tolerance> tolerances, ParseTolerances(absl::GetFlag(FLAGS_tolerance)));
  if (!(absl::GetFlag(FLAGS_default_tolerance) >= 0)) {
    return absl::InvalidArgumentError("--default_tolerance: expected a percentage >= 0");
  }
  KVSIM_ASSIGN_OR_RETURN(std::vector<ResultSet> baseline, LoadSide(args[0]));
  KVSIM_ASSIGN_OR_RETURN(std::vector<ResultSet> candidate, LoadSide(args[1]));
  KVSIM_ASSIGN_OR_RETURN(Comparison comparison,
                         CompareResults(baseline, candidate, tolerances, absl::GetFlag(FLAGS_default_tolerance)));
  out << (format == "markdown" ? FormatComparisonMarkdown(comparison) : FormatComparisonText(comparison));
  if (comparison.regressions > 0) {
    std::vector<std::string> names;
    for (const MetricDelta& d : comparison.deltas) {
      if (d.regressed) names.push_back(d.name);
    }
    return WithExitCode(
        absl::FailedPreconditionError(absl::StrCat(
            comparison.regressions, " metric(s) regressed beyond tolerance: ", absl::StrJoin(names, ", "))),
        kRegressionExitCode);
  }
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(compare, {
                                    .name = "compare",
                                    .summary = "metric deltas between result sets; exit 3 on a regression",
                                    .usage = "kvsim compare BASELINE CANDIDATE [--tolerance=METRIC:PCT,...] "
                                             "[--default_tolerance=5] [--format=text|markdown]",
                                    .details = "BASELINE and CANDIDATE are result folders or files of one kind "
                                               "(replay, cache, quality, eval), or several comma-separated (repeated "
                                               "seeds: then a 95% Welch t-interval of the change). A metric regresses "
                                               "when it moves in its worse direction (higher TTFT, lower throughput) "
                                               "by more than its tolerance and, with an interval, the interval lies "
                                               "wholly on the worse side. Exit status: 0 no regression, 3 regression, "
                                               "2 bad input.",
                                    .flags = {"tolerance", "default_tolerance", "format"},
                                    .run = RunCompare,
                                });

}  // namespace kvsim
