#include "traces/importers/mooncake_reader.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

absl::StatusOr<std::vector<Request>> ReadMooncake(const std::string& path) {
  auto reader = OpenMooncakeTrace(path, {});
  if (!reader.ok()) return reader.status();
  return ReadAll(**reader);
}

void ExpectError(const std::string& name, const std::string& contents, const std::string& expected) {
  const std::string path = WriteTempFile(name, contents);
  auto requests = ReadMooncake(path);
  EXPECT_EQ(requests.status().code(), absl::StatusCode::kInvalidArgument) << name;
  EXPECT_NE(requests.status().message().find(expected), absl::string_view::npos) << name << ": " << requests.status();
}

TEST(MooncakeReaderTest, ReadsTheBundledTraceCompletely) {
  auto requests = ReadMooncake(DataPath("mooncake_synthetic.jsonl"));
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3993u);  // lines in the file
  // First line: {"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, ..., 78]}
  const Request& first = requests->front();
  EXPECT_EQ(first.request_id, 0u);
  EXPECT_EQ(first.arrival_ns, 0);
  EXPECT_EQ(first.input_tokens, 40160);
  EXPECT_EQ(first.output_tokens, 6);
  EXPECT_EQ(first.block_tokens, 512);
  ASSERT_EQ(first.block_hashes.size(), 79u);  // ceil(40160 / 512)
  for (uint64_t k = 0; k < 79; ++k) EXPECT_EQ(first.block_hashes[k], k);
  // Third line has timestamp 40 ms.
  EXPECT_EQ((*requests)[2].arrival_ns, 40'000'000);
  EXPECT_EQ((*requests)[2].input_tokens, 23769);
  // Last line: timestamp 1022025, input 18440 (37 blocks starting at id 17915), output 83.
  const Request& last = requests->back();
  EXPECT_EQ(last.request_id, 3992u);
  EXPECT_EQ(last.arrival_ns, 1'022'025'000'000);
  EXPECT_EQ(last.input_tokens, 18440);
  EXPECT_EQ(last.output_tokens, 83);
  ASSERT_EQ(last.block_hashes.size(), 37u);
  EXPECT_EQ(last.block_hashes[0], 17915u);
  // The trace's published figures (traces/data/README.md): 121,877 references, 43,924 distinct blocks.
  size_t references = 0;
  std::set<uint64_t> distinct;
  for (const Request& r : *requests) {
    references += r.block_hashes.size();
    distinct.insert(r.block_hashes.begin(), r.block_hashes.end());
  }
  EXPECT_EQ(references, 121877u);
  EXPECT_EQ(distinct.size(), 43924u);
}

TEST(MooncakeReaderTest, HandWrittenTraceWithExtraKeysBlankLinesAndOutOfOrderTimes) {
  const std::string path = WriteTempFile(
      "small.jsonl",
      "{\"timestamp\": 100, \"input_length\": 513, \"output_length\": 2, \"hash_ids\": [7, 8], \"x\": [1]}\n"
      "\n"
      "  {\"hash_ids\": [9], \"output_length\": 0, \"input_length\": 5, \"timestamp\": 90}\r\n"
      "{\"timestamp\": 150, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [7]}");
  TraceOptions options;
  auto reader = OpenMooncakeTrace(path, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3u);
  // Sorted by time: 90 (record 1), 100 (record 0), 150 (record 2); origin 90 ms.
  EXPECT_EQ((*requests)[0].request_id, 1u);
  EXPECT_EQ((*requests)[0].arrival_ns, 0);
  EXPECT_EQ((*requests)[0].block_hashes, std::vector<uint64_t>{9});
  EXPECT_EQ((*requests)[1].request_id, 0u);
  EXPECT_EQ((*requests)[1].arrival_ns, 10'000'000);
  EXPECT_EQ((*requests)[1].input_tokens, 513);  // 513 tokens = 2 blocks of 512
  EXPECT_EQ((*requests)[1].block_hashes, (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ((*requests)[2].arrival_ns, 60'000'000);
  ASSERT_EQ((*reader)->warnings().size(), 1u);  // record 1 (t=90) is earlier than record 0 (t=100)
  EXPECT_NE((*reader)->warnings()[0].find("re-sorted: 1"), std::string::npos);
  EXPECT_EQ((*reader)->info().format, "mooncake");
  EXPECT_EQ((*reader)->info().block_tokens, 512);
}

TEST(MooncakeReaderTest, BadRecordsNameFileLineAndField) {
  const std::string ok = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n";
  ExpectError("trunc.jsonl", ok + "{\"timestamp\": 5, \"input_length\": 1, \"output_len",
              "trunc.jsonl:2: expected one JSON object per line");
  ExpectError("type.jsonl",
              ok + "{\"timestamp\": 5, \"input_length\": \"1\", \"output_length\": 1, \"hash_ids\": [1]}\n",
              "type.jsonl:2: input_length: expected an integer in [1, ");
  ExpectError("neg.jsonl",
              ok + ok + "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": -3, \"hash_ids\": [1]}\n",
              "neg.jsonl:3: output_length: expected an integer in [0, ");
  // A zero-token prompt: replay could not run it, so the importer refuses it at its line.
  ExpectError("zero.jsonl", ok + "{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n",
              "zero.jsonl:2: input_length: expected an integer in [1, ");
  ExpectError("missing.jsonl", "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n",
              "missing.jsonl:1: hash_ids: missing");
  ExpectError("float.jsonl", "{\"timestamp\": 5.5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n",
              "float.jsonl:1: timestamp: expected an integer");
  ExpectError("hashlen.jsonl",
              "{\"timestamp\": 0, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
              "hashlen.jsonl:1: hash_ids: expected ceil(input_length / 512) = 3 ids for input_length 1025, got 2");
  ExpectError("hashtype.jsonl",
              "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, \"a\"]}\n",
              "hashtype.jsonl:1: hash_ids[1]: expected an integer id, got \"a\"");
  ExpectError("array.jsonl", "[1, 2]\n", "array.jsonl:1: expected one JSON object per line, got [1,2]");
  ExpectError("trailing.jsonl",
              ok + "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]} x\n",
              "trailing.jsonl:2: expected one JSON object per line");
  ExpectError("empty.jsonl", "\n  \n", "empty.jsonl: expected at least one record");
  ExpectError("csv.jsonl", "TIMESTAMP,ContextTokens,GeneratedTokens\n", "csv.jsonl:1: expected one JSON object");
}

TEST(MooncakeReaderTest, DuplicateKeysAreRefusedNotResolved) {
  // Each value alone is valid: without the check the reader took the last one (5 output tokens).
  const std::string ok = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n";
  ExpectError("dupkey.jsonl",
              ok + "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"output_length\": 5, "
                   "\"hash_ids\": [1]}\n",
              "dupkey.jsonl:2: duplicate key \"output_length\"");
  // The same key spelled with an escape is the same key.
  ExpectError("escaped.jsonl",
              "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1], "
              "\"hash_\\u0069ds\": [2]}\n",
              "escaped.jsonl:1: duplicate key \"hash_ids\"");
  // An unknown key repeated is still ambiguous input.
  ExpectError("extra.jsonl",
              "{\"timestamp\": 0, \"x\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1], "
              "\"x\": 2}\n",
              "extra.jsonl:1: duplicate key \"x\"");
}

TEST(MooncakeReaderTest, DetectsMooncakeButNotBailianOrCsv) {
  EXPECT_TRUE(
      LooksLikeMooncake("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n{\"tim"));
  EXPECT_TRUE(LooksLikeMooncake("\n{\"hash_ids\":[1],\"output_length\":1,\"input_length\":1,\"timestamp\":0}"));
  EXPECT_FALSE(LooksLikeMooncake(
      "{\"chat_id\": 1, \"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}"));
  EXPECT_FALSE(LooksLikeMooncake("TIMESTAMP,ContextTokens,GeneratedTokens\n"));
  EXPECT_FALSE(LooksLikeMooncake(""));
}

}  // namespace
}  // namespace kvsim
