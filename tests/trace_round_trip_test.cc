// Round trips on the bundled real traces: import -> native -> jsonl -> native gives back every field of
// every record the importer produced, in order, compressed or not.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"

namespace kvsim {
namespace {

absl::Status Convert(const std::string& in, const std::string& out, const std::string& format, bool compress) {
  auto reader = OpenTrace(in, {});
  if (!reader.ok()) return reader.status();
  TraceWriterOptions options;
  options.block_tokens = (*reader)->info().block_tokens;
  options.source_format = (*reader)->info().format;
  options.compress = compress;
  auto writer = OpenTraceWriter(out, format, options);
  if (!writer.ok()) return writer.status();
  Request r;
  while ((*reader)->Next(&r)) {
    absl::Status status = (*writer)->Write(r);
    if (!status.ok()) return status;
  }
  if (!(*reader)->status().ok()) return (*reader)->status();
  return (*writer)->Close();
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ImportNativeJsonlNativeIsLossless) {
  const std::string source = DataPath(GetParam());
  auto imported = ReadAll(source, {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (bool compress : {true, false}) {
    const std::string dir = ::testing::TempDir() + "/" + GetParam();
    ASSERT_TRUE(Convert(source, dir + ".1.kvt", "native", compress).ok());
    ASSERT_TRUE(Convert(dir + ".1.kvt", dir + ".2.jsonl", "jsonl", compress).ok());
    ASSERT_TRUE(Convert(dir + ".2.jsonl", dir + ".3.kvt", "native", compress).ok());
    for (const std::string& path : {dir + ".1.kvt", dir + ".2.jsonl", dir + ".3.kvt"}) {
      auto back = ReadAll(path, {});
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(back->size(), imported->size()) << path;
      for (size_t i = 0; i < back->size(); ++i) {
        ASSERT_EQ(RequestDifference((*imported)[i], (*back)[i]), "") << path << " record " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BundledTraces, RoundTripTest,
                         ::testing::Values("mooncake_synthetic.jsonl", "azure_code_2023.csv"));

}  // namespace
}  // namespace kvsim
