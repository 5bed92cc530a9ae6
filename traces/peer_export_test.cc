#include "traces/peer_export.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

Request MakeRequest(uint64_t id, int64_t arrival_ns, int64_t input, int64_t output, int32_t block_tokens,
                    std::vector<uint64_t> hashes) {
  Request r;
  r.request_id = id;
  r.arrival_ns = arrival_ns;
  r.input_tokens = input;
  r.output_tokens = output;
  r.block_tokens = block_tokens;
  r.block_hashes = std::move(hashes);
  return r;
}

std::vector<uint64_t> Range(uint64_t begin, uint64_t end) {
  std::vector<uint64_t> ids;
  for (uint64_t i = begin; i < end; ++i) ids.push_back(i);
  return ids;
}

absl::Status WriteAll(const std::string& path, const std::string& format, int32_t block_tokens,
                      const std::vector<Request>& requests) {
  TraceWriterOptions options;
  options.block_tokens = block_tokens;
  absl::StatusOr<std::unique_ptr<TraceWriter>> writer = OpenTraceWriter(path, format, options);
  if (!writer.ok()) return writer.status();
  for (const Request& r : requests) {
    absl::Status status = (*writer)->Write(r);
    if (!status.ok()) return status;
  }
  return (*writer)->Close();
}

TEST(VidurExportTest, RoundTripsArrivalsToTheNanosecondAndLengths) {
  const std::string path = ::testing::TempDir() + "/vidur.csv";
  const std::vector<Request> requests = {MakeRequest(0, 0, 100, 5, 0, {}), MakeRequest(1, 1'500'000'123, 7, 0, 0, {}),
                                         MakeRequest(2, 61'000'000'001, 4096, 300, 0, {})};
  ASSERT_TRUE(WriteAll(path, "vidur", 0, requests).ok());
  EXPECT_EQ(*ReadFile(path),
            "arrived_at,num_prefill_tokens,num_decode_tokens\n"
            "0.000000000,100,5\n"
            "1.500000123,7,0\n"
            "61.000000001,4096,300\n");
  auto back = ReadAll(path, {});  // detected as vidur
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(RequestDifference((*back)[i], requests[i]), "") << i;
  }
}

TEST(MooncakeExportTest, KeepsThe512TokenIdsOfA512TokenTrace) {
  const std::string path = ::testing::TempDir() + "/m512.jsonl";
  const std::vector<Request> requests = {MakeRequest(0, 0, 1000, 5, 512, {11, 12}),
                                         MakeRequest(1, 3'000'000, 512, 2, 512, {11}),
                                         MakeRequest(2, 7'000'000, 1025, 1, 512, {11, 12, 99})};
  ASSERT_TRUE(WriteAll(path, "mooncake", 512, requests).ok());
  auto back = ReadAll(path, {.format = "mooncake"});
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(RequestDifference((*back)[i], requests[i]), "") << i;
  }
}

// Each line is one JSON object with Mooncake's four keys in Mooncake's order (checked parsed, not as
// text): ms timestamps (3'000'000 ns is 3 ms), 512-token ids (1000 tokens take two).
TEST(MooncakeExportTest, WritesOneJsonObjectALineInMooncakesKeyOrder) {
  const std::string path = ::testing::TempDir() + "/mlines.jsonl";
  ASSERT_TRUE(WriteAll(path, "mooncake", 512,
                       {MakeRequest(0, 0, 1000, 5, 512, {11, 12}), MakeRequest(1, 3'000'000, 512, 2, 512, {11})})
                  .ok());
  const std::vector<std::string> lines = absl::StrSplit(*ReadFile(path), '\n');
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(Json::parse(lines[0]),
            Json::parse(R"({"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [11, 12]})"));
  EXPECT_EQ(Json::parse(lines[1]),
            Json::parse(R"({"timestamp": 3, "input_length": 512, "output_length": 2, "hash_ids": [11]})"));
}

TEST(MooncakeExportTest, ReblocksSixteenTokenIdsByTheBlocksEach512TokenBlockCovers) {
  const std::string path = ::testing::TempDir() + "/m16.jsonl";
  std::vector<uint64_t> b = Range(0, 32);
  for (uint64_t id = 100; id < 106; ++id) b.push_back(id);
  std::vector<uint64_t> c = Range(0, 33);
  const std::vector<Request> requests = {
      MakeRequest(0, 0, 1024, 5, 16, Range(0, 64)),  // two full 512-token blocks
      MakeRequest(1, 1'000'000, 600, 5, 16, b),      // shares the first, not the second
      MakeRequest(2, 2'000'000, 520, 5, 16, c),      // its second block holds 8 tokens: not A's second
      MakeRequest(3, 3'000'000, 1024, 5, 16, Range(0, 64)),
  };
  ASSERT_TRUE(WriteAll(path, "mooncake", 16, requests).ok());
  auto back = ReadAll(path, {});  // detected as mooncake
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 4u);
  EXPECT_EQ((*back)[0].block_hashes, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ((*back)[1].block_hashes, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ((*back)[2].block_hashes, (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ((*back)[3].block_hashes, (std::vector<uint64_t>{0, 1}));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*back)[i].arrival_ns, requests[i].arrival_ns);
    EXPECT_EQ((*back)[i].input_tokens, requests[i].input_tokens);
    EXPECT_EQ((*back)[i].output_tokens, requests[i].output_tokens);
    EXPECT_EQ((*back)[i].block_tokens, 512);
  }
}

TEST(MooncakeExportTest, RefusesBlockSizesThatDoNotDivide512WithTheReason) {
  for (int32_t block_tokens : {48, 1024}) {
    TraceWriterOptions options;
    options.block_tokens = block_tokens;
    auto writer = OpenTraceWriter(::testing::TempDir() + "/refused.jsonl", "mooncake", options);
    ASSERT_FALSE(writer.ok()) << block_tokens;
    EXPECT_EQ(writer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(writer.status().message().find(absl::StrCat(block_tokens, "-token blocks")), std::string::npos)
        << writer.status();
    EXPECT_NE(writer.status().message().find("multiple"), std::string::npos) << writer.status();
  }
}

TEST(MooncakeExportTest, RequestsWithoutHashesGetBlocksSharedWithNothing) {
  const std::string path = ::testing::TempDir() + "/mnone.jsonl";
  ASSERT_TRUE(WriteAll(path, "mooncake", 0, {MakeRequest(0, 0, 1000, 5, 0, {}), MakeRequest(1, 0, 10, 5, 0, {})}).ok());
  auto back = ReadAll(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0].block_hashes, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ((*back)[1].block_hashes, (std::vector<uint64_t>{2}));
}

TEST(OracleGeneralExportTest, RecordsMatchThePublishedLayout) {
  const std::string path = ::testing::TempDir() + "/og.bin";
  // Accesses in cache-replay order: 5, 6 (t = 0 s), 5, 7 (t = 2.5 s).
  ASSERT_TRUE(WriteAll(path, "oracle_general", 16,
                       {MakeRequest(0, 0, 32, 1, 16, {5, 6}), MakeRequest(1, 2'500'000'000, 20, 1, 16, {5, 7})})
                  .ok());
  const std::string bytes = *ReadFile(path);
  ASSERT_EQ(bytes.size(), 4 * 24u);  // 24 bytes per record, packed
  // The first record byte by byte: clock 0, id 5, size 16, next access = the 3rd record (1-based).
  const std::string first(
      "\x00\x00\x00\x00"
      "\x05\x00\x00\x00\x00\x00\x00\x00"
      "\x10\x00\x00\x00"
      "\x03\x00\x00\x00\x00\x00\x00\x00",
      24);
  EXPECT_EQ(bytes.substr(0, 24), first);
  const std::vector<OracleRecord> records = ReadOracleGeneral(bytes);
  ASSERT_EQ(records.size(), 4u);
  const std::vector<uint64_t> ids = {5, 6, 5, 7};
  const std::vector<uint32_t> clocks = {0, 0, 2, 2};
  const std::vector<int64_t> next = {3, -1, -1, -1};  // the last access of each block: -1
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(records[i].obj_id, ids[i]) << i;
    EXPECT_EQ(records[i].clock_time, clocks[i]) << i;
    EXPECT_EQ(records[i].obj_size, 16u) << i;
    EXPECT_EQ(records[i].next_access_vtime, next[i]) << i;
  }
}

TEST(OracleGeneralExportTest, RequestsWithoutHashesGetCacheReplaysFreshBlocks) {
  const std::string path = ::testing::TempDir() + "/og_fresh.bin";
  const Request r = MakeRequest(3, 0, 40, 1, 0, {});
  ASSERT_TRUE(WriteAll(path, "oracle_general", 0, {r}).ok());
  Request expected = r;
  AssignFreshBlockHashes(16, &expected);
  const std::vector<OracleRecord> records = ReadOracleGeneral(*ReadFile(path));
  ASSERT_EQ(records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(records[i].obj_id, expected.block_hashes[i]);
}

TEST(OracleGeneralExportTest, RefusesHashesThatDoNotMatchTheInputLength) {
  TraceWriterOptions options;
  options.block_tokens = 16;
  auto writer = OpenTraceWriter(::testing::TempDir() + "/og_bad.bin", "oracle_general", options);
  ASSERT_TRUE(writer.ok());
  const absl::Status status = (*writer)->Write(MakeRequest(0, 0, 40, 1, 16, {1, 2}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("record 0: block_hashes: expected ceil(40 / 16) = 3 ids, got 2"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace kvsim
