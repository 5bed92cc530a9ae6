#include "traces/jsonl_export.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"
#include "util/file.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

TEST(JsonlExportTest, WritesEveryFieldInTheDocumentedForm) {
  const std::string path = ::testing::TempDir() + "/one.jsonl";
  TraceWriterOptions options;
  options.block_tokens = 16;
  options.source_format = "bailian";
  auto writer = OpenJsonlTraceWriter(path, options);
  ASSERT_TRUE(writer.ok());
  Request r;
  r.request_id = 7;
  r.arrival_ns = 250;
  r.session_id = 2;
  r.parent_id = 6;
  r.turn = 3;
  r.input_tokens = 20;
  r.output_tokens = 4;
  r.block_tokens = 16;
  r.block_hashes = {18446744073709551615u, 9};
  r.type = proto::REQUEST_TYPE_TEXT;
  r.failed = true;
  r.model = "a\"b\\c\n";
  r.tool_calls = {{"bash", 5}};
  ASSERT_TRUE((*writer)->Write(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  // Checked as parsed JSON (values, types and key order), not as text: the spacing is the JSON library's.
  const std::vector<std::string> lines = absl::StrSplit(*ReadFile(path), '\n');
  ASSERT_EQ(lines.size(), 3u);  // header, record, and the empty rest after the final newline
  EXPECT_EQ(lines[2], "");
  const Json header = Json::parse(lines[0]);
  EXPECT_EQ(header, Json::parse(R"({"kvsim_trace": 1, "source_format": "bailian", "block_tokens": 16})"));
  const Json record = Json::parse(lines[1]);
  EXPECT_EQ(record, Json::parse(R"({"request_id": 7, "arrival_ns": 250, "session_id": 2, "parent_id": 6,
      "turn": 3, "input_tokens": 20, "output_tokens": 4, "block_tokens": 16,
      "block_hashes": [18446744073709551615, 9], "type": "REQUEST_TYPE_TEXT", "failed": true,
      "model": "a\"b\\c\n", "tool_calls": [{"name": "bash", "duration_ns": 5}]})"));
  EXPECT_TRUE(record["block_hashes"][0].is_number_unsigned());  // a number, not a string or a double
  EXPECT_FALSE(record.contains("block_token_counts"));          // uniform blocks: the key is absent
  auto back = ReadAll(path, {});                                // detected as "jsonl"
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(RequestDifference((*back)[0], r), "");  // arrival 250 kept: times are already relative
}

// A model name that is not UTF-8 (e.g. from a CSV in another encoding) is written with U+FFFD for the bad
// byte, so the export is valid JSON and reads back, rather than a line the reader refuses.
TEST(JsonlExportTest, BadUtf8IsReplacedSoTheExportReadsBack) {
  const std::string path = ::testing::TempDir() + "/utf8.jsonl";
  auto writer = OpenJsonlTraceWriter(path, {});
  ASSERT_TRUE(writer.ok());
  Request r;
  r.input_tokens = 3;
  r.output_tokens = 1;
  r.model = "m\xff";
  ASSERT_TRUE((*writer)->Write(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto back = ReadAll(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].model, "m\xEF\xBF\xBD");
}

// Variable blocks round-trip; the writer refuses what the reader would refuse (a zero-token prompt,
// counts that do not fit), naming the record, and leaves no file.
TEST(JsonlExportTest, VariableBlocksRoundTripAndRefusedRecordsAreNeverWritten) {
  const std::string path = ::testing::TempDir() + "/chunks.jsonl";
  TraceWriterOptions options;
  options.block_tokens = 34;
  auto writer = OpenJsonlTraceWriter(path, options);
  ASSERT_TRUE(writer.ok());
  Request r;
  r.input_tokens = 70;
  r.output_tokens = 1;
  r.block_tokens = 34;
  r.block_hashes = {5, 6};
  r.block_token_counts = {35, 35};
  ASSERT_TRUE((*writer)->Write(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  // Parsed, not matched as text: the counts come right after the hashes (the documented order).
  const std::vector<std::string> lines = absl::StrSplit(*ReadFile(path), '\n');
  ASSERT_GE(lines.size(), 2u);
  const Json record = Json::parse(lines[1]);
  EXPECT_EQ(record["block_hashes"], Json::array({5, 6}));
  EXPECT_EQ(record["block_token_counts"], Json::array({35, 35}));
  std::vector<std::string> keys;
  for (const auto& [key, value] : record.items()) keys.push_back(key);
  const auto hashes = std::find(keys.begin(), keys.end(), "block_hashes");
  ASSERT_NE(hashes, keys.end());
  ASSERT_LT(hashes + 2, keys.end());
  EXPECT_EQ(hashes[1], "block_token_counts");
  EXPECT_EQ(hashes[2], "type");
  auto back = ReadAll(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(RequestDifference((*back)[0], r), "");

  struct Bad {
    Request request;
    std::string message;
  };
  Request zero = r;
  zero.input_tokens = 0;
  zero.block_hashes.clear();
  zero.block_token_counts.clear();
  zero.block_tokens = 0;
  Request wrong_sum = r;
  wrong_sum.block_token_counts = {35, 34};
  for (const Bad& bad : std::vector<Bad>{{zero, "record 1: input_tokens: expected > 0, got 0"},
                                         {wrong_sum, "record 1: block_token_counts: sum 69"}}) {
    const std::string refused = ::testing::TempDir() + "/refused.jsonl";
    auto w = OpenJsonlTraceWriter(refused, options);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(r).ok());
    const absl::Status status = (*w)->Write(bad.request);
    EXPECT_NE(status.message().find(bad.message), std::string::npos) << status;
    w->reset();  // abandoned: no file
    EXPECT_FALSE(ReadFile(refused).ok());
  }
}

TEST(JsonlExportTest, HandWrittenMinimalRecordsGetDefaults) {
  const std::string path =
      WriteTempFile("minimal.jsonl",
                    "{\"kvsim_trace\": 1}\n"
                    "{\"request_id\": 4, \"arrival_ns\": 10, \"input_tokens\": 3, \"output_tokens\": 2}\n");
  auto back = ReadAll(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  Request expected;
  expected.request_id = 4;
  expected.arrival_ns = 10;
  expected.input_tokens = 3;
  expected.output_tokens = 2;
  EXPECT_EQ(RequestDifference((*back)[0], expected), "");
}

TEST(JsonlExportTest, ParentsNotSeenBeforeAreCountedInAWarning) {
  const std::string path = WriteTempFile(
      "parents.jsonl",
      "{\"kvsim_trace\": 1}\n"
      "{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, \"output_tokens\": 2}\n"
      "{\"request_id\": 2, \"parent_id\": 1, \"arrival_ns\": 5, \"input_tokens\": 3, \"output_tokens\": 2}\n"
      "{\"request_id\": 3, \"parent_id\": 9, \"arrival_ns\": 6, \"input_tokens\": 3, \"output_tokens\": 2}\n");
  auto reader = OpenTrace(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto requests = ReadAll(**reader);
  ASSERT_TRUE(requests.ok()) << requests.status();
  EXPECT_EQ(requests->size(), 3u);
  EXPECT_EQ((*reader)->warnings(),
            std::vector<std::string>{path + ": 1 requests name a parent_id not seen earlier in the trace"});
}

TEST(JsonlExportTest, BadRecordsNameLineAndField) {
  struct Case {
    std::string name, contents, expected;
  } cases[] = {
      {"noheader.jsonl", "{\"request_id\": 4, \"arrival_ns\": 10, \"input_tokens\": 3, \"output_tokens\": 2}\n",
       "noheader.jsonl:1: kvsim_trace: missing"},
      {"version.jsonl", "{\"kvsim_trace\": 2}\n", "version.jsonl:1: kvsim_trace: expected an integer in [1, 1]"},
      {"blocks.jsonl",
       "{\"kvsim_trace\": 1, \"block_tokens\": 16}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, "
       "\"output_tokens\": 2, \"block_tokens\": 512}\n",
       "blocks.jsonl:2: block_tokens: expected 0 or the header's 16, got 512"},
      {"nohashbt.jsonl",
       "{\"kvsim_trace\": 1, \"block_tokens\": 16}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, "
       "\"output_tokens\": 2, \"block_hashes\": [1]}\n",
       "nohashbt.jsonl:2: block_hashes: given with block_tokens 0"},
      {"type.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, \"output_tokens\": 2, "
       "\"type\": \"TEXT\"}\n",
       "type.jsonl:2: type: expected a RequestType name"},
      {"missing.jsonl", "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"input_tokens\": 3, \"output_tokens\": 2}\n",
       "missing.jsonl:2: arrival_ns: missing"},
      {"negative.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"arrival_ns\": -5, \"input_tokens\": 3, \"output_tokens\": 2}\n",
       "negative.jsonl:2: arrival_ns: expected an integer in [0, "},
      {"empty.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 0, \"output_tokens\": 2}\n",
       "empty.jsonl:2: input_tokens: expected an integer in [1, "},
      {"dup.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 7, \"arrival_ns\": 0, \"input_tokens\": 3, \"output_tokens\": 2}\n"
       "{\"request_id\": 7, \"arrival_ns\": 5, \"input_tokens\": 3, \"output_tokens\": 2}\n",
       "dup.jsonl:3: request_id: expected an id not used before, got 7 again"},
      // 24 tokens in blocks of 16 are 2 blocks (the last partial): 3 ids do not match them.
      {"hashes.jsonl",
       "{\"kvsim_trace\": 1, \"block_tokens\": 16}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 24, "
       "\"output_tokens\": 2, \"block_tokens\": 16, \"block_hashes\": [1, 2, 3]}\n",
       "hashes.jsonl:2: block_hashes: 3 ids for 24 input tokens; expected 2 (blocks of 16 tokens)"},
      // Duplicate keys, each value valid alone: in a record, in a nested tool call, in the header.
      {"dupkey.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, \"output_tokens\": 2, "
       "\"input_tokens\": 4}\n",
       "dupkey.jsonl:2: duplicate key \"input_tokens\""},
      {"duptool.jsonl",
       "{\"kvsim_trace\": 1}\n{\"request_id\": 1, \"arrival_ns\": 0, \"input_tokens\": 3, \"output_tokens\": 2, "
       "\"tool_calls\": [{\"name\": \"a\", \"duration_ns\": 5}, {\"name\": \"b\", \"duration_ns\": 5, "
       "\"duration_ns\": 6}]}\n",
       "duptool.jsonl:2: tool_calls[1]: duplicate key \"duration_ns\""},
      {"duphead.jsonl",
       "{\"kvsim_trace\": 1, \"block_tokens\": 16, \"block_tokens\": 0}\n{\"request_id\": 1, \"arrival_ns\": 0, "
       "\"input_tokens\": 3, \"output_tokens\": 2}\n",
       "duphead.jsonl:1: duplicate key \"block_tokens\""},
  };
  for (const Case& c : cases) {
    TraceOptions options;
    options.format = "jsonl";
    auto requests = ReadAll(WriteTempFile(c.name, c.contents), options);
    EXPECT_EQ(requests.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(requests.status().message().find(c.expected), absl::string_view::npos)
        << c.name << ": " << requests.status();
  }
}

TEST(JsonlExportTest, UnknownWriterFormatIsAnError) {
  auto writer = OpenTraceWriter(::testing::TempDir() + "/x.csv", "csv", 0);
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(writer.status().message().find("known: native, jsonl"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
