// `kvsim gen`: writes a synthetic request trace from a workload spec (text proto, proto/workload.proto),
// seeded and reproducible. The logic lives in traces/generators/ (GenerateTraceFile); this file wires the
// flags, the trace importers (for replayed arrivals and resampled lengths) and the trace writer.
#include <ostream>

#include "absl/flags/flag.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/generators/generate_trace.h"
#include "traces/generators/workload_generator.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "util/progress.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

ABSL_FLAG(std::string, spec, "",
          "workload spec file (text proto kvsim.proto.WorkloadSpec; examples in presets/workloads/)");

namespace kvsim {
namespace {

absl::Status RunGen(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments; use --spec and --out");
  const std::string spec_path = absl::GetFlag(FLAGS_spec);
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (spec_path.empty()) return absl::InvalidArgumentError("--spec is required (a workload spec file)");
  if (out_path.empty()) return absl::InvalidArgumentError("--out is required (the trace file to write)");
  proto::WorkloadSpec spec;
  KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(spec_path, &spec));
  const TraceOpener open_trace = [](const std::string& path) { return OpenTrace(path, TraceOptions{}); };
  const TraceWriterOpener open_writer = [](const std::string& path, const std::string& format, int32_t block_tokens) {
    TraceWriterOptions options;
    options.block_tokens = block_tokens;
    options.source_format = "generated";
    return OpenTraceWriter(path, format, options);
  };
  // Progress on a terminal only (util/progress.h).
  Progress progress("gen", spec.num_requests(), "req", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  KVSIM_ASSIGN_OR_RETURN(GenerateSummary summary,
                         GenerateTraceFile(spec, EffectiveSeed(spec, absl::GetFlag(FLAGS_seed)), out_path, open_trace,
                                           open_writer, progress.Callback(), spec_path));
  progress.Finish();
  out << FormatGenerateSummary(summary);
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    gen,
    {
        .name = "gen",
        .summary = "generate a synthetic request trace from a workload spec",
        .usage = "kvsim gen --spec=FILE --out=TRACE [--seed=N]",
        .details = "Reads a workload spec (text proto; see presets/workloads/*.textproto and proto/workload.proto):\n"
                   "session arrivals (Poisson, Gamma with burstiness as CV, or replayed from a trace; constant or\n"
                   "time-varying rate), session classes (single-turn, multi-turn chat re-reading the conversation,\n"
                   "agent programs of LLM calls and tool calls), length distributions (fixed, uniform, Zipf,\n"
                   "lognormal, gamma, exponential, resampled from a trace) and shared system prompts. Writes the\n"
                   "requests in arrival order with prefix-chained block hashes to TRACE: JSONL if it ends in .jsonl,\n"
                   "else the native binary format. --seed (if not 0) overrides the spec's seed; the same spec and\n"
                   "seed give a byte-identical trace. Paths of traces named in the spec are relative to the\n"
                   "current directory.",
        .flags = {"spec", "out", "seed", "quiet"},
        .run = RunGen,
    });

}  // namespace kvsim
