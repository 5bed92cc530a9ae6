#include "sim/sweep/sweep.h"

#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "policies/policy_factory.h"
#include "sim/cache/cache_batches.h"
#include "traces/trace_io.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

constexpr char kMooncake[] = "traces/data/mooncake_synthetic.jsonl";

std::string TempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(root != nullptr ? root : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(SweepGridTest, ExpandsListsAndRanges) {
  auto v = ExpandGridValues("1000:64000:x2");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::vector<std::string>({"1000", "2000", "4000", "8000", "16000", "32000", "64000"}));
  EXPECT_EQ(*ExpandGridValues("1:10:+3,lru"), std::vector<std::string>({"1", "4", "7", "10", "lru"}));
  EXPECT_EQ(ExpandGridValues("8:1:x2").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandGridValues("1:8:x1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandGridValues("a,,b").status().code(), absl::StatusCode::kInvalidArgument);
  auto ints = ParsePositiveIntList("4,0", "--sizes");
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ints.status().message().find("--sizes"), absl::string_view::npos);
}

TEST(SweepGridTest, PointsInFixedOrderLastAxisFastest) {
  auto axes = ParseGrid("policy=lru,asym  capacity_blocks=1:4:x2");
  ASSERT_TRUE(axes.ok());
  ASSERT_EQ(NumGridPoints(*axes), 6);
  auto p4 = GridPoint(*axes, 4);  // policy index 1, capacity index 1
  EXPECT_EQ(p4[0], std::make_pair(std::string("policy"), std::string("asym")));
  EXPECT_EQ(p4[1], std::make_pair(std::string("capacity_blocks"), std::string("2")));
  EXPECT_EQ(ParseGrid("policy=lru policy=fifo").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGrid("policy").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepGridTest, AppliesConfigFieldsByPath) {
  proto::ExperimentConfig config;
  auto mode = ApplyGridPoint({{"policy", "s3fifo+leaf_first"},
                              {"eviction.s3fifo.small_queue_ratio", "0.2"},
                              {"cache.reuse_mode", "REUSE_MODE_SEGMENT"},
                              {"capacity_blocks", "64"},
                              {"mode", "cache"}},
                             &config);
  ASSERT_TRUE(mode.ok()) << mode.status();
  EXPECT_EQ(*mode, "cache");
  EXPECT_EQ(config.eviction().name(), "s3fifo");
  EXPECT_TRUE(config.eviction().leaf_first());
  EXPECT_DOUBLE_EQ(config.eviction().s3fifo().small_queue_ratio(), 0.2);
  EXPECT_EQ(config.cache().reuse_mode(), proto::REUSE_MODE_SEGMENT);
  EXPECT_EQ(config.cache().gpu_capacity_blocks(), 64);
  auto bad = ApplyGridPoint({{"cache.no_such_field", "1"}}, &config);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("no_such_field"), absl::string_view::npos);
  auto bad_value = ApplyGridPoint({{"cache.block_tokens", "many"}}, &config);
  EXPECT_EQ(bad_value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_value.status().message().find("many"), absl::string_view::npos);
  EXPECT_EQ(ParseShard("2/2").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseShard("1/3"), std::make_pair(1, 3));
}

class SweepRunTest : public ::testing::Test {
 protected:
  SweepRunTest() {
    base_.mutable_workload()->set_max_requests(400);
    axes_ = *ParseGrid("policy=lru,fifo,belady capacity_blocks=64,1024");
  }
  SweepOptions Options(const std::string& dir, int shard, int shards, int threads) {
    SweepOptions o;
    o.out_dir = dir;
    o.trace_path = kMooncake;
    o.shard_index = shard;
    o.num_shards = shards;
    o.num_threads = threads;
    return o;
  }
  proto::ExperimentConfig base_;
  std::vector<GridAxis> axes_;
};

TEST_F(SweepRunTest, ShardsMergeToTheFullRunAndResume) {
  const std::string full = TempDir("full"), a = TempDir("a"), b = TempDir("b");
  auto s = RunSweep(axes_, base_, Options(full, 0, 1, 2));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->points_run, 6);
  ASSERT_TRUE(RunSweep(axes_, base_, Options(a, 0, 2, 1)).ok());
  auto sb = RunSweep(axes_, base_, Options(b, 1, 2, 1));
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->points_run, 3);
  auto merged_full = MergeSweep({full}, "");
  auto merged_shards = MergeSweep({a, b}, TempDir("merged"));
  ASSERT_TRUE(merged_full.ok() && merged_shards.ok());
  EXPECT_EQ(merged_full->ToCsv(), merged_shards->ToCsv());
  ASSERT_EQ(merged_full->rows().size(), 6u);
  // The shard's own table is the same bytes as the merged rows of that shard (header + 3 rows).
  auto shard_csv = ReadFile(b + "/shard-1-of-2.csv");
  ASSERT_TRUE(shard_csv.ok());
  EXPECT_NE(shard_csv->find("fifo"), std::string::npos);
  // Grid coordinates are prefixed, so no column name repeats (policy and capacity_blocks are also result
  // columns); the JSON holds every column of every row once.
  const std::string header = shard_csv->substr(0, shard_csv->find('\n'));
  EXPECT_EQ(header.rfind("axis.policy,axis.capacity_blocks,point,mode,policy,capacity_blocks,", 0), 0u) << header;
  auto json = ReadFile(b + "/shard-1-of-2.json");
  ASSERT_TRUE(json.ok());
  const Json rows = Json::parse(*json);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].size(), merged_full->columns().size());
  // Shard 1 of 2 holds points 1, 3, 5: (lru, 1024), (fifo, 1024), (belady, 1024).
  EXPECT_EQ(rows[1]["axis.policy"], "fifo");
  EXPECT_EQ(rows[1]["policy"], "fifo");
  EXPECT_EQ(rows[1]["axis.capacity_blocks"], "1024");  // a coordinate as written in the grid
  EXPECT_EQ(rows[1]["capacity_blocks"], 1024);         // a result column: a number
  EXPECT_TRUE(rows[0]["ttft_p50_ms"].is_null());       // cache points have no serving metrics: null, not ""

  // Point 3 = (fifo, 1024) equals a direct replay.
  CacheRunSpec spec;
  spec.policy = *ParsePolicySpec("fifo");
  spec.capacity_blocks = 1024;
  auto reader = OpenTrace(kMooncake, {});
  CacheReplayOptions options;
  options.max_requests = 400;
  auto direct = RunCacheReplays(reader->get(), {spec}, options);
  ASSERT_TRUE(direct.ok());
  const std::vector<std::string>& row = merged_full->rows()[3];
  EXPECT_EQ(row[0], "fifo");
  EXPECT_EQ(row[1], "1024");
  const auto& columns = merged_full->columns();
  const size_t hits = std::find(columns.begin(), columns.end(), "hits") - columns.begin();
  EXPECT_EQ(row[hits], std::to_string((*direct)[0].stats.hits));

  // Rerunning a shard skips its finished points.
  auto again = RunSweep(axes_, base_, Options(b, 1, 2, 2));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->points_run, 0);
  EXPECT_EQ(again->points_skipped, 3);
  // A different grid in the same directory is refused.
  auto other = RunSweep(*ParseGrid("policy=sieve,fifo,belady capacity_blocks=64,1024"), base_, Options(b, 1, 2, 1));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
}

// The first `lines` records of the bundled trace, as another trace file.
std::string TraceHead(const std::string& name, int lines) {
  auto text = ReadFile(kMooncake);
  EXPECT_TRUE(text.ok());
  size_t end = 0;
  for (int i = 0; i < lines; ++i) end = text->find('\n', end) + 1;
  const std::string path = TempDir(name) + ".jsonl";
  EXPECT_TRUE(WriteFileAtomically(path, text->substr(0, end)).ok());
  return path;
}

TEST_F(SweepRunTest, ChangedTraceOrConfigRerunsInsteadOfReusingStalePoints) {
  const std::string dir = TempDir("stale");
  const std::vector<GridAxis> axes = *ParseGrid("policy=lru capacity_blocks=64,1024");
  ASSERT_TRUE(RunSweep(axes, base_, Options(dir, 0, 1, 1)).ok());
  auto before = MergeSweep({dir}, "");
  ASSERT_TRUE(before.ok()) << before.status();

  // Another --trace into the same folder: every point reruns on it.
  SweepOptions other_trace = Options(dir, 0, 1, 1);
  other_trace.trace_path = TraceHead("head100", 100);
  auto rerun = RunSweep(axes, base_, other_trace);
  ASSERT_TRUE(rerun.ok()) << rerun.status();
  EXPECT_EQ(rerun->points_run, 2);
  EXPECT_EQ(rerun->points_stale, 2);
  EXPECT_EQ(rerun->points_skipped, 0);
  auto after = MergeSweep({dir}, "");
  ASSERT_TRUE(after.ok()) << after.status();
  const size_t requests =
      std::find(after->columns().begin(), after->columns().end(), "requests") - after->columns().begin();
  EXPECT_EQ(before->rows()[0][requests], "400");
  EXPECT_EQ(after->rows()[0][requests], "100");  // the new trace's requests, not the old results

  // The same inputs again: nothing reruns.
  auto same = RunSweep(axes, base_, other_trace);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->points_run, 0);
  EXPECT_EQ(same->points_skipped, 2);

  // Another --config (fewer requests): every point reruns.
  proto::ExperimentConfig fewer = base_;
  fewer.mutable_workload()->set_max_requests(50);
  auto changed = RunSweep(axes, fewer, other_trace);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed->points_run, 2);
  EXPECT_EQ(changed->points_stale, 2);
  auto last = MergeSweep({dir}, "");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->rows()[1][requests], "50");
}

TEST_F(SweepRunTest, MergeFailsOnMissingOrInconsistentPoints) {
  const std::string a = TempDir("merge_a"), b = TempDir("merge_b");
  ASSERT_TRUE(RunSweep(axes_, base_, Options(a, 0, 2, 1)).ok());
  auto half = MergeSweep({a}, "");
  EXPECT_EQ(half.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(half.status().message().find("3 of 6 points missing"), absl::string_view::npos) << half.status();
  EXPECT_NE(half.status().message().find("first missing: 1, 3, 5"), absl::string_view::npos) << half.status();
  // The other shard run on another trace: the halves do not make one sweep.
  SweepOptions other = Options(b, 1, 2, 1);
  other.trace_path = TraceHead("head200", 200);
  ASSERT_TRUE(RunSweep(axes_, base_, other).ok());
  auto mixed = MergeSweep({a, b}, "");
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(mixed.status().message().find("another trace"), absl::string_view::npos) << mixed.status();
  EXPECT_EQ(MergeSweep({TempDir("empty")}, "").status().code(), absl::StatusCode::kNotFound);
}

// Hits of one point replayed alone, on a fresh reader (the reference for the batched passes).
int64_t DirectHits(const std::string& policy, int64_t capacity_blocks, int32_t block_tokens) {
  CacheRunSpec spec;
  spec.policy = *ParsePolicySpec(policy);
  spec.capacity_blocks = capacity_blocks;
  auto reader = OpenTrace(kMooncake, {});
  EXPECT_TRUE(reader.ok());
  CacheReplayOptions options;
  options.max_requests = 400;
  options.block_tokens = block_tokens;
  auto direct = RunCacheReplays(reader->get(), {spec}, options);
  EXPECT_TRUE(direct.ok()) << direct.status();
  return direct.ok() ? (*direct)[0].stats.hits : -1;
}

TEST_F(SweepRunTest, CachePointsRunInPassesWithinTheMemoryLimit) {
  // Two traces (block_tokens 16 and 64 hash the prompts differently), with and without Belady (whose
  // points run over the compiled trace), under the default limit and under one that holds a pass and two of
  // the largest streamed points, so the points of a trace split into several passes.
  CacheRunSpec largest;
  largest.policy = *ParsePolicySpec("s3fifo");
  largest.capacity_blocks = 1024;
  const int64_t two_points = kPassOverheadBytes + 2 * EstimatePointBytes(largest, -1, false);
  for (const std::string policies : {"lru,s3fifo,sieve,belady", "lru,s3fifo,sieve"}) {
    for (int64_t limit : {int64_t{0}, two_points}) {
      if (limit > 0 && policies.find("belady") != std::string::npos) continue;  // the compiled trace needs more
      const std::vector<GridAxis> axes =
          *ParseGrid(absl::StrCat("block_tokens=16,64 policy=", policies, " capacity_blocks=64,1024"));
      SweepOptions options = Options(TempDir("passes"), 0, 1, 2);
      options.memory_limit_bytes = limit;
      auto s = RunSweep(axes, base_, options);
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(s->points_run, NumGridPoints(axes));
      auto table = MergeSweep({options.out_dir}, "");
      ASSERT_TRUE(table.ok()) << table.status();
      const auto& columns = table->columns();
      const size_t hits = std::find(columns.begin(), columns.end(), "hits") - columns.begin();
      for (const std::vector<std::string>& row : table->rows()) {
        int32_t block_tokens = 0;
        int64_t capacity = 0;
        ASSERT_TRUE(absl::SimpleAtoi(row[0], &block_tokens) && absl::SimpleAtoi(row[2], &capacity));
        EXPECT_EQ(row[hits], std::to_string(DirectHits(row[1], capacity, block_tokens)))
            << "limit " << limit << ": " << row[0] << " " << row[1] << " " << row[2];
      }
    }
  }
  // A limit below one pass's overhead: refused naming the point and the limit, and no point file written.
  SweepOptions tiny = Options(TempDir("tiny"), 0, 1, 1);
  tiny.memory_limit_bytes = 1 << 20;
  auto refused = RunSweep(*ParseGrid("policy=lru capacity_blocks=64"), base_, tiny);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("point 0: run lru @ 64 needs an estimated"), absl::string_view::npos)
      << refused.status();
  // Several points of one trace: the message names them all (the run it names is one of them).
  auto refused_pass = RunSweep(*ParseGrid("policy=lru,fifo capacity_blocks=64"), base_, tiny);
  EXPECT_NE(refused_pass.status().message().find("points 0, 1 (one cache replay of the trace): run "),
            absl::string_view::npos)
      << refused_pass.status();
  EXPECT_NE(refused.status().message().find("--memory_limit=1.0 MiB"), absl::string_view::npos) << refused.status();
  EXPECT_FALSE(std::filesystem::exists(tiny.out_dir + "/points/point-00000000.pb"));
}

TEST_F(SweepRunTest, ABadPointFailsAloneNotThePassItWouldJoin) {
  // Point 1 (a small-queue ratio out of range) fails; point 0 runs and is kept.
  SweepOptions options = Options(TempDir("bad_point"), 0, 1, 1);
  auto s = RunSweep(*ParseGrid("policy=s3fifo eviction.s3fifo.small_queue_ratio=0.1,2 capacity_blocks=64"), base_,
                    options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("point 1: eviction.s3fifo.small_queue_ratio must be in (0, 1)"),
            absl::string_view::npos)
      << s.status();
  EXPECT_TRUE(std::filesystem::exists(options.out_dir + "/points/point-00000000.pb"));
  EXPECT_FALSE(std::filesystem::exists(options.out_dir + "/points/point-00000001.pb"));
}

TEST_F(SweepRunTest, ReplayModeNeedsTheSimulator) {
  auto s = RunSweep(*ParseGrid("mode=replay capacity_blocks=64"), base_, Options(TempDir("replay"), 0, 1, 1));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("replay"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
