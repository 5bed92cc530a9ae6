#include "traces/text/line_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

std::vector<std::string> AllLines(const std::string& path, size_t buffer_bytes, std::vector<int64_t>* numbers = nullptr,
                                  std::vector<uint64_t>* offsets = nullptr) {
  auto reader = LineReader::Open(path, buffer_bytes);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> lines;
  absl::string_view line;
  while ((*reader)->Next(&line)) {
    lines.emplace_back(line);
    if (numbers != nullptr) numbers->push_back((*reader)->line_number());
    if (offsets != nullptr) offsets->push_back((*reader)->line_offset());
  }
  EXPECT_TRUE((*reader)->status().ok());
  return lines;
}

TEST(LineReaderTest, SplitsLinesStripsCarriageReturnsAndKeepsALastLineWithoutNewline) {
  const std::string path = WriteTempFile("lines1.txt", "ab\r\n\ncde\nf");
  std::vector<int64_t> numbers;
  std::vector<uint64_t> offsets;
  for (size_t buffer : {16, 17, 1 << 20}) {
    numbers.clear();
    offsets.clear();
    EXPECT_EQ(AllLines(path, buffer, &numbers, &offsets), (std::vector<std::string>{"ab", "", "cde", "f"}));
    EXPECT_EQ(numbers, (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 4, 5, 9}));  // "ab\r\n" is 4 bytes, "\n" 1, "cde\n" 4
  }
}

TEST(LineReaderTest, AByteOrderMarkIsNotPartOfTheFirstLine) {
  const std::string path = WriteTempFile("bom.txt", "\xEF\xBB\xBF{\"a\": 1}\n\xEF\xBB\xBFx\n");
  std::vector<uint64_t> offsets;
  // Only a mark at the start of the file is dropped; one inside the file is data.
  EXPECT_EQ(AllLines(path, 1 << 20, nullptr, &offsets), (std::vector<std::string>{"{\"a\": 1}", "\xEF\xBB\xBFx"}));
  EXPECT_EQ(offsets, (std::vector<uint64_t>{3, 12}));
}

TEST(LineReaderTest, LinesLongerThanTheBufferGrowIt) {
  std::string contents;
  std::vector<std::string> expected;
  for (int i = 0; i < 50; ++i) {
    expected.push_back(std::string(i * 7 + 1, static_cast<char>('a' + i % 26)));
    contents += expected.back() + "\n";
  }
  const std::string path = WriteTempFile("lines2.txt", contents);
  EXPECT_EQ(AllLines(path, 16), expected);  // the longest line is 344 bytes, the buffer 16
}

TEST(LineReaderTest, EmptyFileHasNoLines) {
  const std::string path = WriteTempFile("lines3.txt", "");
  EXPECT_TRUE(AllLines(path, 64).empty());
}

TEST(LineReaderTest, EveryLineIsFollowedByReadablePaddingBytes) {
  const std::string path = WriteTempFile("lines4.txt", "0123456789abcdef\nxy");
  auto reader = LineReader::Open(path, 16);
  ASSERT_TRUE(reader.ok());
  absl::string_view line;
  while ((*reader)->Next(&line)) {
    // Reading the padding must be valid memory (AddressSanitizer/valgrind would flag it otherwise); the
    // bytes past the file's end are zeros.
    int sum = 0;
    for (size_t i = 0; i < kLinePaddingBytes; ++i) sum += line.data()[line.size() + i] != 0;
    EXPECT_LE(sum, 3);  // at most "\nxy" of real data can follow the first line
  }
}

TEST(LineReaderTest, MissingFileIsNotFound) {
  auto reader = LineReader::Open(::testing::TempDir() + "/no_such_file.txt");
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find("no_such_file.txt"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
