#include "traces/importers/azure_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

absl::StatusOr<std::vector<Request>> ReadAzure(const std::string& path) {
  auto reader = OpenAzureTrace(path, {});
  if (!reader.ok()) return reader.status();
  return ReadAll(**reader);
}

TEST(AzureReaderTest, ReadsTheBundledTraceCompletely) {
  auto requests = ReadAzure(DataPath("azure_code_2023.csv"));
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 8819u);  // 8,820 lines less the header
  // Rows 1-2: 2023-11-16 18:17:03.9799600,4808,10 and 18:17:04.0319600,3180,8 (0.052 s later).
  EXPECT_EQ((*requests)[0].request_id, 0u);
  EXPECT_EQ((*requests)[0].arrival_ns, 0);
  EXPECT_EQ((*requests)[0].input_tokens, 4808);
  EXPECT_EQ((*requests)[0].output_tokens, 10);
  EXPECT_EQ((*requests)[0].block_tokens, 0);
  EXPECT_TRUE((*requests)[0].block_hashes.empty());
  EXPECT_EQ((*requests)[1].arrival_ns, 52'000'000);
  EXPECT_EQ((*requests)[1].input_tokens, 3180);
  // Last row: 19:14:19.9280160,549,173: 57 min + (19.9280160 - 3.9799600) s = 3435.948056 s later.
  EXPECT_EQ(requests->back().request_id, 8818u);
  EXPECT_EQ(requests->back().arrival_ns, 3'435'948'056'000);
  EXPECT_EQ(requests->back().input_tokens, 549);
  EXPECT_EQ(requests->back().output_tokens, 173);
}

TEST(AzureReaderTest, HandWrittenFileWithQuotesExtraColumnsAndZones) {
  // The 2024 release style: zone suffix; columns in another order, one extra, a quoted field.
  const std::string path =
      WriteTempFile("azure2024.csv",
                    "ContextTokens,\"TIMESTAMP\",GeneratedTokens,Note\n"
                    "100,2024-05-10 00:00:01.5000000+00:00,7,\"a, b\"\n"
                    "\"200\",2024-05-10 01:00:00.0000000+01:00,0,\n");  // 01:00+01:00 = 00:00 UTC, 1.5 s earlier
  auto requests = ReadAzure(path);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 2u);
  EXPECT_EQ((*requests)[0].request_id, 1u);  // the second row is earliest
  EXPECT_EQ((*requests)[0].arrival_ns, 0);
  EXPECT_EQ((*requests)[0].input_tokens, 200);
  EXPECT_EQ((*requests)[0].output_tokens, 0);
  EXPECT_EQ((*requests)[1].request_id, 0u);
  EXPECT_EQ((*requests)[1].arrival_ns, 1'500'000'000);
  EXPECT_EQ((*requests)[1].output_tokens, 7);
}

TEST(AzureReaderTest, BadRowsNameFileLineAndColumn) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  const std::string ok = "2023-11-16 18:17:03.9799600,4808,10\n";
  struct Case {
    std::string name, contents, expected;
  } cases[] = {
      {"neg.csv", header + ok + "2023-11-16 18:17:04.0,-1,10\n",
       "neg.csv:3: ContextTokens: expected an integer in [1, "},
      {"word.csv", header + ok + "2023-11-16 18:17:04.0,12,ten\n", "word.csv:3: GeneratedTokens: expected an integer"},
      {"time.csv", header + "18:17:04,12,10\n", "time.csv:2: TIMESTAMP: expected a time"},
      {"short.csv", header + ok + "2023-11-16 18:17:04.0,12\n", "short.csv:3: expected 3 comma-separated fields"},
      {"column.csv", "TIMESTAMP,ContextTokens,Tokens\n" + ok, "column.csv:1: expected a column 'GeneratedTokens'"},
      {"headeronly.csv", header, "headeronly.csv: expected at least one record"},
      {"empty.csv", "", "empty.csv:1: expected a CSV header line"},
      // Every value valid: without the check the first ContextTokens column was taken and the second ignored.
      {"dupcol.csv", "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:17:03.9799600,4808,10,5\n",
       "dupcol.csv:1:4: duplicated column 'ContextTokens' (first in column 2)"},
  };
  for (const Case& c : cases) {
    auto requests = ReadAzure(WriteTempFile(c.name, c.contents));
    EXPECT_EQ(requests.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(requests.status().message().find(c.expected), absl::string_view::npos)
        << c.name << ": " << requests.status();
  }
}

TEST(AzureReaderTest, DetectsByHeaderColumns) {
  EXPECT_TRUE(LooksLikeAzure("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,1,2\n"));
  EXPECT_TRUE(LooksLikeAzure("\xEF\xBB\xBF\"TIMESTAMP\",\"ContextTokens\",\"GeneratedTokens\"\r\n"));
  EXPECT_FALSE(LooksLikeAzure("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"));
  EXPECT_FALSE(LooksLikeAzure("{\"timestamp\": 0}\n"));
}

}  // namespace
}  // namespace kvsim
