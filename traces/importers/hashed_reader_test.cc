#include "traces/importers/hashed_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

// Three requests of 4-token blocks: A = blocks (1, 2, 3), B = (1, 2, 9), C = (5, 2, 3).
const char kTrace[] =
    "{\"timestamp\": \"1718000000000000100\", \"input_length\": 12, \"output_length\": 1, \"block_size\": 4, "
    "\"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": \"1718000000000000050\", \"input_length\": 10, \"output_length\": 2, \"block_size\": 4, "
    "\"hash_ids\": [1, \"2\", 9]}\n"
    "{\"timestamp\": 1718000000000001000, \"input_length\": 9, \"output_length\": 3, \"block_size\": 4, \"hash_ids\": "
    "[5, 2, 3]}\n";

TEST(HashedReaderTest, KeepsContentHashesByDefault) {
  auto reader = OpenHashedTrace(WriteTempFile("hashed.jsonl", kTrace), {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3u);
  // Epoch-ns strings kept exactly: B (..050) first, then A (+50 ns), then C (+950 ns).
  EXPECT_EQ((*requests)[0].request_id, 1u);
  EXPECT_EQ((*requests)[0].arrival_ns, 0);
  EXPECT_EQ((*requests)[1].arrival_ns, 50);
  EXPECT_EQ((*requests)[2].arrival_ns, 950);
  EXPECT_EQ((*requests)[0].block_hashes, (std::vector<uint64_t>{1, 2, 9}));
  EXPECT_EQ((*requests)[2].block_tokens, 4);
  EXPECT_EQ((*reader)->info().block_tokens, 4);
  bool warned = false;
  for (const std::string& w : (*reader)->warnings()) warned |= w.find("content hashes") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(HashedReaderTest, ChainingMakesEqualIdsMeanEqualPrefixes) {
  TraceOptions options;
  options.chain_hashes = true;
  auto requests = ReadAll(WriteTempFile("chained.jsonl", kTrace), [&] {
    TraceOptions o = options;
    o.format = "hashed";
    return o;
  }());
  ASSERT_TRUE(requests.ok()) << requests.status();
  const std::vector<uint64_t>& b = (*requests)[0].block_hashes;  // (1, 2, 9)
  const std::vector<uint64_t>& a = (*requests)[1].block_hashes;  // (1, 2, 3)
  const std::vector<uint64_t>& c = (*requests)[2].block_hashes;  // (5, 2, 3)
  // The definition, computed independently here: id'_0 = H(0, id_0), id'_k = H(id'_{k-1}, id_k).
  EXPECT_EQ(a[0], ChainBlockHash(0, 1));
  EXPECT_EQ(a[1], ChainBlockHash(ChainBlockHash(0, 1), 2));
  EXPECT_EQ(a[0], b[0]);  // same first block
  EXPECT_EQ(a[1], b[1]);  // same first two blocks
  EXPECT_NE(a[2], b[2]);  // 3 vs 9
  EXPECT_NE(a[1], c[1]);  // same content id 2, different prefix (1 vs 5)
  EXPECT_NE(a[2], c[2]);  // same content id 3, different prefix
}

TEST(HashedReaderTest, ChainBlockHashIsNotSymmetricOrTrivial) {
  EXPECT_NE(ChainBlockHash(0, 1), 1u);
  EXPECT_NE(ChainBlockHash(ChainBlockHash(0, 1), 2), ChainBlockHash(ChainBlockHash(0, 2), 1));
}

TEST(HashedReaderTest, BlockSizeFromOptionsAndErrors) {
  const std::string no_size = WriteTempFile(
      "nosize.jsonl", "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1, 2]}\n");
  TraceOptions options;
  options.block_tokens = 2;  // ceil(3 / 2) = 2 ids
  auto with_option = OpenHashedTrace(no_size, options);
  ASSERT_TRUE(with_option.ok());
  auto requests = ReadAll(**with_option);
  ASSERT_TRUE(requests.ok()) << requests.status();
  EXPECT_EQ((*requests)[0].block_tokens, 2);

  auto without = OpenHashedTrace(no_size, {});
  ASSERT_TRUE(without.ok());
  auto missing = ReadAll(**without);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("nosize.jsonl:1: block_size: missing"), absl::string_view::npos)
      << missing.status();

  const std::string mixed = WriteTempFile(
      "mixed.jsonl",
      "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"block_size\": 2, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 6, \"input_length\": 3, \"output_length\": 1, \"block_size\": 4, \"hash_ids\": [1]}\n");
  auto reader = OpenHashedTrace(mixed, {});
  ASSERT_TRUE(reader.ok());
  auto bad = ReadAll(**reader);
  EXPECT_NE(bad.status().message().find("mixed.jsonl:2: block_size: expected the trace's block size 2, got 4"),
            absl::string_view::npos)
      << bad.status();

  const std::string bad_time = WriteTempFile(
      "badtime.jsonl",
      "{\"timestamp\": \"12:00\", \"input_length\": 3, \"output_length\": 1, \"block_size\": 4, \"hash_ids\": [1]}\n");
  auto time_reader = OpenHashedTrace(bad_time, {});
  ASSERT_TRUE(time_reader.ok());
  EXPECT_NE(ReadAll(**time_reader)
                .status()
                .message()
                .find("badtime.jsonl:1: timestamp: expected an integer or a string of one"),
            absl::string_view::npos);
}

TEST(HashedReaderTest, DuplicateKeysAreRefusedNotResolved) {
  // Both hash lists fit 3 tokens in blocks of 2: without the check the reader took the last one.
  const std::string path = WriteTempFile(
      "dupkey.jsonl",
      "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"block_size\": 2, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 6, \"input_length\": 3, \"output_length\": 1, \"block_size\": 2, \"hash_ids\": [1, 2], "
      "\"hash_ids\": [3, 4]}\n");
  auto reader = OpenHashedTrace(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  EXPECT_EQ(requests.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(requests.status().message().find("dupkey.jsonl:2: duplicate key \"hash_ids\""), absl::string_view::npos)
      << requests.status();
}

TEST(HashedReaderTest, Detection) {
  EXPECT_TRUE(LooksLikeHashed("{\"timestamp\": \"17\", \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}"));
  EXPECT_TRUE(LooksLikeHashed("{\"timestamp\": 17, \"block_size\": 16, \"hash_ids\": [1]}"));
  EXPECT_FALSE(LooksLikeHashed("{\"timestamp\": 17, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}"));
}

}  // namespace
}  // namespace kvsim
