#include "util/text_proto.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "proto/spec.pb.h"
#include "util/file.h"

namespace kvsim {
namespace {

TEST(TextProtoTest, ParsesFieldsAndEnums) {
  proto::ModelSpec spec;
  ASSERT_TRUE(ParseTextProto("name: \"m\"\nnum_layers: 32\nkv_dtype: DTYPE_FP8\n", "inline", &spec).ok());
  EXPECT_EQ(spec.name(), "m");
  EXPECT_EQ(spec.num_layers(), 32);
  EXPECT_EQ(spec.kv_dtype(), proto::DTYPE_FP8);
}

TEST(TextProtoTest, UndefinedEnumNumberIsRefusedWithItsPosition) {
  proto::ModelSpec spec;
  // DType defines 0..6; 99 and -1 are numbers an open enum's text format accepts.
  absl::Status status = ParseTextProto("name: \"m\"\nkv_dtype: 99\n", "cfg.textproto", &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().substr(0, 45), "cfg.textproto:2:1: field kv_dtype: 99 is not ") << status.message();
  status = ParseTextProto("weight_dtype: -1\n", "cfg.textproto", &spec);
  EXPECT_NE(status.message().find("field weight_dtype: -1 is not a value of DType"), absl::string_view::npos)
      << status.message();
  // A defined number is taken as its value.
  ASSERT_TRUE(ParseTextProto("kv_dtype: 0\n", "cfg.textproto", &spec).ok());
  // Built in code: the same check without positions.
  spec.set_kv_dtype(static_cast<proto::DType>(42));
  status = CheckDefinedEnums(spec, "built");
  EXPECT_EQ(status.message().substr(0, 35), "built: field kv_dtype: 42 is not a ") << status.message();
}

TEST(TextProtoTest, UnknownFieldNamesFileLineAndColumn) {
  proto::ModelSpec spec;
  absl::Status status = ParseTextProto("name: \"m\"\n\n  num_layerz: 3\n", "cfg.textproto", &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // Line 3 (1-based); protobuf puts the column just after the field name (1-based 13).
  EXPECT_EQ(status.message().substr(0, 19), "cfg.textproto:3:13:") << status.message();
  EXPECT_NE(status.message().find("num_layerz"), absl::string_view::npos);
  EXPECT_EQ(status.message().find('\n'), absl::string_view::npos);
}

TEST(TextProtoTest, WrongValueTypeIsAnError) {
  proto::ModelSpec spec;
  absl::Status status = ParseTextProto("num_layers: \"many\"", "x", &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().substr(0, 4), "x:1:");
}

TEST(TextProtoTest, TruncatedMessageIsAnError) {
  proto::ModelSpec spec;
  EXPECT_EQ(ParseTextProto("name: \"unterminated", "x", &spec).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TextProtoTest, FileRoundTrip) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/spec.textproto";
  proto::ModelSpec spec;
  spec.set_name("round");
  spec.set_hidden_size(4096);
  ASSERT_TRUE(WriteFileAtomically(path, ToTextProto(spec)).ok());
  proto::ModelSpec back;
  ASSERT_TRUE(ParseTextProtoFile(path, &back).ok());
  EXPECT_EQ(back.name(), "round");
  EXPECT_EQ(back.hidden_size(), 4096);
  EXPECT_EQ(ParseTextProtoFile(path + ".missing", &back).code(), absl::StatusCode::kNotFound);
  // A byte-order mark before the text is not part of it.
  ASSERT_TRUE(WriteFileAtomically(path, "\xEF\xBB\xBF" + ToTextProto(spec)).ok());
  ASSERT_TRUE(ParseTextProtoFile(path, &back).ok());
  EXPECT_EQ(back.hidden_size(), 4096);
}

}  // namespace
}  // namespace kvsim
