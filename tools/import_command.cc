// `kvsim import IN OUT`: converts a trace in any supported format into the native binary format (or
// kvsim JSONL), streaming. Logic lives in traces/trace_convert.h.
#include <sys/stat.h>

#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_convert.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, out_format, "",
          "format written by 'kvsim import': native, jsonl, or a peer's: vidur (Vidur trace CSV), mooncake "
          "(Mooncake JSONL, 512-token hash ids), oracle_general (libCacheSim binary of the cache replay's "
          "block accesses); empty = by OUT's extension (.jsonl -> jsonl, anything else -> native)");
ABSL_FLAG(bool, zstd, true, "native output: zstd-compress each frame (on by default)");

namespace kvsim {
namespace {

absl::Status RunImport(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 2) return absl::InvalidArgumentError("expected two arguments: IN OUT");
  // Writing OUT would replace IN (the same file under any name) before it was read.
  struct stat in_info, out_info;
  if (stat(args[0].c_str(), &in_info) == 0 && stat(args[1].c_str(), &out_info) == 0 &&
      in_info.st_dev == out_info.st_dev && in_info.st_ino == out_info.st_ino) {
    return absl::InvalidArgumentError(absl::StrCat("OUT ", args[1], " is the input ", args[0], ": name another file"));
  }
  TraceWriterOptions writer_options;
  writer_options.compress = absl::GetFlag(FLAGS_zstd);
  const int32_t block_tokens = absl::GetFlag(FLAGS_block_tokens);
  if (block_tokens < 0) return absl::InvalidArgumentError("--block_tokens must be >= 0 (0 = 16)");
  if (block_tokens > 0) writer_options.fresh_block_tokens = block_tokens;
  KVSIM_ASSIGN_OR_RETURN(TraceOptions options, CheckedTraceOptionsFromFlags());
  KVSIM_ASSIGN_OR_RETURN(ConvertSummary summary,
                         ConvertTrace(args[0], options, args[1], absl::GetFlag(FLAGS_out_format), writer_options));
  out << absl::StrFormat("imported %d requests from %s (%s", summary.num_requests, args[0], summary.source_format);
  if (summary.block_tokens > 0) out << absl::StrFormat(", %d-token blocks", summary.block_tokens);
  out << absl::StrFormat(") into %s\n", args[1]);
  for (const std::string& warning : summary.warnings) out << "warning: " << warning << "\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    import, {
                .name = "import",
                .summary = "convert a trace (Mooncake, Bailian, Azure, BurstGPT, Vidur, ...) to the native format",
                .usage = "kvsim import IN OUT [--trace_format=NAME] [--chain_hashes] "
                         "[--out_format=native|jsonl|vidur|mooncake|oracle_general]",
                .details = "Reads IN in any supported format (detected from its content unless --trace_format names\n"
                           "one), re-sorts out-of-order timestamps within --reorder_window records, and writes OUT as\n"
                           "a native binary trace (zstd frames, summary statistics in the header) or, for a .jsonl\n"
                           "OUT, as kvsim JSONL with every field. OUT appears only if the whole import succeeds.\n"
                           "Peers' formats (traces/peer_export.h): vidur = Vidur's trace CSV (arrived_at s,\n"
                           "num_prefill_tokens, num_decode_tokens); mooncake = Mooncake JSONL with 512-token\n"
                           "hash_ids re-blocked from the trace's (refused where 512 is not a multiple of its block\n"
                           "size); oracle_general = libCacheSim's oracleGeneral binary of cache replay's block\n"
                           "accesses with next-access times (hash-less requests get --block_tokens blocks, 16).\n"
                           "Formats (--trace_format): {trace_formats}.",
                .flags = {"trace_format", "chain_hashes", "reorder_window", "trace_block_tokens",
                          "trace_timestamp_unit", "out_format", "zstd", "block_tokens"},
                .flag_aliases = {{"import_out_format", "out_format"}, {"import_zstd", "zstd"}},
                .run = RunImport,
            });

}  // namespace kvsim
