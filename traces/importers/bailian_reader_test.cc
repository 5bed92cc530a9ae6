#include "traces/importers/bailian_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

TEST(BailianReaderTest, HandWrittenConversationGetsSessionsParentsAndTypes) {
  // Conversation 10 -> 11 -> 13, and 12 on its own; 14's parent 99 never appears.
  const std::string path =
      WriteTempFile("bailian.jsonl",
                    "{\"chat_id\": 10, \"parent_chat_id\": -1, \"timestamp\": 1.5, \"input_length\": 17, "
                    "\"output_length\": 3, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [100, 101]}\n"
                    "{\"chat_id\": 12, \"parent_chat_id\": -1, \"timestamp\": 1.75, \"input_length\": 16, "
                    "\"output_length\": 1, \"type\": \"image\", \"turn\": 1, \"hash_ids\": [200]}\n"
                    "{\"chat_id\": 11, \"parent_chat_id\": 10, \"timestamp\": 2.0, \"input_length\": 33, "
                    "\"output_length\": 4, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [100, 101, 102]}\n"
                    "{\"chat_id\": 13, \"parent_chat_id\": 11, \"timestamp\": 2.5, \"input_length\": 5, "
                    "\"output_length\": 4, \"type\": \"search\", \"turn\": 3, \"hash_ids\": [300]}\n"
                    "{\"chat_id\": 14, \"parent_chat_id\": 99, \"timestamp\": 3, \"input_length\": 1, "
                    "\"output_length\": 1, \"type\": \"file\", \"turn\": 2, \"hash_ids\": [7]}\n");
  auto reader = OpenBailianTrace(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 5u);
  struct Want {
    uint64_t id;
    int64_t arrival_ns, session, parent;
    int32_t turn;
    proto::RequestType type;
  } want[] = {
      {10, 0, 10, -1, 1, proto::REQUEST_TYPE_TEXT},
      {12, 250'000'000, 12, -1, 1, proto::REQUEST_TYPE_IMAGE},  // 1.75 - 1.5 s
      {11, 500'000'000, 10, 10, 2, proto::REQUEST_TYPE_TEXT},
      {13, 1'000'000'000, 10, 11, 3, proto::REQUEST_TYPE_SEARCH},  // session via 11 -> 10
      {14, 1'500'000'000, 99, 99, 2, proto::REQUEST_TYPE_FILE},    // orphan: session keyed by parent
  };
  for (size_t i = 0; i < 5; ++i) {
    const Request& r = (*requests)[i];
    EXPECT_EQ(r.request_id, want[i].id) << i;
    EXPECT_EQ(r.arrival_ns, want[i].arrival_ns) << i;
    EXPECT_EQ(r.session_id, want[i].session) << i;
    EXPECT_EQ(r.parent_id, want[i].parent) << i;
    EXPECT_EQ(r.turn, want[i].turn) << i;
    EXPECT_EQ(r.type, want[i].type) << i;
    EXPECT_EQ(r.block_tokens, 16) << i;
  }
  EXPECT_EQ((*requests)[2].block_hashes, (std::vector<uint64_t>{100, 101, 102}));  // ceil(33/16) = 3
  ASSERT_EQ((*reader)->warnings().size(), 1u);
  EXPECT_NE((*reader)->warnings()[0].find("1 chats name a parent_chat_id not seen earlier"), std::string::npos);
}

// Types the format does not document (newer traces) are kept as REQUEST_TYPE_OTHER and counted by name.
TEST(BailianReaderTest, UnknownTypesAreKeptAndCounted) {
  const std::string contents =
      "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 1, \"output_length\": 9, \"type\": "
      "\"thinking\", \"hash_ids\": [5]}\n"
      "{\"chat_id\": 2, \"parent_chat_id\": -1, \"timestamp\": 1, \"input_length\": 1, \"output_length\": 9, \"type\": "
      "\"text\", \"hash_ids\": [6]}\n"
      "{\"chat_id\": 3, \"parent_chat_id\": 1, \"timestamp\": 2, \"input_length\": 1, \"output_length\": 9, \"type\": "
      "\"thinking\", \"hash_ids\": [5]}\n"
      "{\"chat_id\": 4, \"parent_chat_id\": -1, \"timestamp\": 3, \"input_length\": 1, \"output_length\": 9, \"type\": "
      "\"code\", \"hash_ids\": [7]}\n";
  auto reader = OpenBailianTrace(WriteTempFile("types.jsonl", contents), {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 4u);
  const proto::RequestType want[] = {proto::REQUEST_TYPE_OTHER, proto::REQUEST_TYPE_TEXT, proto::REQUEST_TYPE_OTHER,
                                     proto::REQUEST_TYPE_OTHER};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ((*requests)[i].type, want[i]) << i;
  const std::vector<std::string> warnings = (*reader)->warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("3 chats have a type other than text, image, file, search (\"code\" 1, \"thinking\" 2)"),
            std::string::npos)
      << warnings[0];
}

TEST(BailianReaderTest, BadRecordsNameLineAndField) {
  const std::string ok =
      "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
      "\"hash_ids\": [5]}\n";
  struct Case {
    std::string name, contents, expected;
  } cases[] = {
      {"dup.jsonl", ok + ok, "dup.jsonl:2: chat_id: expected an id not used before, got 1 again"},
      {"type.jsonl",
       "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
       "\"type\": 3, \"hash_ids\": [5]}\n",
       "type.jsonl:1: type: expected a string such as \"text\""},
      {"len.jsonl",
       "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 17, \"output_length\": 1, "
       "\"hash_ids\": [5]}\n",
       "len.jsonl:1: hash_ids: expected ceil(input_length / 16) = 2 ids for input_length 17, got 1"},
      {"parent.jsonl",
       "{\"chat_id\": 1, \"parent_chat_id\": -2, \"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
       "\"hash_ids\": [5]}\n",
       "parent.jsonl:1: parent_chat_id: expected an integer in [-1, "},
      {"time.jsonl",
       "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": \"0\", \"input_length\": 1, \"output_length\": 1, "
       "\"hash_ids\": [5]}\n",
       "time.jsonl:1: timestamp: expected a number, got \"0\""},
      // Both values valid: without the check the second chat_id (2) was taken.
      {"dupkey.jsonl",
       ok + "{\"chat_id\": 3, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 1, \"chat_id\": 2, "
            "\"output_length\": 1, \"hash_ids\": [5]}\n",
       "dupkey.jsonl:2: duplicate key \"chat_id\""},
  };
  for (const Case& c : cases) {
    auto reader = OpenBailianTrace(WriteTempFile(c.name, c.contents), {});
    ASSERT_TRUE(reader.ok());
    auto requests = ReadAll(**reader);
    EXPECT_EQ(requests.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(requests.status().message().find(c.expected), absl::string_view::npos)
        << c.name << ": " << requests.status();
  }
}

TEST(BailianReaderTest, Detection) {
  EXPECT_TRUE(LooksLikeBailian("{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0.0}"));
  EXPECT_FALSE(LooksLikeBailian("{\"timestamp\": 0, \"input_length\": 1, \"hash_ids\": []}"));
}

}  // namespace
}  // namespace kvsim
