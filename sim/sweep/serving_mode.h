// File: sim/sweep/serving_mode.h
//
// The serving sweep mode, "replay": each grid point runs a full serving simulation (sim/serving/replay.h) of the trace
// with the point's config, and keeps its run info and summary (not the per-request records or time
// series, which would make a large sweep's point files huge) in SweepPointResult.replay. Linking the
// //sim/sweep:serving_mode target registers the mode.
//
// Example:
//   kvsim sweep --trace=T --mode=replay --grid="policy=lru,asym capacity_blocks=2000:16000:x2" --out=DIR
#ifndef KVSIM_SIM_SWEEP_SERVING_MODE_H_
#define KVSIM_SIM_SWEEP_SERVING_MODE_H_

#include "absl/status/status.h"
#include "proto/sweep.pb.h"
#include "sim/sweep/sweep.h"

namespace kvsim {

// Runs one point: resolves the point's config (its fields may have changed derived defaults), builds
// its cost model, replays the trace without a timeline, and fills out->mutable_replay() with the run
// info and summary. Errors name the point's trace or config problem.
absl::Status RunServingSweepPoint(const SweepPointContext& context, proto::SweepPointResult* out);

}  // namespace kvsim

#endif  // KVSIM_SIM_SWEEP_SERVING_MODE_H_
