#include "config/kv_format.h"

#include "absl/strings/str_cat.h"
#include "config/model_spec.h"

namespace kvsim {

double KvFormat::BytesPerElement() const {
  double bytes = bits / 8.0;
  if (group_size > 0) bytes += static_cast<double>(scale_bytes_per_group) / group_size;
  return bytes;
}

double KvFormat::DequantOpsPerElement() const {
  if (is_fp8) return 1;
  if (!is_integer) return 0;
  return bits >= 8 ? 2 : 3;
}

std::string KvFormat::Name() const {
  if (is_fp8) return group_size > 0 ? absl::StrCat("fp8-g", group_size) : "fp8";
  if (!is_integer) return bits == 32 ? "fp32" : "bf16";
  return absl::StrCat("int", bits, "-g", group_size);
}

double KvBytesPerTokenPerLayer(int64_t kv_heads, int64_t head_dim, const KvFormat& kv) {
  return 2.0 * kv_heads * head_dim * kv.BytesPerElement();
}

double KvBytesPerToken(const proto::ModelSpec& model, const KvFormat& kv) {
  return model.num_layers() * KvBytesPerTokenPerLayer(KvHeadsPerGpu(model), model.head_dim(), kv);
}

absl::StatusOr<KvFormat> ResolveKvFormat(const proto::ModelSpec& model, const proto::CostModelConfig& cost) {
  KvFormat kv;
  const int quant_bits = cost.kv_quant_bits();
  switch (quant_bits) {
    case 0:
      break;
    case 2:
    case 3:
    case 4:
    case 8:
      kv.bits = quant_bits;
      kv.is_integer = true;
      break;
    case 16:
      kv.bits = 16;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("field cost_model.kv_quant_bits: must be 0, 2, 3, 4, 8 or 16, got ", quant_bits));
  }
  if (quant_bits == 0) {
    switch (model.kv_dtype()) {
      case proto::DTYPE_FP32:
        kv.bits = 32;
        break;
      case proto::DTYPE_BF16:
      case proto::DTYPE_FP16:
        kv.bits = 16;
        break;
      case proto::DTYPE_FP8:
        kv.bits = 8;
        kv.is_fp8 = true;
        break;
      case proto::DTYPE_INT8:
        kv.bits = 8;
        kv.is_integer = true;
        break;
      case proto::DTYPE_INT4:
        kv.bits = 4;
        kv.is_integer = true;
        break;
      default:
        return absl::InvalidArgumentError("field model.kv_dtype: must be a known DType");
    }
  }
  if (cost.kv_quant_group_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field cost_model.kv_quant_group_size: must be >= 0, got ", cost.kv_quant_group_size()));
  }
  if (cost.kv_scale_bytes_per_group() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("field cost_model.kv_scale_bytes_per_group: must be >= 0, got ",
                                                   cost.kv_scale_bytes_per_group()));
  }
  if (kv.is_integer || (kv.is_fp8 && cost.kv_quant_group_size() > 0)) {
    kv.group_size = cost.kv_quant_group_size() > 0 ? cost.kv_quant_group_size() : model.head_dim();
    kv.scale_bytes_per_group = cost.kv_scale_bytes_per_group() > 0 ? cost.kv_scale_bytes_per_group() : 4;
    if (kv.group_size <= 0) {
      return absl::InvalidArgumentError(
          "field cost_model.kv_quant_group_size: 0 (the head dimension) needs model.head_dim, which is not set");
    }
  }
  return kv;
}

}  // namespace kvsim
