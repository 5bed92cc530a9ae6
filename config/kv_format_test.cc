#include "config/kv_format.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

proto::ModelSpec Model(proto::DType kv_dtype) {
  proto::ModelSpec m;
  m.set_head_dim(128);
  m.set_kv_dtype(kv_dtype);
  return m;
}

TEST(KvFormatTest, BytesPerElementByHand) {
  proto::CostModelConfig cost;
  // bf16: 2 bytes, no scales.
  EXPECT_DOUBLE_EQ(ResolveKvFormat(Model(proto::DTYPE_BF16), cost)->BytesPerElement(), 2.0);
  // fp8: 1 byte, per-tensor scale (no per-element bytes).
  EXPECT_DOUBLE_EQ(ResolveKvFormat(Model(proto::DTYPE_FP8), cost)->BytesPerElement(), 1.0);
  // int8, one fp16 scale + zero (4 bytes) per token and head of 128 elements: 1 + 4/128 = 1.03125.
  EXPECT_DOUBLE_EQ(ResolveKvFormat(Model(proto::DTYPE_INT8), cost)->BytesPerElement(), 1.03125);
  // int4 g128: 0.5 + 4/128 = 0.53125.
  EXPECT_DOUBLE_EQ(ResolveKvFormat(Model(proto::DTYPE_INT4), cost)->BytesPerElement(), 0.53125);
  // 2-bit g32 (KIVI-like) via kv_quant_bits: 0.25 + 4/32 = 0.375.
  cost.set_kv_quant_bits(2);
  cost.set_kv_quant_group_size(32);
  absl::StatusOr<KvFormat> kivi = ResolveKvFormat(Model(proto::DTYPE_BF16), cost);
  ASSERT_TRUE(kivi.ok()) << kivi.status();
  EXPECT_DOUBLE_EQ(kivi->BytesPerElement(), 0.375);
  EXPECT_EQ(kivi->Name(), "int2-g32");
  EXPECT_DOUBLE_EQ(kivi->DequantOpsPerElement(), 3.0);
}

TEST(KvFormatTest, RejectsUnsupportedBitsNamingTheField) {
  proto::CostModelConfig cost;
  cost.set_kv_quant_bits(5);
  absl::StatusOr<KvFormat> kv = ResolveKvFormat(Model(proto::DTYPE_BF16), cost);
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(kv.status().message().find("cost_model.kv_quant_bits"), absl::string_view::npos);
  cost.set_kv_quant_bits(4);
  cost.set_kv_quant_group_size(-1);
  EXPECT_EQ(ResolveKvFormat(Model(proto::DTYPE_BF16), cost).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
