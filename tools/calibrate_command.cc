// `kvsim calibrate`: times kvsim's kernels on this machine's GPU over a grid of shapes and writes the
// calibration table (CSV) the table cost model reads. The work lives in kernels/calibration.h.
#include <iostream>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cost_models/calibration_table.h"
#include "kernels/calibration.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/status_macros.h"
#include "util/version.h"

ABSL_FLAG(bool, full, false,
          "calibrate: sweep the full grid (tens of minutes) instead of the coarse one (under 5 minutes on an "
          "H200)");
ABSL_FLAG(int32_t, repetitions, 30, "calibrate: timed runs per point (count; median/p10/p90 over them)");
ABSL_FLAG(std::string, only, "",
          "calibrate: comma-separated kinds to sweep (decode_attention, prefill_attention, gemm, "
          "host_device_copy); empty = all");
ABSL_FLAG(double, budget_s, 0,
          "calibrate: wall-clock budget in seconds (0 = none); past it each kind times an even subset of its grid "
          "and the output says how many points were timed");
ABSL_FLAG(bool, validate, true,
          "calibrate: check every kernel against the float64 CPU reference before timing (false: skip, and say "
          "so in the table's notes)");
ABSL_FLAG(std::string, revision, "",
          "calibrate: revision of the build recorded in the table header (e.g. a git commit); empty = the "
          "kvsim version");

namespace kvsim {
namespace {

absl::Status RunCalibrate(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments");
  const std::string dir = absl::GetFlag(FLAGS_out);
  if (dir.empty()) return absl::InvalidArgumentError("--out (output directory) is required");
  CalibrationOptions options;
  options.full = absl::GetFlag(FLAGS_full);
  options.repetitions = absl::GetFlag(FLAGS_repetitions);
  if (options.repetitions < 1) return absl::InvalidArgumentError("--repetitions must be >= 1");
  options.seed = absl::GetFlag(FLAGS_seed);
  options.budget_seconds = absl::GetFlag(FLAGS_budget_s);
  if (!(options.budget_seconds >= 0)) return absl::InvalidArgumentError("--budget_s must be >= 0");
  options.validate = absl::GetFlag(FLAGS_validate);
  const std::string revision = absl::GetFlag(FLAGS_revision);
  options.tool_revision = absl::StrFormat("kvsim %s%s", kKvsimVersion, revision.empty() ? "" : " " + revision);
  const std::string only = absl::GetFlag(FLAGS_only);
  if (!only.empty()) {
    for (absl::string_view kind : absl::StrSplit(only, ',')) {
      if (kind != "decode_attention" && kind != "prefill_attention" && kind != "gemm" && kind != "host_device_copy") {
        return absl::InvalidArgumentError(
            absl::StrFormat("--only: unknown kind '%s' (expected decode_attention, prefill_attention, gemm, "
                            "host_device_copy)",
                            kind));
      }
      options.only.emplace_back(kind);
    }
  }
  KVSIM_ASSIGN_OR_RETURN(CalibrationResult result, RunCalibration(options, &std::cerr));
  KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string path = dir + "/calibration.csv";
  KVSIM_RETURN_IF_ERROR(WriteCalibrationTable(path, result.table));
  for (const std::string& note : result.notes) out << "# " << note << "\n";
  out << absl::StrFormat("wrote %s (%d rows)\n", path, result.table.points_size());
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    calibrate,
    {
        .name = "calibrate",
        .summary = "time kvsim's kernels on this GPU and write the calibration table (CSV)",
        .usage = "kvsim calibrate --out=DIR [--full] [--seed=N] [--repetitions=N] [--only=KINDS]\n"
                 "                [--budget_s=S] [--validate=false]",
        .details = "Checks every kernel against the float64 CPU reference on small shapes, then times decode\n"
                   "attention (batch x context x segments x KV format x GQA x page size), chunked prefill (chunk x\n"
                   "prefix x segments), the recompute GEMMs (cuBLASLt) and host-to-device copies, and writes\n"
                   "DIR/calibration.csv in the cost model's table format. Needs a CUDA GPU: fails with exit\n"
                   "status 2 (Unavailable) elsewhere.",
        .flags = {"out", "seed", "full", "repetitions", "only", "budget_s", "validate", "revision"},
        .flag_aliases = {{"calibrate_repetitions", "repetitions"},
                         {"calibrate_only", "only"},
                         {"calibrate_budget_s", "budget_s"},
                         {"calibrate_validate", "validate"},
                         {"calibrate_revision", "revision"}},
        .run = RunCalibrate,
    });

}  // namespace kvsim
