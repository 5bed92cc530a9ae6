// File: tools/cache_flags.h
//
// The flag values that `kvsim cache`, `kvsim mrc` and `kvsim sweep` share, turned into library options
// (the flags themselves are defined in tools/common_flags.cc). Errors name the flag.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(CacheReplayOptions options, CacheReplayOptionsFromFlags());
#ifndef KVSIM_TOOLS_CACHE_FLAGS_H_
#define KVSIM_TOOLS_CACHE_FLAGS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "sim/cache/cache_simulator.h"
#include "traces/trace_reader.h"

namespace kvsim {

// --block_tokens (0 = 16), --restore_cost, --threads.
absl::StatusOr<CacheReplayOptions> CacheReplayOptionsFromFlags();

// --policy: each spec parsed and checked (unknown names list the known ones).
absl::StatusOr<std::vector<proto::EvictionPolicyConfig>> PoliciesFromFlag();

// --trace (required) with --trace_format.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceFromFlags();

}  // namespace kvsim

#endif  // KVSIM_TOOLS_CACHE_FLAGS_H_
