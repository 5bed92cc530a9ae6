#include "tools/common_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/command.h"
#include "util/parallel.h"

ABSL_FLAG(std::string, config, "",
          "experiment config (text proto); empty = the default (Llama-3.1-8B on H200, prefix reuse, LRU)");
ABSL_FLAG(std::string, trace, "", "request trace file, any supported format (see 'kvsim help import')");
ABSL_FLAG(std::string, trace_format, "", "trace importer name; empty = detect from the content");
ABSL_FLAG(std::string, out, "",
          "output directory (created if missing); for commands that write one file (gen), that file");
ABSL_FLAG(bool, json, false, "print JSON instead of a table");
ABSL_FLAG(uint64_t, seed, 0, "seed of every random choice; recorded in the results");
ABSL_FLAG(bool, chain_hashes, false,
          "hash-per-block/-chunk traces: turn per-block content hashes into prefix ids, "
          "id'_k = H(id'_{k-1}, id_k), so that equal ids mean equal prefixes (default: off for hashed, "
          "on for chunk_hash; --chain_hashes=false keeps chunk_hash ids as content hashes)");
ABSL_FLAG(std::string, trace_timestamp_unit, "",
          "unit of chunk_hash timestamps: ns, us, ms or s; empty = detect from the first record's magnitude");
ABSL_FLAG(int64_t, reorder_window, 4096,
          "records (count) held while importing to re-sort out-of-order timestamps; a record displaced "
          "further is an error");
ABSL_FLAG(int32_t, trace_block_tokens, 0,
          "tokens per hash block for traces that do not state it (hash-per-block JSONL without "
          "block_size); 0 = the format's own");
ABSL_FLAG(int32_t, block_tokens, 0,
          "tokens per block: for traces without block hashes and for capacity figures; 0 = the config's "
          "cache.block_tokens (default 16)");
ABSL_FLAG(std::string, policy, "lru",
          "eviction policies, comma-separated, each NAME[+leaf_first][+ttl] (see 'kvsim help cache')");
ABSL_FLAG(std::string, capacity, "",
          "cache capacities, a comma list: blocks (8000; ranges LO:HI:xFACTOR or LO:HI:+STEP), bytes (40GiB: "
          "B, KB, MB, GB, TB decimal, KiB, MiB, GiB, TiB binary; converted with --config's KV bytes per block at "
          "the trace's block size, rounded down) or a share of the trace's distinct blocks (10%, rounded down, at "
          "least 1)");
ABSL_FLAG(std::string, restore_cost, "auto",
          "cache replay restore cost per block that policies see: auto (position for the cost-aware asym and "
          "gdsf, uniform for the others), uniform (all equal) or position (tokens up to the block's end, the "
          "linear-in-position recompute model)");
ABSL_FLAG(int32_t, threads, 0, "worker threads for parallel runs, at most 1024; 0 = all cores");
ABSL_FLAG(std::string, configs, "",
          "candidate configurations (text proto of kvsim.proto.SelectCandidateSet); empty = the built-in ten plus "
          "fp16");
ABSL_FLAG(std::string, memory_limit, "",
          "cache, mrc, sweep: the memory one pass over the trace may use (bytes: 4GiB, 500MB, 1000000); points that do "
          "not fit together run in several passes; empty = half the physical memory");
ABSL_FLAG(bool, quiet, false, "no progress line on stderr (it is drawn only when stderr is a terminal)");

namespace kvsim {

TraceOptions TraceOptionsFromFlags() {
  TraceOptions options;
  options.format = absl::GetFlag(FLAGS_trace_format);
  options.chain_hashes = absl::GetFlag(FLAGS_chain_hashes);
  options.chain_hashes_given = FlagGiven("chain_hashes");
  options.reorder_window = absl::GetFlag(FLAGS_reorder_window);
  options.block_tokens = absl::GetFlag(FLAGS_trace_block_tokens);
  return options;
}

absl::StatusOr<TraceOptions> CheckedTraceOptionsFromFlags() {
  TraceOptions options = TraceOptionsFromFlags();
  const std::string unit = absl::GetFlag(FLAGS_trace_timestamp_unit);
  if (unit == "ns") {
    options.timestamp_unit_ns = 1;
  } else if (unit == "us") {
    options.timestamp_unit_ns = 1'000;
  } else if (unit == "ms") {
    options.timestamp_unit_ns = 1'000'000;
  } else if (unit == "s") {
    options.timestamp_unit_ns = 1'000'000'000;
  } else if (!unit.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace_timestamp_unit=", unit, ": expected ns, us, ms or s (or empty to detect)"));
  }
  return options;
}

absl::StatusOr<int> ThreadsFromFlag() {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (threads < 0 || threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads=", threads, ": must be in [0, ", kMaxThreads, "] (0 = all cores)"));
  }
  return threads;
}

}  // namespace kvsim
