#include "traces/importers/vidur_reader.h"

#include <string>

#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"

namespace kvsim {
namespace {

TEST(VidurReaderTest, HandWrittenTrace) {
  const std::string path = WriteTempFile("vidur.csv",
                                         "arrived_at,num_prefill_tokens,num_decode_tokens,num_total_tokens\n"
                                         "0.0,100,10,110\n"
                                         "0.125,200,20,220\n"
                                         "1.000000001,3,0,3\n");
  auto requests = ReadAll(path, {});  // detected
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 3u);
  EXPECT_EQ((*requests)[1].arrival_ns, 125'000'000);
  EXPECT_EQ((*requests)[1].input_tokens, 200);
  EXPECT_EQ((*requests)[1].output_tokens, 20);
  EXPECT_EQ((*requests)[2].arrival_ns, 1'000'000'001);  // exact to the ns
  EXPECT_EQ((*requests)[2].request_id, 2u);
  auto format = DetectTraceFormat(path);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, "vidur");
}

TEST(VidurReaderTest, BadValueNamesLineAndColumn) {
  auto reader = OpenVidurTrace(
      WriteTempFile("badvidur.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n0.5,1.5,1\n"), {});
  ASSERT_TRUE(reader.ok());
  absl::Status status = ReadAll(**reader).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("badvidur.csv:3: num_prefill_tokens: expected an integer"), absl::string_view::npos)
      << status;
}

TEST(VidurReaderTest, DuplicateColumnIsRefusedNamingIt) {
  // Every value valid: without the check the first num_prefill_tokens column (1) was taken, the second (2) ignored.
  auto reader = OpenVidurTrace(WriteTempFile("dupcol.csv",
                                             "\n"
                                             "arrived_at,num_prefill_tokens,num_decode_tokens,num_prefill_tokens\n"
                                             "0,1,1,2\n"),
                               {});
  const absl::Status status = reader.ok() ? ReadAll(**reader).status() : reader.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("dupcol.csv:2:4: duplicated column 'num_prefill_tokens' (first in column 2)"),
            absl::string_view::npos)
      << status;
}

}  // namespace
}  // namespace kvsim
