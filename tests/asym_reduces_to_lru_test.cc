// The AsymCache-style policy with uniform restore cost is LRU: replaying real and random traces with
// both gives the same victim at every eviction.
#include <random>

#include "gtest/gtest.h"
#include "policies/eviction_policy.h"
#include "sim/cache/cache_simulator.h"
#include "tests/cache_reference.h"

namespace kvsim {
namespace {

std::vector<BlockId> Victims(const std::string& policy, const std::vector<Request>& requests, int64_t capacity) {
  CacheSimulator sim(*CreateEvictionPolicy(policy), capacity, RestoreCost::kUniform);
  std::vector<BlockId> victims;
  sim.RecordVictims(&victims);
  VectorTraceReader reader(requests, {});
  auto trace = CompileTrace(&reader, {});
  EXPECT_TRUE(trace.ok());
  for (int64_t r = 0; r < trace->num_requests(); ++r) sim.ProcessRequest(trace->View(r));
  return victims;
}

void ExpectSameVictims(const std::vector<Request>& requests, int64_t capacity, const std::string& what) {
  std::vector<BlockId> lru = Victims("lru", requests, capacity);
  std::vector<BlockId> asym = Victims("asym", requests, capacity);
  EXPECT_GT(lru.size(), 0u) << what;
  EXPECT_EQ(asym, lru) << what << " @ " << capacity;
}

TEST(AsymReducesToLruTest, RealTraces) {
  for (const char* path : {"traces/data/mooncake_synthetic.jsonl", "traces/data/azure_code_2023.csv"}) {
    auto requests = LoadRequests(path);
    ASSERT_TRUE(requests.ok()) << requests.status();
    for (int64_t capacity : {64, 1024, 8192}) ExpectSameVictims(*requests, capacity, path);
  }
}

TEST(AsymReducesToLruTest, RandomTraces) {
  std::mt19937_64 rng(5);
  std::vector<Request> requests;
  for (uint64_t i = 0; i < 20000; ++i) {
    Request r;
    r.request_id = i;
    r.block_tokens = 16;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k) r.block_hashes.push_back(rng() % 2000);
    r.input_tokens = 16 * static_cast<int64_t>(r.block_hashes.size());
    requests.push_back(r);
  }
  for (int64_t capacity : {1, 10, 500}) ExpectSameVictims(requests, capacity, "random");
}

}  // namespace
}  // namespace kvsim
