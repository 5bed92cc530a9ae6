// `kvsim costmodel VERB ...`: calibration tables and cost models (validate, import-vidur, synth, show,
// memory). The work is done by the cost_models/ libraries; this file parses arguments and prints.
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/cost_fit.h"
#include "cost_models/cost_model.h"
#include "cost_models/kernel_roofline.h"
#include "cost_models/peak_memory.h"
#include "cost_models/synthetic_table.h"
#include "cost_models/validation.h"
#include "cost_models/vidur_import.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/file.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

ABSL_FLAG(std::string, costmodel_device, "",
          "device preset or spec file for `synth` (e.g. h200); empty = the config's device");
ABSL_FLAG(std::string, costmodel_model, "",
          "model preset or spec file for `synth` (e.g. llama-3.1-8b); empty = the config's model");
ABSL_FLAG(double, launch_ns, 2000,
          "`synth`: nanoseconds added to every kernel's roofline time (launch and tail latency)");
ABSL_FLAG(int32_t, holdout_every, 5,
          "`validate`: hold out one point in this many of each series for the held-out error (>= 2)");
ABSL_FLAG(
    int32_t, worst, 0,
    "`validate`, `fit`: also list this many of the worst held-out predictions (kind, shape, measured, predicted)");
ABSL_FLAG(bool, cross_node, false,
          "`import-vidur`: import the cross-node all-reduce rows (devices_per_node < num_workers) instead of the "
          "single-node ones");
ABSL_FLAG(std::string, prefill_attention_from, "",
          "`fit`: carry the prefill-attention curve over from this device preset's (or spec file's) fit instead of "
          "fitting it to the rows, e.g. for a `kvsim calibrate` table, whose prefill rows time kvsim's own kernel");
ABSL_FLAG(std::string, decode_attention_from, "",
          "`fit`: carry the decode-attention curve over from this device preset's (or spec file's) fit instead of "
          "fitting it to the rows, e.g. for a GPU with no decode measurements");
ABSL_FLAG(int64_t, kv_tokens, 0,
          "`memory`: resident KV tokens per GPU to size; 0 = the GPU KV capacity the serving replay uses");

namespace kvsim {
namespace {

absl::StatusOr<proto::ExperimentConfig> LoadConfigWithOverrides() {
  proto::ExperimentConfig config;
  const std::string path = absl::GetFlag(FLAGS_config);
  if (!path.empty()) {
    KVSIM_ASSIGN_OR_RETURN(config, LoadExperimentConfig(path));
  }
  const std::string device = absl::GetFlag(FLAGS_costmodel_device);
  const std::string model = absl::GetFlag(FLAGS_costmodel_model);
  if (!device.empty()) {
    config.set_device_preset(device);
    config.clear_device();
  }
  if (!model.empty()) {
    config.set_model_preset(model);
    config.clear_model();
  }
  // Errors name where the fields came from: the config file and the preset flags.
  std::string source = path.empty() ? "default config" : path;
  if (!model.empty()) absl::StrAppend(&source, " with --costmodel_model=", model);
  if (!device.empty()) absl::StrAppend(&source, " with --costmodel_device=", device);
  return ResolveExperimentConfig(std::move(config), source);
}

absl::Status Validate(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1) return absl::InvalidArgumentError("usage: kvsim costmodel validate TABLE [--out=plot.svg]");
  const int worst = absl::GetFlag(FLAGS_worst);
  if (worst < 0) return absl::InvalidArgumentError("--worst must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ReadCalibrationTable(args[0]));
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
  ValidationOptions options;
  options.holdout_every = absl::GetFlag(FLAGS_holdout_every);
  if (options.holdout_every < 2) return absl::InvalidArgumentError("--holdout_every must be >= 2");
  KVSIM_ASSIGN_OR_RETURN(ValidationReport report, ValidateTable(table, MakeDeviceRates(config.device()), options));
  const proto::CalibrationHeader& h = table.header();
  out << "table " << args[0] << ": GPU " << (h.gpu_name().empty() ? "unknown" : h.gpu_name())
      << (h.synthetic_from_datasheet() ? " (synthetic from datasheet figures, not measured)" : "")
      << "; roofline prior from " << config.device().name() << "\n";
  out << FormatValidationReport(report);
  if (worst > 0) out << FormatWorstHeldOut(report, worst);
  const std::string svg_path = absl::GetFlag(FLAGS_out);
  if (!svg_path.empty()) {
    KVSIM_RETURN_IF_ERROR(WriteFileAtomically(svg_path, ValidationPlotSvg(report, args[0])));
    out << "plot: " << svg_path << "\n";
  }
  return absl::OkStatus();
}

absl::Status ImportVidur(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() < 2) return absl::InvalidArgumentError("usage: kvsim costmodel import-vidur DIR... OUT");
  VidurImportReport report;
  VidurImportOptions options;
  if (absl::GetFlag(FLAGS_cross_node)) options.all_reduce_scope = AllReduceScope::kCrossNode;
  const std::string& out_path = args.back();
  proto::CalibrationTable table;
  std::vector<std::string> sources;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable part, ImportVidurProfiles(args[i], &report, options));
    for (const proto::CalibrationPoint& p : part.points()) *table.add_points() = p;
    sources.push_back(args[i]);
  }
  proto::CalibrationHeader* h = table.mutable_header();
  h->set_synthetic_from_datasheet(false);
  h->set_source(absl::StrCat("kvsim costmodel import-vidur of Vidur profiles in ", absl::StrJoin(sources, ", "),
                             options.all_reduce_scope == AllReduceScope::kCrossNode ? " (cross-node all-reduce)"
                                                                                    : " (single-node all-reduce)"));
  if (!absl::GetFlag(FLAGS_costmodel_device).empty()) {
    KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
    h->set_gpu_name(config.device().name());
  }
  KVSIM_RETURN_IF_ERROR(WriteCalibrationTable(out_path, table));
  out << absl::StrFormat("read %d rows from %s\nwrote %d points to %s\n", report.rows,
                         absl::StrJoin(report.files, ", "), report.points, out_path);
  for (const std::string& s : report.used_rows) out << "  " << s << "\n";
  if (!report.skipped.empty()) {
    out << absl::StrFormat("skipped %d rows:\n", report.skipped.size());
    for (const std::string& s : report.skipped) out << "  " << s << "\n";
  }
  if (!report.unused.empty()) {
    out << "columns not read (other statistics, ops without a kvsim counterpart, bookkeeping):\n";
    for (const std::string& s : report.unused) out << "  " << s << "\n";
  }
  return absl::OkStatus();
}

absl::Status Fit(const std::vector<std::string>& args, std::ostream& out) {
  if (args.empty()) {
    return absl::InvalidArgumentError(
        "usage: kvsim costmodel fit PATH... --costmodel_device=DEVICE [--out=fitted.textproto]");
  }
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
  FitInput input;
  for (const std::string& path : args) KVSIM_RETURN_IF_ERROR(AddMeasurements(path, &input));
  // --prefill_attention_from / --decode_attention_from: the device whose fitted curve is carried over.
  auto load_from = [](const std::string& flag, const std::string& from, proto::DeviceSpec* device) -> absl::Status {
    proto::ExperimentConfig from_config;
    from_config.set_device_preset(from);
    KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig resolved,
                           ResolveExperimentConfig(std::move(from_config), absl::StrCat("--", flag, "=", from)));
    *device = resolved.device();
    return absl::OkStatus();
  };
  FitOptions options;
  proto::DeviceSpec prefill_from, decode_from;
  if (const std::string from = absl::GetFlag(FLAGS_prefill_attention_from); !from.empty()) {
    KVSIM_RETURN_IF_ERROR(load_from("prefill_attention_from", from, &prefill_from));
    options.prefill_attention_from = &prefill_from;
  }
  if (const std::string from = absl::GetFlag(FLAGS_decode_attention_from); !from.empty()) {
    KVSIM_RETURN_IF_ERROR(load_from("decode_attention_from", from, &decode_from));
    options.decode_attention_from = &decode_from;
  }
  KVSIM_ASSIGN_OR_RETURN(FitResult fit, FitDevice(input, config.device(), config.device().fitted(), options));
  out << absl::StrFormat("fit of %s on %d measured rows from %s\n", config.device().name(), input.rows.size(),
                         absl::StrJoin(input.sources, ", "));
  for (const std::string& s : input.not_used) out << "  " << s << "\n";
  out << FormatFitReport(fit);
  const int worst = absl::GetFlag(FLAGS_worst);
  if (worst > 0) out << FormatWorstFitRows(fit, worst);
  proto::DeviceSpec fitted_only;
  *fitted_only.mutable_fitted() = fit.params;
  const std::string text = ToTextProto(fitted_only);
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) {
    out << "# the device preset's fitted parameters:\n" << text;
  } else {
    KVSIM_RETURN_IF_ERROR(WriteFileAtomically(path, text));
    out << "wrote the fitted parameters (a DeviceSpec text proto with `fitted` only) to " << path << "\n";
  }
  return absl::OkStatus();
}

absl::Status Synth(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1) return absl::InvalidArgumentError("usage: kvsim costmodel synth OUT [--costmodel_device=h200]");
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
  SynthOptions options;
  options.launch_ns = absl::GetFlag(FLAGS_launch_ns);
  if (!(options.launch_ns >= 0 && options.launch_ns <= 1e9)) {
    return absl::InvalidArgumentError(absl::StrCat("--launch_ns must be in [0, 1e9], got ", options.launch_ns));
  }
  KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, SynthesizeTable(config, options));
  KVSIM_RETURN_IF_ERROR(WriteCalibrationTable(args[0], table));
  out << absl::StrFormat("wrote %d synthetic points (%s, %s) to %s\n", table.points_size(), config.model().name(),
                         config.device().name(), args[0]);
  return absl::OkStatus();
}

absl::Status Show(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("usage: kvsim costmodel show [--config=FILE]");
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> model, CreateCostModel(config));
  out << "cost model: " << model->Describe() << "\n";
  out << absl::StrFormat("%-34s %10s %10s %10s %10s %10s %10s %10s\n", "iteration", "total_us", "linear", "lm_head",
                         "attention", "allreduce", "overhead", "other");
  struct Example {
    std::string name;
    std::vector<SequenceWork> pieces;
  };
  auto piece = [](int64_t context, int64_t tokens, int32_t segments = 1) {
    SequenceWork s;
    s.context_tokens = context;
    s.new_tokens = tokens;
    s.num_segments = segments;
    return s;
  };
  std::vector<Example> examples = {
      {"1 decode, context 1K", {piece(1000, 1)}},
      {"1 decode, context 32K", {piece(32768, 1)}},
      {"64 decodes, context 4K", std::vector<SequenceWork>(64, piece(4096, 1))},
      {"prefill 2K chunk after 6K", {piece(6144, 2048)}},
      {"64 decodes @4K + 1K chunk", std::vector<SequenceWork>(64, piece(4096, 1))},
      {"1 decode, 32K in 8 segments", {piece(32768, 1, 8)}},
  };
  examples[4].pieces.push_back(piece(0, 1024));
  for (const Example& e : examples) {
    BatchShape batch;
    batch.sequences = e.pieces;
    KVSIM_ASSIGN_OR_RETURN(CostBreakdown b, model->IterationBreakdown(batch));
    out << absl::StrFormat("%-34s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", e.name, b.total_ns / 1e3,
                           b.linear_ns / 1e3, b.lm_head_ns / 1e3, b.attention_ns / 1e3, b.allreduce_ns / 1e3,
                           b.overhead_ns / 1e3, b.other_ns / 1e3);
  }
  KVSIM_ASSIGN_OR_RETURN(int64_t block_ns, model->RecomputeTimeNs(32768, 16));
  out << absl::StrFormat("recompute of 16 tokens at position 32K: %.1f us\n", block_ns / 1e3);
  return absl::OkStatus();
}

absl::Status Memory(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("usage: kvsim costmodel memory [--config=FILE]");
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadConfigWithOverrides());
  int64_t tokens = absl::GetFlag(FLAGS_kv_tokens);
  if (tokens < 0 || tokens > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_tokens must be in [0, 2^40], got ", tokens));
  }
  const bool most = tokens == 0;
  if (most) {
    KVSIM_ASSIGN_OR_RETURN(tokens, GpuCapacityTokens(config));
  }
  KVSIM_ASSIGN_OR_RETURN(PeakMemory peak, EstimatePeakMemory(config, tokens));
  const double gib = 1 << 30;
  const double usable = config.device().memory_bytes() * config.cache().gpu_memory_utilization();
  out << absl::StrFormat(
      "%s on %s, KV %s, %d KV tokens per GPU\n  weights     %8.2f GiB\n  kv          %8.2f GiB\n"
      "  activations %8.2f GiB\n  workspace   %8.2f GiB\n  total       %8.2f GiB of %.2f GiB (x %.2f "
      "utilization = %.2f GiB)\n",
      config.model().name(), config.device().name(), peak.kv_format, tokens, peak.weights_bytes / gib,
      peak.kv_bytes / gib, peak.activation_bytes / gib, peak.workspace_bytes / gib, peak.total_bytes / gib,
      config.device().memory_bytes() / gib, config.cache().gpu_memory_utilization(), usable / gib);
  if (peak.total_bytes > usable) {
    out << absl::StrFormat("  does not fit: %.2f GiB over the usable memory\n", (peak.total_bytes - usable) / gib);
    if (most) {  // the capacity rule's reserve is smaller than this estimate of activations and workspace
      out << absl::StrFormat(
          "  the GPU KV capacity (the serving replay's) keeps cache.activation_reserve_bytes = %.2f GiB for "
          "activations and workspace; this estimate needs %.2f GiB: raise activation_reserve_bytes\n",
          config.cache().activation_reserve_bytes() / gib, (peak.activation_bytes + peak.workspace_bytes) / gib);
    }
  }
  return absl::OkStatus();
}

absl::Status RunCostModel(const std::vector<std::string>& args, std::ostream& out) {
  if (args.empty()) {
    return absl::InvalidArgumentError("expected a verb: validate, import-vidur, fit, synth, show or memory");
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "validate") return Validate(rest, out);
  if (args[0] == "import-vidur") return ImportVidur(rest, out);
  if (args[0] == "synth") return Synth(rest, out);
  if (args[0] == "fit") return Fit(rest, out);
  if (args[0] == "show") return Show(rest, out);
  if (args[0] == "memory") return Memory(rest, out);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown verb '", args[0], "'; expected validate, import-vidur, fit, synth, show or memory"));
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    costmodel,
    {
        .name = "costmodel",
        .summary = "calibration tables and cost models: validate, import-vidur, fit, synth, show, memory",
        .usage =
            "kvsim costmodel validate TABLE [--out=plot.svg] | import-vidur DIR... OUT | fit PATH... | synth OUT | "
            "show | memory",
        .details =
            "validate TABLE      leave-one-out and held-out error of the table model on TABLE (median, p95, worst,\n"
            "                    per kernel kind); --out=FILE.svg writes a predicted-vs-measured log-log plot;\n"
            "                    --worst=N lists the N worst held-out predictions with their shapes.\n"
            "import-vidur DIR... OUT  converts Vidur profiles (attention.csv, mlp.csv, all_reduce.csv in each DIR) "
            "into\n"
            "                    one calibration table OUT (.csv, or .textproto; --costmodel_device names its GPU);\n"
            "                    says which rows it used, lists skipped\n"
            "                    rows and every column it does not read. All-reduce: single-node rows only, or\n"
            "                    --cross_node for the cross-node ones (never both in one table).\n"
            "fit PATH...         fits the fitted cost model's per-op curves (cost_models/cost_fit.h: "
            "Levenberg-Marquardt\n"
            "                    in log space, every 5th row per kind held out) to measurements on the device of\n"
            "                    --costmodel_device (or the config's): Vidur profile directories and calibration\n"
            "                    tables. Prints per-kind held-out errors next to the roofline's and the `fitted { }`\n"
            "                    block for the device preset (--out=FILE writes it instead). Kinds with too few rows\n"
            "                    or no converged fit keep the preset's previous parameters, and say so.\n"
            "                    --prefill_attention_from=DEVICE carries that device's prefill-attention curve over\n"
            "                    (not fitted here; for tables that time kvsim's own prefill kernel),\n"
            "                    --decode_attention_from=DEVICE its decode-attention curve.\n"
            "synth OUT           writes a table computed from datasheet figures (labelled synthetic_from_datasheet)\n"
            "                    for the config's model and device, or --costmodel_model / --costmodel_device.\n"
            "show                the configured cost model's per-term times for a few typical iterations.\n"
            "memory              peak GPU memory (weights, KV at its format, activations, workspace).\n"
            "Tables are CSV (`# key: value` header lines, a column row, one row per point) or text protos of\n"
            "kvsim.proto.CalibrationTable; see cost_models/calibration_table.h for the columns.",
        .flags = {"config", "out", "costmodel_device", "costmodel_model", "launch_ns", "holdout_every", "worst",
                  "kv_tokens", "cross_node", "prefill_attention_from", "decode_attention_from"},
        .flag_aliases = {{"costmodel_launch_ns", "launch_ns"},
                         {"costmodel_holdout_every", "holdout_every"},
                         {"costmodel_cross_node", "cross_node"},
                         {"costmodel_kv_tokens", "kv_tokens"},
                         {"costmodel_worst", "worst"}},
        .run = RunCostModel,
    });

}  // namespace kvsim
