#include "traces/text/csv_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

using Rows = std::vector<std::vector<std::string>>;

Rows ReadRows(CsvReader& csv, std::vector<int64_t>* lines = nullptr) {
  Rows rows;
  std::vector<absl::string_view> fields;
  while (csv.Next(&fields)) {
    rows.emplace_back(fields.begin(), fields.end());
    if (lines != nullptr) lines->push_back(csv.line_number());
  }
  return rows;
}

TEST(CsvReaderTest, HandlesQuotingEscapedQuotesAndFieldsSpanningLines) {
  const std::string path = WriteTempFile("quoting.csv",
                                         "\xEF\xBB\xBF"
                                         "a, b ,c\r\n"
                                         "1,\"x, y\",\"say \"\"hi\"\"\"\n"
                                         "\n"
                                         "2,\"two\nlines\",\n"
                                         "3,,\"\"\n");
  for (size_t buffer : {16, 1 << 20}) {
    auto csv = CsvReader::Open(path, buffer);
    ASSERT_TRUE(csv.ok()) << csv.status();
    EXPECT_EQ((*csv)->header(), (std::vector<std::string>{"a", "b", "c"}));  // BOM and spaces gone
    EXPECT_EQ((*csv)->Column("b"), 1);
    EXPECT_EQ((*csv)->Column("d"), -1);
    std::vector<int64_t> lines;
    EXPECT_EQ(ReadRows(**csv, &lines), (Rows{{"1", "x, y", "say \"hi\""}, {"2", "two\nlines", ""}, {"3", "", ""}}));
    EXPECT_EQ(lines, (std::vector<int64_t>{2, 4, 6}));  // line 3 is blank; row 2 spans lines 4-5
    EXPECT_TRUE((*csv)->status().ok()) << (*csv)->status();
  }
}

TEST(CsvReaderTest, WrongFieldCountNamesTheLine) {
  const std::string path = WriteTempFile("count.csv", "a,b\n1,2\n3\n");
  auto csv = CsvReader::Open(path);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(ReadRows(**csv).size(), 1u);
  EXPECT_EQ((*csv)->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*csv)->status().message().find("count.csv:3: expected 2"), absl::string_view::npos) << (*csv)->status();
}

TEST(CsvReaderTest, UnterminatedQuoteNamesTheLineWhereItOpened) {
  const std::string path = WriteTempFile("open.csv", "a,b\n1,2\n3,\"never closed\n4,5\n");
  auto csv = CsvReader::Open(path);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(ReadRows(**csv).size(), 1u);
  EXPECT_EQ((*csv)->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*csv)->status().message().find("open.csv:3: quoted field"), absl::string_view::npos) << (*csv)->status();
}

TEST(CsvReaderTest, TextAfterAClosingQuoteIsAnError) {
  const std::string path = WriteTempFile("after.csv", "a,b\n\"1\"x,2\n");
  auto csv = CsvReader::Open(path);
  ASSERT_TRUE(csv.ok());
  EXPECT_TRUE(ReadRows(**csv).empty());
  EXPECT_EQ((*csv)->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*csv)->status().message().find("after.csv:2: expected ','"), absl::string_view::npos) << (*csv)->status();
}

TEST(CsvReaderTest, RepeatedColumnNameIsRefusedButUnnamedColumnsMayRepeat) {
  auto twice = CsvReader::Open(WriteTempFile("twice.csv", "a,\"b\",c,b \n1,2,3,4\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("twice.csv:1:4: duplicated column 'b' (first in column 2)"),
            absl::string_view::npos)
      << twice.status();
  // Allowed where asked for: the lookup finds the first.
  auto allowed = CsvReader::Open(WriteTempFile("allowed.csv", "a,\"b\",c,b \n1,2,3,4\n"), size_t{1} << 20,
                                 CsvReader::RepeatedColumns::kAllow);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ((*allowed)->Column("b"), 1);
  auto unnamed = CsvReader::Open(WriteTempFile("unnamed.csv", "a,,b,\n1,2,3,4\n"));
  ASSERT_TRUE(unnamed.ok()) << unnamed.status();
  EXPECT_EQ((*unnamed)->Column("b"), 2);
}

TEST(CsvReaderTest, EmptyFileHasNoHeader) {
  const std::string path = WriteTempFile("empty.csv", "\n\n");
  auto csv = CsvReader::Open(path);
  EXPECT_EQ(csv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(csv.status().message().find("header"), absl::string_view::npos);
}

TEST(CsvReaderTest, SplitRecordUnquotes) {
  std::vector<std::string> fields;
  ASSERT_TRUE(CsvReader::SplitRecord("\"Request tokens\",x,\"a\"\"b\"", &fields));
  EXPECT_EQ(fields, (std::vector<std::string>{"Request tokens", "x", "a\"b"}));
  EXPECT_FALSE(CsvReader::SplitRecord("\"open", &fields));
}

}  // namespace
}  // namespace kvsim
