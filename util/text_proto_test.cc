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

TEST(TextProtoTest, StringThatIsNotUtf8IsRefusedWithItsPosition) {
  proto::ModelSpec spec;
  // "\xc3\x28": a two-byte lead followed by an ASCII byte (found by the input mutation test: a config's
  // name with a flipped byte was accepted, and a results file recording it would not read back).
  absl::Status status = ParseTextProto("num_layers: 2\nname: \"mu\xc3\x28nt\"\n", "cfg.textproto", &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "cfg.textproto:2:1: field name: not valid UTF-8 (string fields hold UTF-8 text)");
  // Escapes count as the bytes they make: an overlong form (C0 80), a surrogate (ED A0 80), a truncated
  // sequence and a code point past U+10FFFF (F4 90 80 80) are refused; valid two-, three- and four-byte
  // characters are kept.
  for (const std::string bad : {"\\300\\200", "\\355\\240\\200", "a\\342\\202", "\\364\\220\\200\\200", "\\377"}) {
    EXPECT_FALSE(ParseTextProto("name: \"" + bad + "\"", "x", &spec).ok()) << bad;
  }
  ASSERT_TRUE(ParseTextProto("name: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", "x", &spec).ok());
  EXPECT_EQ(spec.name(), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
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

TEST(TextProtoTest, FieldPositionInTextFindsNestedAndRepeatedFields) {
  const std::string text =
      "name: \"gpu\"\n"
      "fitted {\n"
      "  all_reduce { num_gpus: 2 }\n"
      "  all_reduce {\n"
      "    num_gpus: 4  latency_ns: 9\n"
      "  }\n"
      "}\n";
  const proto::DeviceSpec& type = proto::DeviceSpec::default_instance();
  EXPECT_EQ(FieldPositionInText(text, type, "name"), "1:1");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted"), "2:1");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce[0].num_gpus"), "3:16");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce[1]"), "4:3");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce[1].latency_ns"), "5:18");
  // Not set by the text, not a field, the wrong shape of index, or a text that does not parse: no position.
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce[2].num_gpus"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce[0].latency_ns"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "peak_fp32_flops"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.nope"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted[0]"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "fitted.all_reduce.num_gpus"), "");
  EXPECT_EQ(FieldPositionInText(text, type, "name.x"), "");
  EXPECT_EQ(FieldPositionInText("fitted {", type, "fitted"), "");
}

}  // namespace
}  // namespace kvsim
