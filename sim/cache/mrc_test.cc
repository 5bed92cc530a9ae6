#include "sim/cache/mrc.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "gtest/gtest.h"
#include "policies/policy_factory.h"
#include "traces/trace_io.h"

namespace kvsim {
namespace {

constexpr char kMooncake[] = "traces/data/mooncake_synthetic.jsonl";

Request Req(uint64_t id, std::vector<uint64_t> hashes) {
  Request r;
  r.request_id = id;
  r.block_hashes = std::move(hashes);
  r.block_tokens = 16;
  r.input_tokens = 16 * static_cast<int64_t>(r.block_hashes.size());
  return r;
}

TEST(MrcTest, HandComputedDistances) {
  // Stream a b c | a b c: the second round has distance 3 each (a, b, c distinct since), so LRU hits
  // 3 of 6 from 3 blocks on and none below.
  VectorTraceReader reader({Req(0, {1, 2, 3}), Req(1, {1, 2, 3})}, {});
  MrcOptions options;
  options.prefix = true;
  auto mrc = ComputeLruMrc(&reader, {}, options);
  ASSERT_TRUE(mrc.ok()) << mrc.status();
  EXPECT_DOUBLE_EQ(mrc->HitRatio(2), 0.0);
  EXPECT_DOUBLE_EQ(mrc->HitRatio(3), 0.5);
  EXPECT_DOUBLE_EQ(mrc->At(3).prefix_hit_ratio, 0.5);  // the second request hits all of its blocks
  ASSERT_EQ(mrc->StepPoints().size(), 1u);
  EXPECT_EQ(mrc->StepPoints()[0].capacity_blocks, 3);
}

// The one-pass curve equals a separate LRU replay at every size, for hits and prefix hits; the trace is
// long enough to make the Fenwick tree compact its times several times.
TEST(MrcTest, MatchesLruReplayAtEverySize) {
  std::mt19937_64 rng(7);
  std::vector<Request> requests;
  for (uint64_t i = 0; i < 30000; ++i) {
    // Prompts share prefixes: a system block, a user block from 50, then 1..4 random blocks.
    std::vector<uint64_t> hashes = {1000000, 2000000 + rng() % 50};
    const int extra = 1 + rng() % 4;
    for (int k = 0; k < extra; ++k) hashes.push_back(rng() % 3000);
    requests.push_back(Req(i, hashes));
  }
  MrcOptions options;
  options.prefix = true;
  VectorTraceReader reader(requests, {});
  auto mrc = ComputeLruMrc(&reader, {}, options);
  ASSERT_TRUE(mrc.ok());
  std::vector<CacheRunSpec> specs;
  for (int64_t c : {1, 2, 3, 10, 57, 300, 1000, 2999, 5000}) {
    CacheRunSpec spec;
    spec.policy.set_name("lru");
    spec.capacity_blocks = c;
    specs.push_back(spec);
  }
  VectorTraceReader reader2(requests, {});
  auto runs = RunCacheReplays(&reader2, specs, {});
  ASSERT_TRUE(runs.ok());
  for (const CacheRunResult& run : *runs) {
    MrcPoint p = mrc->At(run.spec.capacity_blocks);
    EXPECT_DOUBLE_EQ(p.hit_ratio, run.stats.HitRatio()) << run.spec.capacity_blocks;
    EXPECT_DOUBLE_EQ(p.prefix_hit_ratio, run.stats.PrefixHitRatio()) << run.spec.capacity_blocks;
    EXPECT_DOUBLE_EQ(p.token_hit_ratio, run.stats.TokenHitRatio()) << run.spec.capacity_blocks;
  }
}

// Many distinct blocks (about 50K, ids spread over 64 bits): the block table grows many times, also
// between compactions, and the curve still equals separate LRU replays at every tested size.
TEST(MrcTest, MatchesLruReplayWithManyDistinctBlocks) {
  std::mt19937_64 rng(11);
  std::vector<Request> requests;
  uint64_t num_blocks = 1;
  for (uint64_t i = 0; i < 20000; ++i) {
    std::vector<uint64_t> hashes;
    for (int k = 0; k < 8; ++k) {
      // A third are new blocks, the rest reuse earlier ones (recent ones more often).
      const uint64_t rank =
          rng() % 3 == 0 ? num_blocks++ : num_blocks - 1 - (rng() % num_blocks) % (1 + rng() % num_blocks);
      hashes.push_back(rank * 0x9E3779B97F4A7C15ULL);
    }
    requests.push_back(Req(i, hashes));
  }
  ASSERT_GT(num_blocks, 40000u);
  MrcOptions options;
  options.prefix = true;
  VectorTraceReader reader(requests, {});
  auto mrc = ComputeLruMrc(&reader, {}, options);
  ASSERT_TRUE(mrc.ok()) << mrc.status();
  std::vector<CacheRunSpec> specs;
  for (int64_t c : {1, 7, 100, 1000, 4096, 20000, 50000, 70000}) {
    CacheRunSpec spec;
    spec.policy.set_name("lru");
    spec.capacity_blocks = c;
    specs.push_back(spec);
  }
  VectorTraceReader reader2(requests, {});
  auto runs = RunCacheReplays(&reader2, specs, {});
  ASSERT_TRUE(runs.ok());
  for (const CacheRunResult& run : *runs) {
    MrcPoint p = mrc->At(run.spec.capacity_blocks);
    EXPECT_GT(run.stats.hits, 0) << run.spec.capacity_blocks;
    EXPECT_DOUBLE_EQ(p.hit_ratio, run.stats.HitRatio()) << run.spec.capacity_blocks;
    EXPECT_DOUBLE_EQ(p.prefix_hit_ratio, run.stats.PrefixHitRatio()) << run.spec.capacity_blocks;
    EXPECT_DOUBLE_EQ(p.token_hit_ratio, run.stats.TokenHitRatio()) << run.spec.capacity_blocks;
  }
}

TEST(MrcTest, ShardsErrorAgainstTheExactCurveOnMooncake) {
  auto exact_reader = OpenTrace(kMooncake, {});
  ASSERT_TRUE(exact_reader.ok()) << exact_reader.status();
  auto exact = ComputeLruMrc(exact_reader->get(), {}, {});
  ASSERT_TRUE(exact.ok());
  for (double rate : {0.1, 0.01}) {
    auto reader = OpenTrace(kMooncake, {});
    MrcOptions options;
    options.sample_rate = rate;
    auto sampled = ComputeLruMrc(reader->get(), {}, options);
    ASSERT_TRUE(sampled.ok());
    double max_error = 0, sum_error = 0;
    int n = 0;
    for (int64_t c = 64; c <= 131072; c *= 2) {
      const double e = std::fabs(sampled->HitRatio(c) - exact->HitRatio(c));
      max_error = std::max(max_error, e);
      sum_error += e;
      ++n;
    }
    std::printf("SHARDS rate %.2f: max abs error %.4f, mean %.4f over %d sizes (sampled %lld of %lld)\n", rate,
                max_error, sum_error / n, n, static_cast<long long>(sampled->sampled_accesses()),
                static_cast<long long>(exact->sampled_accesses()));
    // SHARDS reports mean absolute errors around 0.01 at R = 0.01 on large traces; this trace has only
    // 122K accesses, so the bound is looser at the lower rate.
    EXPECT_LT(max_error, rate >= 0.1 ? 0.015 : 0.04) << rate;  // measured: 0.0044 and 0.0142
  }
}

TEST(MrcTest, RejectsBadOptions) {
  VectorTraceReader reader({}, {});
  MrcOptions options;
  options.sample_rate = 0;
  EXPECT_EQ(ComputeLruMrc(&reader, {}, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.sample_rate = 0.5;
  options.prefix = true;
  auto status = ComputeLruMrc(&reader, {}, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("prefix"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
