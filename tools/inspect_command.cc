// `kvsim inspect TRACE`: the facts of a trace (counts, rates, token percentiles, sessions, block
// reuse, LRU stack distances), as a table or as JSON. Logic lives in traces/trace_stats.h.
#include <ostream>

#include "absl/flags/flag.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_stats.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status RunInspect(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1) return absl::InvalidArgumentError("expected one argument: TRACE");
  KVSIM_ASSIGN_OR_RETURN(TraceOptions options, CheckedTraceOptionsFromFlags());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(args[0], options));
  KVSIM_ASSIGN_OR_RETURN(TraceStats stats, ComputeTraceStats(*reader));
  out << (absl::GetFlag(FLAGS_json) ? FormatTraceStatsJson(stats) : FormatTraceStats(stats));
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    inspect,
    {
        .name = "inspect",
        .summary = "print a trace's facts: rates, token percentiles, sessions, block reuse, stack distances",
        .usage = "kvsim inspect TRACE [--json] [--trace_format=NAME] [--chain_hashes]",
        .details = "Streams TRACE (any supported format) once and prints: request count, duration, arrival\n"
                   "rate (mean and peak per minute), input/output tokens (mean, p50, p90, p99, max), sessions\n"
                   "and turns where known, block references, distinct blocks, the hit ratio of an unbounded\n"
                   "cache, the prefix-hit ratio, the fraction of blocks used twice or more, and LRU stack\n"
                   "distance quartiles (distinct blocks between reuses; a reuse hits in an LRU cache of\n"
                   "distance + 1 blocks). Definitions: traces/trace_stats.h. --json prints one JSON object.\n"
                   "Memory is bounded whatever the trace's length: counts, sums, means, min and max are exact;\n"
                   "percentiles are exact up to 65,536 distinct values per column, else within 1% + 0.5 (a\n"
                   "log-bucket sketch); distinct blocks and sessions exact up to 2^20, else HyperLogLog (0.81%\n"
                   "standard error); past 2^20 distinct blocks the per-block figures (prefix-hit ratio, reused\n"
                   "fraction, predecessors, stack distances) come from a spatial sample of the blocks (SHARDS)\n"
                   "with a stated 3-sigma error. Every estimate gets an 'approximate' line (a JSON object\n"
                   "\"approximate\" with one entry per figure) naming its method and bound; none when all are exact.",
        .flags = {"json", "trace_format", "chain_hashes", "reorder_window", "trace_block_tokens",
                  "trace_timestamp_unit"},
        .run = RunInspect,
    });

}  // namespace kvsim
