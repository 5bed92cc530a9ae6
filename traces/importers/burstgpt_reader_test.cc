#include "traces/importers/burstgpt_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

TEST(BurstGptReaderTest, HandWrittenRowsWithSessionsFailuresAndQuotes) {
  const std::string path =
      WriteTempFile("burst.csv",
                    "Timestamp,Session ID,Model,Request tokens,Response tokens,Total tokens,Log Type,Elapsed time\n"
                    "5,7,ChatGPT,472,18,490,Conversation log,1.2\n"
                    "5.25,7,ChatGPT,900,0,900,Conversation log,0.3\n"
                    "6,,\"GPT-4\",12,30,42,API log,2.0\n"
                    "4.5,abc,GPT-4,1,1,2,\"API log\",0\n");
  auto reader = OpenBurstGptTrace(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 4u);
  // Sorted: 4.5 (row 3), 5 (row 0), 5.25 (row 1), 6 (row 2); origin 4.5 s.
  const Request& text_session = (*requests)[0];
  EXPECT_EQ(text_session.request_id, 3u);
  EXPECT_EQ(text_session.arrival_ns, 0);
  EXPECT_GE(text_session.session_id, 0);  // a hash of "abc"
  EXPECT_EQ(text_session.turn, 1);
  EXPECT_EQ(text_session.type, proto::REQUEST_TYPE_API);
  const Request& first = (*requests)[1];
  EXPECT_EQ(first.request_id, 0u);
  EXPECT_EQ(first.arrival_ns, 500'000'000);
  EXPECT_EQ(first.session_id, 7);
  EXPECT_EQ(first.turn, 1);
  EXPECT_EQ(first.parent_id, -1);
  EXPECT_EQ(first.model, "ChatGPT");
  EXPECT_EQ(first.input_tokens, 472);
  EXPECT_EQ(first.output_tokens, 18);
  EXPECT_EQ(first.type, proto::REQUEST_TYPE_CONVERSATION);
  EXPECT_FALSE(first.failed);
  const Request& failed = (*requests)[2];
  EXPECT_EQ(failed.arrival_ns, 750'000'000);
  EXPECT_TRUE(failed.failed);  // 0 response tokens: kept, marked
  EXPECT_EQ(failed.session_id, 7);
  EXPECT_EQ(failed.turn, 2);
  EXPECT_EQ(failed.parent_id, 0);
  const Request& api = (*requests)[3];
  EXPECT_EQ(api.session_id, -1);
  EXPECT_EQ(api.model, "GPT-4");
  EXPECT_EQ(api.block_tokens, 0);
  bool warned = false;
  for (const std::string& w : (*reader)->warnings()) {
    warned |= w.find("1 rows with 0 response tokens kept and marked failed") != std::string::npos;
  }
  EXPECT_TRUE(warned);
  EXPECT_NE(failed.session_id, text_session.session_id);
}

TEST(BurstGptReaderTest, BadRowsNameLineAndColumn) {
  const std::string header = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  struct Case {
    std::string name, contents, expected;
  } cases[] = {
      {"logtype.csv", header + "1,ChatGPT,1,1,2,Chat log\n",
       "logtype.csv:2: Log Type: expected \"Conversation log\" or \"API log\""},
      {"time.csv", header + "1,ChatGPT,1,1,2,API log\nx,ChatGPT,1,1,2,API log\n",
       "time.csv:3: Timestamp: expected a decimal number"},
      {"neg.csv", header + "1,ChatGPT,-1,1,2,API log\n", "neg.csv:2: Request tokens: expected an integer in [1, "},
      {"nomodel.csv", "Timestamp,Request tokens,Response tokens,Total tokens,Log Type\n1,1,1,2,API log\n",
       "nomodel.csv:1: expected a column 'Model'"},
      // Every value valid; the names match after trimming spaces, as lookups do.
      {"dupcol.csv",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type, Model\n1,ChatGPT,1,1,2,API log,GPT-4\n",
       "dupcol.csv:1:7: duplicated column 'Model' (first in column 2)"},
  };
  for (const Case& c : cases) {
    auto reader = OpenBurstGptTrace(WriteTempFile(c.name, c.contents), {});
    absl::Status status = reader.ok() ? ReadAll(**reader).status() : reader.status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(status.message().find(c.expected), absl::string_view::npos) << c.name << ": " << status;
  }
}

TEST(BurstGptReaderTest, Detection) {
  EXPECT_TRUE(LooksLikeBurstGpt("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"));
  EXPECT_FALSE(LooksLikeBurstGpt("TIMESTAMP,ContextTokens,GeneratedTokens\n"));
}

}  // namespace
}  // namespace kvsim
