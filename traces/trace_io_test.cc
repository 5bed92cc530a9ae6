#include "traces/trace_io.h"

#include <string>

#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_format.h"

namespace kvsim {
namespace {

TEST(TraceIoTest, DetectsTheBundledTraces) {
  auto mooncake = DetectTraceFormat(DataPath("mooncake_synthetic.jsonl"));
  ASSERT_TRUE(mooncake.ok()) << mooncake.status();
  EXPECT_EQ(*mooncake, "mooncake");
  auto azure = DetectTraceFormat(DataPath("azure_code_2023.csv"));
  ASSERT_TRUE(azure.ok()) << azure.status();
  EXPECT_EQ(*azure, "azure");
}

TEST(TraceIoTest, OpenTraceReadsByDetectionAndByName) {
  auto detected = ReadAll(DataPath("azure_code_2023.csv"), {});
  ASSERT_TRUE(detected.ok()) << detected.status();
  EXPECT_EQ(detected->size(), 8819u);
  TraceOptions options;
  options.format = "mooncake";
  auto reader = OpenTrace(DataPath("mooncake_synthetic.jsonl"), options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().format, "mooncake");
  EXPECT_EQ((*reader)->info().block_tokens, 512);
}

TEST(TraceIoTest, RegistryListsTheImporters) {
  EXPECT_NE(FindTraceFormat("mooncake"), nullptr);
  EXPECT_NE(FindTraceFormat("azure"), nullptr);
  EXPECT_EQ(FindTraceFormat("nope"), nullptr);
  EXPECT_NE(TraceFormatNames().find("azure, "), std::string::npos);
}

TEST(TraceIoTest, ErrorsSayWhatIsWrong) {
  auto missing = OpenTrace(::testing::TempDir() + "/absent.jsonl", {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  const std::string empty = WriteTempFile("empty_trace", "  \n");
  auto empty_open = OpenTrace(empty, {});
  EXPECT_EQ(empty_open.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty_open.status().message().find("the file is empty"), absl::string_view::npos);

  const std::string unknown = WriteTempFile("unknown.txt", "hello world\n");
  auto unknown_open = OpenTrace(unknown, {});
  EXPECT_EQ(unknown_open.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown_open.status().message().find("matches no known trace format (azure"), absl::string_view::npos)
      << unknown_open.status();

  TraceOptions bad_name;
  bad_name.format = "parquet";
  auto named = OpenTrace(unknown, bad_name);
  EXPECT_EQ(named.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(named.status().message().find("unknown trace format 'parquet'; known formats: azure"),
            absl::string_view::npos)
      << named.status();

  // A file of the wrong format, named explicitly: the importer says what it expected at line 1.
  TraceOptions as_azure;
  as_azure.format = "azure";
  auto wrong = ReadAll(DataPath("mooncake_synthetic.jsonl"), as_azure);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("mooncake_synthetic.jsonl:1: expected ',' or end of line after a closing "
                                          "quote, found ':' (while reading the CSV header line)"),
            absl::string_view::npos)
      << wrong.status();

  TraceOptions zero_window;
  zero_window.reorder_window = 0;
  EXPECT_EQ(OpenTrace(DataPath("azure_code_2023.csv"), zero_window).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
