#include "traces/attention/attention_trace.h"

#include <limits>

#include "gtest/gtest.h"
#include "traces/attention/synthetic_trace.h"

namespace kvsim {
namespace {

SyntheticTrace Small() {
  SyntheticTraceOptions o;
  o.num_layers = 2;
  o.num_kv_heads = 2;
  o.group_size = 2;
  o.head_dim = 40;
  o.prompt_len = 32;
  o.decode_steps = 4;
  o.query_window = 8;
  return GenerateSyntheticTrace(o);
}

TEST(AttentionTraceTest, GeneratedTraceIsValid) {
  SyntheticTrace t = Small();
  EXPECT_TRUE(ValidateHeader(t.header).ok());
  EXPECT_TRUE(ValidateSample(t.header, t.samples[0]).ok());
  EXPECT_EQ(t.header.group_size(), 2);
  EXPECT_EQ(t.samples[0].seq_len(), 36);
  EXPECT_EQ(t.samples[0].num_queries(), 12);  // 8 window + 4 decode
}

TEST(AttentionTraceTest, HeaderErrorsNameTheField) {
  SyntheticTrace t = Small();
  AttentionTraceHeader h = t.header;
  h.num_query_heads = 3;  // not a multiple of 2 KV heads
  absl::Status s = ValidateHeader(h);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a multiple"), std::string::npos) << s;
  h = t.header;
  h.kept_layers = {1, 0};
  s = ValidateHeader(h);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kept_layers"), std::string::npos) << s;
  h = t.header;
  h.kept_kv_heads = {2};  // only 2 KV heads: index 2 is out of range
  EXPECT_NE(ValidateHeader(h).message().find("outside [0, 2)"), std::string::npos);
  h = t.header;
  h.rope.base = std::numeric_limits<double>::infinity();
  EXPECT_NE(ValidateHeader(h).message().find("rope base must be positive and finite, got inf"), std::string::npos);
  h = t.header;
  h.rope.scaling = RopeScaling::kLinear;
  h.rope.scaling_factor = 0;
  EXPECT_NE(ValidateHeader(h).message().find("rope scaling factor must be positive and finite, got 0"),
            std::string::npos);
  h.rope.scaling = RopeScaling::kNone;  // the factor is not read
  EXPECT_TRUE(ValidateHeader(h).ok());
}

TEST(AttentionTraceTest, SampleErrorsNameHeadAndField) {
  SyntheticTrace t = Small();
  AttentionSample s = t.samples[0];
  s.heads[3].values.pop_back();
  absl::Status status = ValidateSample(t.header, s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("head record 3: values has 1439 values, expected 1440"), std::string::npos)
      << status;  // 36 positions x 40 channels = 1440
  s = t.samples[0];
  std::swap(s.heads[0], s.heads[1]);
  EXPECT_NE(ValidateSample(t.header, s).message().find("expected (0, 0)"), std::string::npos);
  s = t.samples[0];
  s.query_start = 33;
  EXPECT_NE(ValidateSample(t.header, s).message().find("query_start"), std::string::npos);
  s = t.samples[0];
  s.token_ids = {1, 2, 3};
  EXPECT_NE(ValidateSample(t.header, s).message().find("token_ids"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
