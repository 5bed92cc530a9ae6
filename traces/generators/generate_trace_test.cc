#include "traces/generators/generate_trace.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// Records what it is given; fails the Nth write if asked to.
class FakeWriter final : public TraceWriter {
 public:
  FakeWriter(std::vector<Request>* written, bool* closed, int fail_at)
      : written_(written), closed_(closed), fail_at_(fail_at) {}
  absl::Status Write(const Request& request) override {
    if (static_cast<int>(written_->size()) + 1 == fail_at_) return absl::ResourceExhaustedError("disk full");
    written_->push_back(request);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    *closed_ = true;
    return absl::OkStatus();
  }

 private:
  std::vector<Request>* written_;
  bool* closed_;
  int fail_at_;
};

struct Opened {
  std::string path, format;
  int32_t block_tokens = -1;
  std::vector<Request> written;
  bool closed = false;
};

TraceWriterOpener FakeOpener(Opened* opened, int fail_at = -1) {
  return [opened, fail_at](const std::string& path, const std::string& format,
                           int32_t block_tokens) -> absl::StatusOr<std::unique_ptr<TraceWriter>> {
    opened->path = path, opened->format = format, opened->block_tokens = block_tokens;
    return std::unique_ptr<TraceWriter>(new FakeWriter(&opened->written, &opened->closed, fail_at));
  };
}

proto::WorkloadSpec Spec(const std::string& text) {
  proto::WorkloadSpec spec;
  EXPECT_TRUE(ParseTextProto(text, "test", &spec).ok());
  return spec;
}

TEST(GenerateTraceTest, FormatFollowsTheExtension) {
  EXPECT_EQ(TraceFormatForPath("a/b.jsonl"), "jsonl");
  EXPECT_EQ(TraceFormatForPath("b.kvt"), "native");
  EXPECT_EQ(TraceFormatForPath("jsonl"), "native");
}

// 10 chat sessions of 2 turns, 100 + 50 tokens, 32-token blocks: turn 1 input 100 (4 blocks), turn 2
// input 100 + 50 + 100 = 250 (8 blocks); 20 requests, 10 sessions, input 10 x 350 = 3,500 tokens, output
// 20 x 50 = 1,000, block references 10 x 12 = 120.
TEST(GenerateTraceTest, WritesEveryRequestAndSummarises) {
  const proto::WorkloadSpec spec = Spec(R"(
    block_tokens: 32
    num_requests: 20
    arrivals { poisson {} rate_per_s: 0.001 }
    classes { chat { turns { fixed { value: 2 } } input_tokens { fixed { value: 100 } }
                     output_tokens { fixed { value: 50 } } } })");
  Opened opened;
  absl::StatusOr<GenerateSummary> s = GenerateTraceFile(spec, 3, "out.jsonl", nullptr, FakeOpener(&opened));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(opened.path, "out.jsonl");
  EXPECT_EQ(opened.format, "jsonl");
  EXPECT_EQ(opened.block_tokens, 32);
  EXPECT_TRUE(opened.closed);
  ASSERT_EQ(opened.written.size(), 20u);
  EXPECT_EQ(s->num_requests, 20);
  EXPECT_EQ(s->num_sessions, 10);
  EXPECT_EQ(s->input_tokens, 3500);
  EXPECT_EQ(s->output_tokens, 1000);
  EXPECT_EQ(s->block_references, 120);
  EXPECT_EQ(s->last_arrival_ns, opened.written.back().arrival_ns);
  EXPECT_EQ(s->seed, 3u);
  const std::string text = FormatGenerateSummary(*s);
  EXPECT_NE(text.find("wrote 20 requests to out.jsonl (jsonl, 32-token blocks, seed 3)"), std::string::npos) << text;
}

TEST(GenerateTraceTest, WriterErrorIsReturnedAndTheFileNotClosed) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 10
    arrivals { poisson {} rate_per_s: 1 }
    classes { single_turn { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } } })");
  Opened opened;
  absl::StatusOr<GenerateSummary> s = GenerateTraceFile(spec, 1, "t.kvt", nullptr, FakeOpener(&opened, 4));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(opened.written.size(), 3u);
  EXPECT_FALSE(opened.closed);
}

TEST(GenerateTraceTest, InvalidSpecOpensNoWriter) {
  Opened opened;
  absl::StatusOr<GenerateSummary> s =
      GenerateTraceFile(Spec("num_requests: 1"), 1, "t.kvt", nullptr, FakeOpener(&opened));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(opened.path.empty());
}

TEST(GenerateTraceTest, SpecErrorsNameTheSpecFileWhenGiven) {
  // `kvsim gen` passes its --spec path, so a value the generator refuses names the file and the field.
  Opened opened;
  absl::StatusOr<GenerateSummary> s =
      GenerateTraceFile(Spec("num_requests: 1"), 1, "t.kvt", nullptr, FakeOpener(&opened), {}, "my_spec.textproto");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message().substr(0, 19), "my_spec.textproto: ") << s.status();
  EXPECT_NE(s.status().message().find("arrivals"), absl::string_view::npos) << s.status();
  // A writer's error is its own, with no spec prefix.
  const proto::WorkloadSpec spec = Spec(
      "num_requests: 5 arrivals { poisson {} rate_per_s: 10 } "
      "classes { single_turn { input_tokens { fixed { value: 8 } } output_tokens { fixed { value: 1 } } } }");
  s = GenerateTraceFile(spec, 1, "t.kvt", nullptr, FakeOpener(&opened, 2), {}, "my_spec.textproto");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.status().message(), "disk full");
}

}  // namespace
}  // namespace kvsim
