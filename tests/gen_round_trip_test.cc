// Generated workloads through the real trace I/O: kvsim gen's GenerateTraceFile writes native and JSONL
// files that read back as exactly the requests generated in memory, byte-identical across runs; and
// specs that replay arrivals from / resample lengths of the bundled real traces use them exactly.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "traces/generators/generate_trace.h"
#include "traces/generators/workload_generator.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

const TraceOpener kOpenTrace = [](const std::string& path) { return OpenTrace(path, TraceOptions{}); };
const TraceWriterOpener kOpenWriter = [](const std::string& path, const std::string& format, int32_t block_tokens) {
  TraceWriterOptions options;
  options.block_tokens = block_tokens;
  options.source_format = "generated";
  return OpenTraceWriter(path, format, options);
};

proto::WorkloadSpec LoadPreset(const std::string& name) {
  proto::WorkloadSpec spec;
  const absl::Status status = ParseTextProtoFile("presets/workloads/" + name + ".textproto", &spec);
  EXPECT_TRUE(status.ok()) << status;
  return spec;
}

std::vector<Request> GenerateInMemory(const proto::WorkloadSpec& spec, uint64_t seed) {
  std::vector<Request> out;
  const absl::Status status = GenerateWorkload(
      spec, seed,
      [&](const Request& r) {
        out.push_back(r);
        return absl::OkStatus();
      },
      kOpenTrace);
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

class GenRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GenRoundTripTest, FilesReadBackAsGeneratedAndAreByteIdenticalAcrossRuns) {
  proto::WorkloadSpec spec = LoadPreset(GetParam());
  spec.set_num_requests(1000);
  spec.set_duration_s(0);
  const std::vector<Request> expected = GenerateInMemory(spec, 5);
  ASSERT_EQ(expected.size(), 1000u);
  for (const std::string ext : {".kvt", ".jsonl"}) {
    SCOPED_TRACE(ext);
    const std::string a = ::testing::TempDir() + "/" + GetParam() + ".a" + ext;
    const std::string b = ::testing::TempDir() + "/" + GetParam() + ".b" + ext;
    absl::StatusOr<GenerateSummary> summary = GenerateTraceFile(spec, 5, a, kOpenTrace, kOpenWriter);
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_TRUE(GenerateTraceFile(spec, 5, b, kOpenTrace, kOpenWriter).ok());
    EXPECT_EQ(*ReadFile(a), *ReadFile(b));
    absl::StatusOr<std::vector<Request>> back = ReadAll(a, {});
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(RequestDifference((*back)[i], expected[i]), "") << "request " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, GenRoundTripTest, ::testing::Values("poisson-fixed", "chat", "agent", "diurnal-mix"));

// Replayed arrivals are the Mooncake trace's arrival times, in order (one single-turn request each), and
// resampled input lengths are values of the Azure trace's ContextTokens.
TEST(GenRealTraceTest, ReplayMooncakeArrivalsResampleAzureLengths) {
  proto::WorkloadSpec spec;
  ASSERT_TRUE(ParseTextProto(absl::StrCat(R"(
      arrivals { replay { trace_path: ")",
                                          DataPath("mooncake_synthetic.jsonl"), R"(" } }
      classes { single_turn {
        input_tokens { resample { trace_path: ")",
                                          DataPath("azure_code_2023.csv"), R"("
                                  field: FIELD_INPUT_TOKENS } }
        output_tokens { fixed { value: 1 } } } })"),
                             "test", &spec)
                  .ok());
  absl::StatusOr<std::vector<Request>> mooncake = ReadAll(DataPath("mooncake_synthetic.jsonl"), {});
  absl::StatusOr<std::vector<Request>> azure = ReadAll(DataPath("azure_code_2023.csv"), {});
  ASSERT_TRUE(mooncake.ok() && azure.ok());
  std::set<int64_t> azure_inputs;
  for (const Request& r : *azure) azure_inputs.insert(r.input_tokens);
  const std::vector<Request> generated = GenerateInMemory(spec, 1);
  ASSERT_EQ(generated.size(), mooncake->size());  // 3,993 requests
  std::set<int64_t> seen;
  for (size_t i = 0; i < generated.size(); ++i) {
    ASSERT_EQ(generated[i].arrival_ns, (*mooncake)[i].arrival_ns) << i;
    ASSERT_EQ(azure_inputs.count(generated[i].input_tokens), 1u) << generated[i].input_tokens;
    seen.insert(generated[i].input_tokens);
  }
  EXPECT_GT(seen.size(), 100u);  // many distinct values drawn, not one
}

}  // namespace
}  // namespace kvsim
