// File: tools/cache_flags.h
//
// The flag values that `kvsim cache`, `kvsim mrc` and `kvsim sweep` share, turned into library options
// (the flags themselves are defined in tools/common_flags.cc). Errors name the flag.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(CacheReplayOptions options, CacheReplayOptionsFromFlags());
#ifndef KVSIM_TOOLS_CACHE_FLAGS_H_
#define KVSIM_TOOLS_CACHE_FLAGS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"
#include "sim/cache/cache_simulator.h"
#include "traces/trace_reader.h"

namespace kvsim {

// --block_tokens (0 = 16), --restore_cost, --threads.
absl::StatusOr<CacheReplayOptions> CacheReplayOptionsFromFlags();

// --policy: each spec parsed and checked (unknown names list the known ones).
absl::StatusOr<std::vector<proto::EvictionPolicyConfig>> PoliciesFromFlag();

// One cache capacity as the user wrote it: a block count ("8000"), bytes with a unit ("40GiB": B, KB, MB,
// GB, TB decimal; KiB, MiB, GiB, TiB binary; any case) or a share of the trace's distinct blocks ("10%").
struct CapacityEntry {
  enum class Kind { kBlocks, kBytes, kPercent };
  Kind kind = Kind::kBlocks;
  int64_t blocks = 0;  // kBlocks: > 0
  double bytes = 0;    // kBytes: > 0
  double percent = 0;  // kPercent: in (0, 100]
  std::string text;    // as written, for messages
};

// Parses a comma list of capacities; ranges LO:HI:xF and LO:HI:+S expand to block counts
// (ExpandGridValues). InvalidArgument naming `flag` and the entry for garbage, a negative or zero value, an
// unknown unit or a share above 100%.
absl::StatusOr<std::vector<CapacityEntry>> ParseCapacityList(absl::string_view values, absl::string_view flag);

// What byte and percent capacities are relative to: the bytes of one KV block (KvBytesPerBlock of
// config/experiment_config.h) and the trace's distinct blocks. A field left 0 is not needed.
struct CapacityBasis {
  double kv_bytes_per_block = 0;
  int64_t distinct_blocks = 0;
};
bool NeedsBytesPerBlock(const std::vector<CapacityEntry>& entries);
bool NeedsDistinctBlocks(const std::vector<CapacityEntry>& entries);

// Each entry in blocks: bytes / kv_bytes_per_block rounded down (refused if that is 0 blocks); a percent of
// the distinct blocks rounded down, at least 1. InvalidArgument naming `flag` and the entry.
// REQUIRES: the basis fields that the entries need are > 0.
absl::StatusOr<std::vector<int64_t>> ResolveCapacities(const std::vector<CapacityEntry>& entries,
                                                       const CapacityBasis& basis, absl::string_view flag);

// The same for any trace and resolved config (`kvsim sweep`'s capacity axis): bytes convert with `config`'s
// KV bytes per block at the trace's block size (options.block_tokens for traces without hashes); a share
// reads the trace once with `options` to count its distinct blocks (a set of them). The trace is opened only if needed,
// and once.
absl::StatusOr<std::vector<int64_t>> CapacitiesForTrace(const std::vector<CapacityEntry>& entries,
                                                        absl::string_view flag, const std::string& trace_path,
                                                        const TraceOptions& trace_options,
                                                        const proto::ExperimentConfig& config,
                                                        const CacheReplayOptions& options);

// --capacity (or its former name --capacity_blocks) in blocks for the trace --trace names: bytes convert with
// the --config's model (the default config if empty) at the trace's block size (--block_tokens for traces
// without hashes); a percent reads the trace once to count its distinct blocks.
absl::StatusOr<std::vector<int64_t>> CapacitiesFromFlag(absl::string_view values, absl::string_view flag,
                                                        const CacheReplayOptions& options);

// Bytes as a count ("1000000") or with a unit ("4GiB", the units above). InvalidArgument naming `flag` for
// garbage or less than 1 byte.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text, absl::string_view flag);

// --memory_limit in bytes: ParseByteSize, or DefaultMemoryLimitBytes() (sim/cache/cache_batches.h: half the
// physical memory) when empty.
absl::StatusOr<int64_t> MemoryLimitFromFlag();

// --trace (required) with --trace_format.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceFromFlags();

}  // namespace kvsim

#endif  // KVSIM_TOOLS_CACHE_FLAGS_H_
