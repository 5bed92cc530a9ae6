// File: tools/common_flags.h
//
// Flags shared by several sub-commands. absl flags are process-global, so a flag that more than one
// sub-command reads is defined once, here; each sub-command lists the ones it accepts in its Command.
// A flag read by one sub-command only is defined in that sub-command's .cc.
#ifndef KVSIM_TOOLS_COMMON_FLAGS_H_
#define KVSIM_TOOLS_COMMON_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "traces/trace_reader.h"

ABSL_DECLARE_FLAG(std::string, config);                // experiment config (text proto)
ABSL_DECLARE_FLAG(std::string, trace);                 // request trace, any supported format
ABSL_DECLARE_FLAG(std::string, trace_format);          // importer name; empty = detect
ABSL_DECLARE_FLAG(std::string, out);                   // output directory
ABSL_DECLARE_FLAG(bool, json);                         // print JSON instead of a table
ABSL_DECLARE_FLAG(uint64_t, seed);                     // seed of every random choice
ABSL_DECLARE_FLAG(bool, chain_hashes);                 // hash-per-block traces: chain content hashes
ABSL_DECLARE_FLAG(int64_t, reorder_window);            // records re-sorted by arrival while importing
ABSL_DECLARE_FLAG(int32_t, trace_block_tokens);        // tokens per hash block where the trace omits it
ABSL_DECLARE_FLAG(std::string, trace_timestamp_unit);  // chunk_hash timestamps: ns, us, ms, s; "" = detect

ABSL_DECLARE_FLAG(int32_t, block_tokens);      // tokens per block for hash-less traces; 0 = config's
ABSL_DECLARE_FLAG(std::string, policy);        // eviction policy specs, comma-separated
ABSL_DECLARE_FLAG(std::string, capacity);      // capacities: blocks, bytes or % (tools/cache_flags.h)
ABSL_DECLARE_FLAG(std::string, restore_cost);  // cache replay restore cost: auto | uniform | position
ABSL_DECLARE_FLAG(int32_t, threads);           // worker threads; 0 = all cores
ABSL_DECLARE_FLAG(std::string, memory_limit);  // cache/mrc: memory budget of one pass (tools/cache_flags.h)
ABSL_DECLARE_FLAG(bool, quiet);                // no progress line (util/progress.h)
ABSL_DECLARE_FLAG(std::string, configs);       // per-prompt selection candidates (text proto); "" = default

namespace kvsim {

// TraceOptions from --trace_format, --chain_hashes, --reorder_window and --trace_block_tokens.
TraceOptions TraceOptionsFromFlags();

// The same plus --trace_timestamp_unit; InvalidArgument for an unknown unit.
absl::StatusOr<TraceOptions> CheckedTraceOptionsFromFlags();

// --threads, checked: in [0, kMaxThreads] (util/parallel.h), 0 = all cores.
absl::StatusOr<int> ThreadsFromFlag();

}  // namespace kvsim

#endif  // KVSIM_TOOLS_COMMON_FLAGS_H_
