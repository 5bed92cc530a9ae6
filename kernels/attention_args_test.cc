#include "kernels/attention_args.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Non-null stand-ins: the checks look at pointers, never through them.
DecodeArgs ValidDecodeArgs() {
  static float buffer[16];
  static DecodeWorkItem item;
  static int32_t ints[2];
  DecodeArgs a;
  a.layout = PagedKvLayout{4, 16, 8, 128};
  a.num_q_heads = 32;
  a.softmax_scale = 0.088;
  a.q = buffer;
  a.k.data = a.v.data = buffer;
  a.page_table = ints;
  a.items = &item;
  a.num_items = 1;
  a.item_begin = ints;
  a.num_requests = 1;
  a.partial_o = a.partial_lse = a.out_o = a.out_lse = buffer;
  return a;
}

TEST(AttentionArgsTest, AcceptsTheSupportedShapes) {
  EXPECT_TRUE(CheckDecodeArgs(ValidDecodeArgs()).ok());
  DecodeArgs a = ValidDecodeArgs();
  a.num_q_heads = 8;  // GQA 1
  EXPECT_TRUE(CheckDecodeArgs(a).ok());
}

TEST(AttentionArgsTest, RejectsUnsupportedShapesNamingThem) {
  DecodeArgs a = ValidDecodeArgs();
  a.layout.head_dim = 64;
  absl::Status s = CheckDecodeArgs(a);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("head_dim must be 128 (got 64)"), std::string::npos) << s;

  a = ValidDecodeArgs();
  a.layout.page_size = 24;
  s = CheckDecodeArgs(a);
  EXPECT_NE(s.message().find("page_size must be a positive multiple of 16 (got 24)"), std::string::npos) << s;

  a = ValidDecodeArgs();
  a.num_q_heads = 48;  // GQA 6
  s = CheckDecodeArgs(a);
  EXPECT_NE(s.message().find("must be 1, 2, 4 or 8 (got 6)"), std::string::npos) << s;

  a = ValidDecodeArgs();
  a.dtype = KvDtype::kInt4;
  a.group_size = 128;
  s = CheckDecodeArgs(a);  // int4 needs scales and zeros
  EXPECT_NE(s.message().find("a device array the launch needs is null"), std::string::npos) << s;

  a = ValidDecodeArgs();
  a.direct = true;
  a.num_items = 2;
  s = CheckDecodeArgs(a);
  EXPECT_NE(s.message().find("direct output needs one item per request"), std::string::npos) << s;

  PrefillArgs p;
  p.layout = PagedKvLayout{4, 16, 8, 128};
  p.softmax_scale = 0.1;
  s = CheckPrefillArgs(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("prefill: a device array the launch needs is null"), std::string::npos) << s;
}

}  // namespace
}  // namespace kvsim
