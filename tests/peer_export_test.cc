// Exports of the bundled traces to the peers' formats through `kvsim import`'s conversion
// (traces/trace_convert.h): Vidur CSV and Mooncake JSONL re-import losslessly for the fields each format
// has, and an LRU cache written independently over the oracleGeneral records (libCacheSim's published
// layout) hits exactly as kvsim's cache replay does on the original trace.
#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "sim/cache/cache_simulator.h"
#include "traces/test_util.h"
#include "traces/trace_convert.h"
#include "traces/trace_io.h"
#include "util/file.h"

namespace kvsim {
namespace {

// A textbook LRU over object ids, one unit per object.
int64_t LruHits(const std::vector<OracleRecord>& records, int64_t capacity) {
  std::list<uint64_t> order;  // most recent first
  absl::flat_hash_map<uint64_t, std::list<uint64_t>::iterator> where;
  int64_t hits = 0;
  for (const OracleRecord& r : records) {
    auto it = where.find(r.obj_id);
    if (it != where.end()) {
      ++hits;
      order.erase(it->second);
    } else if (static_cast<int64_t>(order.size()) == capacity) {
      where.erase(order.back());
      order.pop_back();
    }
    order.push_front(r.obj_id);
    where[r.obj_id] = order.begin();
  }
  return hits;
}

class OracleGeneralExportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleGeneralExportTest, IndependentLruOverTheRecordsHitsAsCacheReplayDoes) {
  const std::string source = DataPath(GetParam());
  const std::string out = ::testing::TempDir() + "/" + GetParam() + ".oracleGeneral";
  auto summary = ConvertTrace(source, {}, out, "oracle_general", {});
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string bytes = *ReadFile(out);
  ASSERT_EQ(bytes.size() % 24, 0u);
  const std::vector<OracleRecord> records = ReadOracleGeneral(bytes);

  // next_access_vtime: the 1-based index of the next record with the same id, -1 after the last one.
  absl::flat_hash_map<uint64_t, int64_t> later;
  for (int64_t i = static_cast<int64_t>(records.size()) - 1; i >= 0; --i) {
    auto it = later.find(records[i].obj_id);
    ASSERT_EQ(records[i].next_access_vtime, it == later.end() ? -1 : it->second) << "record " << i;
    later[records[i].obj_id] = i + 1;
  }

  auto reader = OpenTrace(source, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  CacheReplayOptions options;  // block_tokens 16 for hash-less traces, as the export's default
  proto::EvictionPolicyConfig lru;
  lru.set_name("lru");
  auto results = RunCacheReplays(reader->get(), {{lru, 1000}, {lru, 8192}}, options);
  ASSERT_TRUE(results.ok()) << results.status();
  for (const CacheRunResult& result : *results) {
    EXPECT_EQ(result.stats.accesses, static_cast<int64_t>(records.size()));
    EXPECT_EQ(result.stats.hits, LruHits(records, result.spec.capacity_blocks)) << result.spec.capacity_blocks;
  }
}

INSTANTIATE_TEST_SUITE_P(BundledTraces, OracleGeneralExportTest,
                         ::testing::Values("mooncake_synthetic.jsonl", "azure_code_2023.csv"));

TEST(PeerExportTest, MooncakeTraceReimportsUnchangedFromMooncakeJsonl) {
  const std::string source = DataPath("mooncake_synthetic.jsonl");
  const std::string out = ::testing::TempDir() + "/mooncake_again.jsonl";
  ASSERT_TRUE(ConvertTrace(source, {}, out, "mooncake", {}).ok());
  auto original = ReadAll(source, {});
  auto back = ReadAll(out, {});
  ASSERT_TRUE(original.ok() && back.ok());
  ASSERT_EQ(back->size(), original->size());
  for (size_t i = 0; i < back->size(); ++i) {
    ASSERT_EQ(RequestDifference((*back)[i], (*original)[i]), "") << "request " << i;
  }
}

TEST(PeerExportTest, AzureTraceReimportsFromVidurCsvWithEveryArrivalAndLength) {
  const std::string source = DataPath("azure_code_2023.csv");
  const std::string out = ::testing::TempDir() + "/azure.vidur.csv";
  ASSERT_TRUE(ConvertTrace(source, {}, out, "vidur", {}).ok());
  auto original = ReadAll(source, {});
  auto back = ReadAll(out, {});
  ASSERT_TRUE(original.ok() && back.ok());
  ASSERT_EQ(back->size(), original->size());
  for (size_t i = 0; i < back->size(); ++i) {
    ASSERT_EQ((*back)[i].arrival_ns, (*original)[i].arrival_ns) << i;
    ASSERT_EQ((*back)[i].input_tokens, (*original)[i].input_tokens) << i;
    ASSERT_EQ((*back)[i].output_tokens, (*original)[i].output_tokens) << i;
  }
}

}  // namespace
}  // namespace kvsim
