// File: sim/serving/router.h
//
// Router: picks the replica for each arriving request (proto ClusterConfig):
// - ROUND_ROBIN: replicas in turn.
// - LEAST_TOKENS: the fewest outstanding tokens (prompt tokens not yet computed plus output tokens not yet
//   generated, over queued and running requests); ties to the lowest index.
// - CACHE_AWARE: among replicas whose outstanding tokens are at most load_cap times the least loaded
//   replica's, the one with the longest run of the request's leading blocks on its GPU; ties to the
//   fewer outstanding tokens, then the lowest index. With a GpuBlockDirectory that the replicas' block
//   managers keep, the run lengths come from it (one lookup per block for all replicas) instead of from
//   probing each replica's cache; the choice is the same.
//
// Example:
//   Router router(config.cluster(), {&scheduler0, &scheduler1});
//   int32_t replica = router.Route(request);
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_ROUTER_H_
#define KVSIM_SIM_SERVING_ROUTER_H_

#include <cstdint>
#include <vector>

#include "proto/config.pb.h"
#include "sim/serving/gpu_block_directory.h"
#include "sim/serving/scheduler.h"
#include "traces/request.h"

namespace kvsim {

class Router {
 public:
  // Does not take ownership. REQUIRES: !replicas.empty(); `directory`, if not null, has one replica per
  // scheduler and is kept by their block managers (BlockManager::ShareGpuDirectory).
  Router(const proto::ClusterConfig& config, std::vector<const Scheduler*> replicas,
         const GpuBlockDirectory* directory = nullptr);

  // The replica index for `request`.
  int32_t Route(const Request& request);

 private:
  const proto::RouterKind kind_;
  const double load_cap_;
  std::vector<const Scheduler*> replicas_;
  const GpuBlockDirectory* const directory_;
  int32_t next_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_ROUTER_H_
