#include "traces/importers/chunk_hash_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/importers/hashed_reader.h"
#include "traces/test_util.h"
#include "traces/trace_format.h"
#include "traces/trace_io.h"
#include "util/file.h"

namespace kvsim {
namespace {

// LMBench layout: string epoch-ns timestamps (the second one earlier), 100 tokens over 3 ids, 70 over 2.
const char kTrace[] =
    "{\"timestamp\": \"1718000000000000900\", \"input_length\": 100, \"output_length\": 4, \"hash_ids\": [11, 12, "
    "13]}\n"
    "{\"timestamp\": \"1718000000000000100\", \"input_length\": 70, \"output_length\": 3, \"hash_ids\": [12, 12]}\n";

TEST(ChunkHashReaderTest, SplitsTokensFloorEachLastTakesTheRemainder) {
  std::vector<int32_t> counts;
  SplitChunkTokens(100, 3, &counts);
  EXPECT_EQ(counts, (std::vector<int32_t>{33, 33, 34}));
  SplitChunkTokens(3699, 100, &counts);  // 36 each, the last 3699 - 99 x 36 = 135
  EXPECT_EQ(counts.front(), 36);
  EXPECT_EQ(counts.back(), 135);
  SplitChunkTokens(5, 5, &counts);
  EXPECT_EQ(counts, (std::vector<int32_t>(5, 1)));
}

TEST(ChunkHashReaderTest, DetectsTheUnitFromTheMagnitude) {
  EXPECT_EQ(DetectTimestampUnitNs(1718000000123456789), 1);
  EXPECT_EQ(DetectTimestampUnitNs(1718000000123456), 1'000);
  EXPECT_EQ(DetectTimestampUnitNs(1718000000123), 1'000'000);
  EXPECT_EQ(DetectTimestampUnitNs(1718000000), 1'000'000'000);
  EXPECT_EQ(DetectTimestampUnitNs(27482), 1'000'000);  // relative: ms
}

TEST(ChunkHashReaderTest, ReadsVariableChunksChainedByDefault) {
  auto reader = OpenTrace(WriteTempFile("chunks.jsonl", kTrace), {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().format, "chunk_hash");
  EXPECT_EQ((*reader)->info().block_tokens, 34);  // round(170 tokens / 5 ids)
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 2u);
  const Request& first = (*requests)[0];  // the earlier timestamp: record 1
  const Request& second = (*requests)[1];
  EXPECT_EQ(first.request_id, 1u);
  EXPECT_EQ(first.arrival_ns, 0);
  EXPECT_EQ(second.arrival_ns, 800);  // exact ns, beyond double precision of the epoch value
  EXPECT_EQ(first.block_token_counts, (std::vector<int32_t>{35, 35}));
  EXPECT_EQ(second.block_token_counts, (std::vector<int32_t>{33, 33, 34}));
  EXPECT_EQ(second.block_tokens, 34);
  // Chained: id'_0 = H(0, 12), id'_1 = H(id'_0, 12): the repeated content id gives distinct prefix ids.
  EXPECT_EQ(first.block_hashes[0], ChainBlockHash(0, 12));
  EXPECT_EQ(first.block_hashes[1], ChainBlockHash(ChainBlockHash(0, 12), 12));
  EXPECT_NE(first.block_hashes[0], first.block_hashes[1]);
  EXPECT_EQ(second.block_hashes[1], ChainBlockHash(ChainBlockHash(0, 11), 12));
  EXPECT_NE(second.block_hashes[1], first.block_hashes[0]);  // content 12 after 11 is not 12 at the start
  EXPECT_TRUE((*reader)->warnings().size() <= 1);            // only the re-sort warning, no chaining one
}

TEST(ChunkHashReaderTest, UnchainedKeepsContentIdsAndWarns) {
  TraceOptions options;
  options.chain_hashes_given = true;
  options.chain_hashes = false;
  auto reader = OpenTrace(WriteTempFile("plain.jsonl", kTrace), options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  EXPECT_EQ((*requests)[0].block_hashes, (std::vector<uint64_t>{12, 12}));
  bool warned = false;
  for (const std::string& w : (*reader)->warnings()) warned |= w.find("content hashes") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ChunkHashReaderTest, StatedUnitAndNominalBlockSize) {
  const std::string path =
      WriteTempFile("ms.jsonl",
                    "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                    "{\"timestamp\": 7, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n");
  TraceOptions options;
  options.timestamp_unit_ns = 1'000'000'000;  // seconds
  options.block_tokens = 8;
  auto reader = OpenTrace(path, options);  // integer times, 2 ids for 10 tokens (not ceil(10 / 512)): detected
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().format, "chunk_hash");
  EXPECT_EQ((*reader)->info().block_tokens, 8);
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  EXPECT_EQ((*requests)[1].arrival_ns, 2'000'000'000);
  EXPECT_EQ((*requests)[1].block_token_counts, (std::vector<int32_t>{3, 3, 4}));
}

TEST(ChunkHashReaderTest, RefusesAtTheRecordsLine) {
  struct Bad {
    std::string second_line;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"{\"timestamp\": \"2\", \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}", ":2: input_length"},
      {"{\"timestamp\": \"2\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}", ":2: hash_ids"},
      {"{\"timestamp\": \"2\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": []}", ":2: hash_ids"},
      {"{\"timestamp\": \"x\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": [1]}", ":2: timestamp"},
      {"{\"timestamp\": \"2\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": [1.5]}", ":2: hash_ids[0]"},
      {"{\"timestamp\": \"2\", \"input_length\": 2, \"hash_ids\": [1]}", ":2: output_length"},
      // Both values valid: without the check the last timestamp was taken.
      {"{\"timestamp\": \"2\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": [1], \"timestamp\": \"3\"}",
       ":2: duplicate key \"timestamp\""},
  };
  for (const Bad& bad : cases) {
    const std::string path = WriteTempFile(
        "bad.jsonl", "{\"timestamp\": \"1\", \"input_length\": 2, \"output_length\": 1, \"hash_ids\": [1]}\n" +
                         bad.second_line + "\n");
    auto requests = ReadAll(path, {});
    ASSERT_FALSE(requests.ok()) << bad.second_line;
    EXPECT_NE(requests.status().message().find(bad.message), std::string::npos) << requests.status();
  }
}

TEST(ChunkHashReaderTest, DetectionNeverTakesAMooncakeFile) {
  for (const std::string& path :
       {std::string("traces/data/mooncake_synthetic.jsonl"), std::string("traces/data/azure_code_2023.csv")}) {
    auto head = ReadFile(path);
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_FALSE(LooksLikeChunkHash(head->substr(0, kTraceDetectBytes))) << path;
  }
  auto reader = OpenTrace("traces/data/mooncake_synthetic.jsonl", {});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->info().format, "mooncake");
  // Every record of the Mooncake file as a first line: each has ceil(input / 512) ids and an integer time.
  auto lines = ReadFile("traces/data/mooncake_synthetic.jsonl");
  ASSERT_TRUE(lines.ok());
  size_t start = 0, checked = 0;
  while (start < lines->size()) {
    size_t end = lines->find('\n', start);
    if (end == std::string::npos) end = lines->size();
    const std::string line = lines->substr(start, end - start);
    if (!line.empty()) {
      EXPECT_FALSE(LooksLikeChunkHash(line)) << line.substr(0, 80);
      ++checked;
    }
    start = end + 1;
  }
  EXPECT_EQ(checked, 3993u);
  // The other formats sharing the keys.
  EXPECT_FALSE(LooksLikeChunkHash(
      "{\"timestamp\": \"17\", \"input_length\": 3, \"output_length\": 1, \"block_size\": 2, \"hash_ids\": [1, 2]}"));
  EXPECT_FALSE(
      LooksLikeChunkHash("{\"chat_id\": 1, \"timestamp\": \"17\", \"input_length\": 3, \"output_length\": 1, "
                         "\"hash_ids\": [1, 2]}"));
  EXPECT_TRUE(LooksLikeChunkHash(
      "{\"timestamp\": \"17\", \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1]}"));  // string time
  EXPECT_FALSE(
      LooksLikeChunkHash("{\"timestamp\": 17, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}"));
}

}  // namespace
}  // namespace kvsim
