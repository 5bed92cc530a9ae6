// File: sim/serving/testing/test_util.h
//
// Helpers for the simulator's tests: a resolved config with a fixed GPU capacity and the "test_lru"
// policy, hand-made requests, and lookup of a request's result.
#ifndef KVSIM_SIM_SERVING_TESTING_TEST_UTIL_H_
#define KVSIM_SIM_SERVING_TESTING_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "config/experiment_config.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "traces/request.h"
#include "util/check.h"

namespace kvsim {

// The default config with `gpu_capacity_blocks` blocks per replica, LRU ("test_lru"), resolved.
inline proto::ExperimentConfig TestConfig(int64_t gpu_capacity_blocks, proto::ExperimentConfig overrides = {}) {
  overrides.mutable_cache()->set_gpu_capacity_blocks(gpu_capacity_blocks);
  overrides.mutable_eviction()->set_name("test_lru");
  auto resolved = ResolveExperimentConfig(overrides, "test");
  KVSIM_CHECK(resolved.ok()) << resolved.status();
  return *resolved;
}

// A request; `hashes` empty means the engine assigns fresh ones.
inline Request MakeRequest(uint64_t id, int64_t arrival_ns, int64_t input_tokens, int64_t output_tokens,
                           std::vector<uint64_t> hashes = {}, int32_t block_tokens = 16) {
  Request r;
  r.request_id = id;
  r.arrival_ns = arrival_ns;
  r.input_tokens = input_tokens;
  r.output_tokens = output_tokens;
  if (!hashes.empty()) {
    r.block_hashes = std::move(hashes);
    r.block_tokens = block_tokens;
  }
  return r;
}

inline const proto::RequestResult& ResultOf(const proto::Results& results, uint64_t id) {
  for (const proto::RequestResult& r : results.requests()) {
    if (r.request_id() == id) return r;
  }
  KVSIM_CHECK(false) << "no result for request " << id;
  return results.requests(0);
}

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_TESTING_TEST_UTIL_H_
