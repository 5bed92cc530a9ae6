// File: sim/report/compare.h
//
// The comparison behind `kvsim compare BASELINE CANDIDATE`: each side is one or more result sets of one
// kind (several = repeated seeds); every metric both sides have gets its relative change, a 95% interval
// where both sides have at least two runs, and a verdict against its tolerance.
//
// Metrics (direction in brackets; lower = a rise is worse):
//   replay   ttft_ms/tpot_ms/e2e_ms/itl_ms .mean .p50 .p90 .p99, queueing_ms.mean [lower];
//            throughput_requests_per_s, throughput_output_tokens_per_s, goodput_requests_per_s (only where
//            an SLO is set), finished_requests, reuse_hit_ratio, prefix_hit_ratio [higher]; preemptions,
//            recomputed_tokens [lower]
//   cache    hit_ratio[POLICY@CAPACITY] [higher]
//   quality  recall[POLICY@BUDGET], error[POLICY@BUDGET] (means) [higher / lower]
//   eval     accuracy[POLICY@BUDGET] (mean over the accuracy-scored task families) [higher]
// Change = 100 x (candidate mean - baseline mean) / |baseline mean| (0 when both are 0).
// Interval: Welch's t-interval for the difference of the means at 95% (Welch-Satterthwaite degrees of
// freedom rounded down; Student-t quantiles tabulated for 1-30 degrees, 2.0 up to 60, 1.98 up to 120, 1.96
// beyond), in % of the baseline mean.
// A metric regresses when its change in the worse direction exceeds its tolerance and, with an interval,
// the whole interval lies on the worse side of 0 (so run-to-run noise alone does not fail a check).
//
// Deterministic; stateless; thread-safe.
#ifndef KVSIM_SIM_REPORT_COMPARE_H_
#define KVSIM_SIM_REPORT_COMPARE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/report/result_set.h"

namespace kvsim {

enum class Better { kLower, kHigher };

struct Metric {
  std::string name;
  Better better = Better::kLower;
  double value = 0;
};

// The metrics of one result set, in a fixed order. InvalidArgument for kinds without metrics (mrc,
// sweep, svg).
absl::StatusOr<std::vector<Metric>> ExtractMetrics(const ResultSet& set);

// One tolerance: metrics whose name equals `pattern`, or starts with it before a trailing '*'.
struct Tolerance {
  std::string pattern;
  double pct = 0;
};

// "ttft_ms.p99:10,tpot_ms.*:5" -> tolerances, in order (the first matching pattern wins).
// InvalidArgument naming the entry when one is not NAME:PCT with PCT >= 0.
absl::StatusOr<std::vector<Tolerance>> ParseTolerances(absl::string_view text);

// The 0.975 quantile of Student's t with `df` degrees of freedom (see the header comment). REQUIRES df >= 1.
double TQuantile975(int df);

struct MetricDelta {
  std::string name;
  Better better = Better::kLower;
  int baseline_runs = 0;
  int candidate_runs = 0;
  double baseline_mean = 0;
  double candidate_mean = 0;
  double change_pct = 0;
  // The 95% interval of the change in % of the baseline mean; NaN when a side has fewer than 2 runs.
  double ci_low_pct = 0;
  double ci_high_pct = 0;
  double tolerance_pct = 0;
  bool regressed = false;
};

struct Comparison {
  std::vector<MetricDelta> deltas;
  std::vector<std::string> only_baseline;   // metrics the candidate lacks
  std::vector<std::string> only_candidate;  // metrics the baseline lacks
  int regressions = 0;
};

// Compares the sides. InvalidArgument when a side is empty, the sets are not all of one kind, or that
// kind has no metrics. `default_pct` is the tolerance of metrics no pattern matches.
absl::StatusOr<Comparison> CompareResults(const std::vector<ResultSet>& baseline,
                                          const std::vector<ResultSet>& candidate,
                                          const std::vector<Tolerance>& tolerances, double default_pct);

// The comparison as an aligned text table, or a GitHub-flavoured markdown table (for a pull-request
// comment), with a verdict line.
std::string FormatComparisonText(const Comparison& comparison);
std::string FormatComparisonMarkdown(const Comparison& comparison);

}  // namespace kvsim

#endif  // KVSIM_SIM_REPORT_COMPARE_H_
