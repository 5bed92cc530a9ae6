// Golden tests of cache replay: LRU, FIFO and Belady hits and prefix hits equal an independent
// brute-force reference (tests/cache_reference.h) on the bundled Mooncake trace at several capacities
// and on adversarial small traces.
#include <random>

#include "gtest/gtest.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_simulator.h"
#include "tests/cache_reference.h"

namespace kvsim {
namespace {

std::vector<CacheRunResult> Replay(const std::vector<Request>& requests, const std::vector<std::string>& kinds,
                                   int64_t capacity) {
  std::vector<CacheRunSpec> specs;
  for (const std::string& kind : kinds) {
    CacheRunSpec spec;
    spec.policy.set_name(kind);
    spec.capacity_blocks = capacity;
    specs.push_back(spec);
  }
  VectorTraceReader reader(requests, {});
  auto results = RunCacheReplays(&reader, specs, {});
  EXPECT_TRUE(results.ok()) << results.status();
  return results.ok() ? *results : std::vector<CacheRunResult>();
}

void ExpectMatchesReference(const std::vector<Request>& requests, int64_t capacity, const std::string& what) {
  const std::vector<std::string> kinds = {"lru", "fifo", "belady"};
  std::vector<CacheRunResult> results = Replay(requests, kinds, capacity);
  ASSERT_EQ(results.size(), kinds.size());
  const ReferenceStream stream = StreamOf(requests);
  for (size_t k = 0; k < kinds.size(); ++k) {
    ReferenceResult ref = ReferenceRun(stream, kinds[k], capacity);
    EXPECT_EQ(results[k].stats.hits, ref.hits) << what << " " << kinds[k] << " @ " << capacity;
    EXPECT_EQ(results[k].stats.prefix_hits, ref.prefix_hits) << what << " " << kinds[k] << " @ " << capacity;
    EXPECT_EQ(results[k].stats.accesses, static_cast<int64_t>(stream.blocks.size()));
  }
}

TEST(CacheGoldenTest, MooncakeAtSeveralCapacities) {
  auto requests = LoadRequests("traces/data/mooncake_synthetic.jsonl");
  ASSERT_TRUE(requests.ok()) << requests.status();
  for (int64_t capacity : {1, 64, 512, 2048}) {
    ExpectMatchesReference(*requests, capacity, "mooncake");
  }
  // The replay is not trivial: LRU at 2048 blocks hits something, and Belady more.
  std::vector<CacheRunResult> r = Replay(*requests, {"lru", "belady"}, 2048);
  EXPECT_GT(r[0].stats.hits, 1000);
  EXPECT_GT(r[1].stats.hits, r[0].stats.hits);
}

Request Req(uint64_t id, std::vector<uint64_t> hashes) {
  Request r;
  r.request_id = id;
  r.block_hashes = std::move(hashes);
  r.block_tokens = 16;
  r.input_tokens = 16 * static_cast<int64_t>(r.block_hashes.size());
  return r;
}

TEST(CacheGoldenTest, AdversarialTraces) {
  // A loop one block larger than the cache: LRU and FIFO never hit; Belady keeps capacity - 1 blocks.
  std::vector<Request> loop;
  for (uint64_t i = 0; i < 50; ++i) loop.push_back(Req(i, {1, 2, 3, 4, 5}));
  ExpectMatchesReference(loop, 4, "loop");
  EXPECT_EQ(Replay(loop, {"lru"}, 4)[0].stats.hits, 0);
  // A block repeated inside a request, and capacity 1.
  std::vector<Request> repeats = {Req(0, {7, 7, 8, 7}), Req(1, {8, 8}), Req(2, {7, 9, 7})};
  for (int64_t c : {1, 2, 3}) ExpectMatchesReference(repeats, c, "repeats");
  // A hot prefix with one-off suffixes (a scan), and prefix trees with shared roots.
  std::mt19937_64 rng(3);
  std::vector<Request> mixed;
  for (uint64_t i = 0; i < 3000; ++i) {
    std::vector<uint64_t> h = {1, 2 + rng() % 3};
    for (int k = 0; k < static_cast<int>(rng() % 6); ++k) h.push_back(i % 7 == 0 ? 1000000 + i * 10 + k : rng() % 400);
    mixed.push_back(Req(i, h));
  }
  for (int64_t c : {2, 17, 100, 399}) ExpectMatchesReference(mixed, c, "mixed");
}

}  // namespace
}  // namespace kvsim
