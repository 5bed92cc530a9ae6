// The hand-written LMBench-layout trace (traces/testdata/lmbench_chunks.jsonl: string epoch-ns timestamps,
// variable chunk sizes, repeated and unchained content ids) through detection, cache replay and serving
// replay, against references computed here from the documented semantics
// (traces/importers/chunk_hash_reader.h): ids chained as id'_k = H(id'_{k-1}, id_k), floor(L / n)
// tokens per id with the remainder on the last; cache replay counts blocks; serving replay counts each
// chunk's own tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/cache/cache_simulator.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"
#include "tests/cache_reference.h"
#include "traces/importers/hashed_reader.h"
#include "traces/trace_io.h"

namespace kvsim {
namespace {

const char kTrace[] = "traces/testdata/lmbench_chunks.jsonl";

// The file's records, as written there.
struct Raw {
  int64_t input_tokens;
  std::vector<uint64_t> ids;
  std::vector<int32_t> tokens;  // by the rule, computed by hand
};
const std::vector<Raw>& RawRecords() {
  static const std::vector<Raw> raw = {
      {100, {11, 12, 13}, {33, 33, 34}},         {70, {11, 12}, {35, 35}}, {99, {20, 12, 13}, {33, 33, 33}},
      {130, {11, 12, 11, 12}, {32, 32, 32, 34}}, {31, {11}, {31}},         {150, {11, 12, 13, 14}, {37, 37, 37, 39}},
  };
  return raw;
}

ReferenceStream ReferenceStreamOf(bool chain) {
  std::vector<Request> requests;
  for (const Raw& raw : RawRecords()) {
    Request r;
    uint64_t previous = 0;
    for (uint64_t id : raw.ids) r.block_hashes.push_back(chain ? (previous = ChainBlockHash(previous, id)) : id);
    requests.push_back(r);
  }
  return StreamOf(requests);
}

std::vector<Request> ReadTrace(const TraceOptions& options) {
  auto reader = OpenTrace(kTrace, options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<Request> requests;
  Request r;
  while ((*reader)->Next(&r)) requests.push_back(r);
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  return requests;
}

TEST(ChunkHashTraceTest, ReadsAsDocumented) {
  auto reader = OpenTrace(kTrace, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().format, "chunk_hash");
  EXPECT_EQ((*reader)->info().block_tokens, 34);  // round(580 tokens / 17 ids)
  const std::vector<Request> requests = ReadTrace({});
  ASSERT_EQ(requests.size(), RawRecords().size());
  const std::vector<int64_t> arrivals_ns = {0, 500'000'000, 1'000'000'000, 1'200'000'000, 2'000'000'000, 2'500'000'000};
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].arrival_ns, arrivals_ns[i]);
    EXPECT_EQ(requests[i].input_tokens, RawRecords()[i].input_tokens);
    EXPECT_EQ(requests[i].block_token_counts, RawRecords()[i].tokens) << "record " << i;
  }
}

// Cache replay = the brute-force LRU and FIFO of tests/cache_reference.h over the chained (or plain) ids,
// at every capacity from 1 block to more than the distinct ids.
TEST(ChunkHashTraceTest, CacheReplayHitsEqualTheBruteForceReference) {
  for (bool chain : {true, false}) {
    TraceOptions options;
    options.chain_hashes_given = true;
    options.chain_hashes = chain;
    const ReferenceStream stream = ReferenceStreamOf(chain);
    for (const std::string policy : {"lru", "fifo"}) {
      std::vector<CacheRunSpec> specs;
      for (int64_t capacity = 1; capacity <= 14; ++capacity) {
        CacheRunSpec spec;
        spec.policy.set_name(policy);
        spec.capacity_blocks = capacity;
        specs.push_back(spec);
      }
      auto reader = OpenTrace(kTrace, options);
      ASSERT_TRUE(reader.ok()) << reader.status();
      auto results = RunCacheReplays(reader->get(), specs, CacheReplayOptions{});
      ASSERT_TRUE(results.ok()) << results.status();
      for (const CacheRunResult& result : *results) {
        const ReferenceResult expected = ReferenceRun(stream, policy, result.spec.capacity_blocks);
        EXPECT_EQ(result.stats.accesses, 17);
        EXPECT_EQ(result.stats.hits, expected.hits)
            << policy << " chain " << chain << " @" << result.spec.capacity_blocks;
        EXPECT_EQ(result.stats.prefix_hits, expected.prefix_hits)
            << policy << " chain " << chain << " @" << result.spec.capacity_blocks;
        EXPECT_EQ(result.stats.tokens, 580);  // every chunk counts its own tokens
      }
    }
  }
  // Unbounded, by hand: chained, requests 2, 4, 5, 6 reuse their leading 2, 2, 1, 3 chunks (8 hits, 70 + 64 +
  // 31 + 111 tokens); unchained, the repeated content ids hit too (12 hits).
  for (bool chain : {true, false}) {
    TraceOptions options;
    options.chain_hashes_given = true;
    options.chain_hashes = chain;
    auto reader = OpenTrace(kTrace, options);
    ASSERT_TRUE(reader.ok());
    CacheRunSpec spec;
    spec.policy.set_name("lru");
    spec.capacity_blocks = 1000;
    auto results = RunCacheReplays(reader->get(), {spec}, CacheReplayOptions{});
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_EQ((*results)[0].stats.hits, chain ? 8 : 12);
    if (chain) {
      EXPECT_EQ((*results)[0].stats.hit_tokens, 276);
    }
  }
}

// Serving replay, one sequence at a time and an unbounded GPU: each request reuses the tokens of its
// leading cached chunks, by its own chunk sizes.
TEST(ChunkHashTraceTest, ServingReplayCountsEachChunksTokens) {
  proto::ExperimentConfig serial;
  serial.mutable_scheduler()->set_max_num_seqs(1);
  FakeCostModel cost(
      FakeCosts{.fixed_ns = 1'000'000, .ns_per_new_token = 10'000, .ns_per_context_token = 1, .ns_per_byte = 0});
  auto reader = OpenTrace(kTrace, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  ReplayOptions options;
  options.timeline = false;
  auto output = RunReplay(TestConfig(int64_t{1} << 30, serial), cost, reader->get(), options);
  ASSERT_TRUE(output.ok()) << output.status();
  const std::vector<int64_t> reused = {0, 70, 0, 64, 31, 111};
  const std::vector<int64_t> reused_blocks = {0, 2, 0, 2, 1, 3};
  for (size_t i = 0; i < reused.size(); ++i) {
    const proto::RequestResult& r = ResultOf(output->results, i);
    EXPECT_EQ(r.reused_tokens(), reused[i]) << "request " << i;
    EXPECT_EQ(r.reused_blocks(), reused_blocks[i]) << "request " << i;
    EXPECT_EQ(r.prefix_reused_tokens(), reused[i]) << "request " << i;
    // A fully reused prompt (requests 1 and 4) still computes its last token.
    const int64_t computed = RawRecords()[i].input_tokens - reused[i];
    EXPECT_EQ(r.recomputed_tokens(), computed == 0 ? 1 : computed) << "request " << i;
    EXPECT_EQ(r.output_tokens(), ReadTrace({})[i].output_tokens);
  }

  // A small GPU (6 blocks of the nominal 34 tokens, the longest prompt needs 4 + its output block) with
  // concurrency: every request still finishes, and no block leaks (Run's idle check).
  auto again = OpenTrace(kTrace, {});
  ASSERT_TRUE(again.ok());
  auto small = RunReplay(TestConfig(6), cost, again->get(), options);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->results.requests_size(), 6);
}

}  // namespace
}  // namespace kvsim
