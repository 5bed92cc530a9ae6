// Belady (MIN with bypass) is an upper bound on hits: no registered policy, alone or under the
// leaf-first and TTL wrappers, beats it on any test trace (the Mooncake trace and adversarial ones).
#include <random>

#include "gtest/gtest.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_simulator.h"
#include "tests/cache_reference.h"

namespace kvsim {
namespace {

Request Req(uint64_t id, std::vector<uint64_t> hashes, int64_t session = -1) {
  Request r;
  r.request_id = id;
  r.arrival_ns = static_cast<int64_t>(id) * 1000;
  r.session_id = session;
  r.block_hashes = std::move(hashes);
  r.block_tokens = 16;
  r.input_tokens = 16 * static_cast<int64_t>(r.block_hashes.size());
  if (session >= 0) r.tool_calls.push_back({"search", 5000});
  return r;
}

void ExpectBeladyBound(const std::vector<Request>& requests, int64_t capacity, const std::string& what) {
  std::vector<CacheRunSpec> specs;
  CacheRunSpec belady;
  belady.policy.set_name("belady");
  belady.capacity_blocks = capacity;
  specs.push_back(belady);
  for (const std::string& name : EvictionPolicyNames()) {
    for (const char* modifier : {"", "+leaf_first", "+ttl"}) {
      CacheRunSpec spec;
      spec.policy = *ParsePolicySpec(name + modifier);
      spec.capacity_blocks = capacity;
      specs.push_back(spec);
    }
  }
  VectorTraceReader reader(requests, {});
  auto results = RunCacheReplays(&reader, specs, {});
  ASSERT_TRUE(results.ok()) << results.status();
  const int64_t bound = (*results)[0].stats.hits;
  for (const CacheRunResult& r : *results) {
    EXPECT_LE(r.stats.hits, bound) << what << ": " << r.policy_label << " @ " << capacity;
  }
}

TEST(BeladyBoundTest, Mooncake) {
  auto requests = LoadRequests("traces/data/mooncake_synthetic.jsonl");
  ASSERT_TRUE(requests.ok()) << requests.status();
  for (int64_t capacity : {256, 4096}) ExpectBeladyBound(*requests, capacity, "mooncake");
}

TEST(BeladyBoundTest, AdversarialAndRandom) {
  std::vector<Request> loop;
  for (uint64_t i = 0; i < 40; ++i) loop.push_back(Req(i, {1, 2, 3, 4, 5}));
  ExpectBeladyBound(loop, 4, "loop");
  std::mt19937_64 rng(11);
  std::vector<Request> sessions;
  for (uint64_t i = 0; i < 2000; ++i) {
    std::vector<uint64_t> h = {rng() % 5};
    for (int k = 0; k < 1 + static_cast<int>(rng() % 5); ++k) h.push_back(rng() % 300);
    sessions.push_back(Req(i, h, static_cast<int64_t>(rng() % 20)));
  }
  for (int64_t capacity : {1, 8, 64, 250}) ExpectBeladyBound(sessions, capacity, "sessions");
}

}  // namespace
}  // namespace kvsim
