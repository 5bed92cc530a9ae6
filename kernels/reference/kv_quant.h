// File: kernels/reference/kv_quant.h
//
// CPU encoders and decoders of the KV storage formats (kernels/layout/kv_layout.h): bf16, fp8 e4m3 and int8 with
// a float scale per (token, head), and asymmetric int4 / 2-bit with float scale and zero per group (keys per
// channel over up to `group_size` tokens of a page, KIVI-style; values per token over `group_size`
// channels). The GPU kernels read exactly these bytes.
//
// Error bounds per element x (|x - Dequantize(Quantize(x))|, before the final rounding to float):
//   bf16:  <= 2^-8 |x|              (8 significant bits: half an ulp is at most 2^-8 of the value)
//   fp8:   <= max(2^-4 |x|, 2^-10 s) with s = amax / 448 of the (token, head): x / s lies in [-448, 448];
//          half a step is 2^-4 of the value in the normal range and 2^-10 in the subnormal one.
//   int8:  <= s / 2 with s = amax / 127 (codes in [-127, 127]; x / s never leaves that range).
//   int4 / 2-bit: <= s / 2 with s >= (max - min) / (2^bits - 1) the stored step: zero = min (exact), and s is
//          rounded up to float, so (x - zero) / s lies in [0, 2^bits - 1] and no code is clamped.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(QuantizedKvPool k4, QuantizeKvPool(k_pool, layout, KvDtype::kInt4, 128, true));
//   std::vector<float> k_back = DequantizeKvPool(k4);
//
// Thread-safety: pure functions.
#ifndef KVSIM_KERNELS_REFERENCE_KV_QUANT_H_
#define KVSIM_KERNELS_REFERENCE_KV_QUANT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/layout/kv_layout.h"

namespace kvsim {

// bf16 with round-to-nearest-even (NaN stays NaN).
uint16_t FloatToBf16(float x);
float Bf16ToFloat(uint16_t bits);
// x rounded to the nearest bf16 value, as float.
inline float RoundToBf16(float x) { return Bf16ToFloat(FloatToBf16(x)); }

// fp8 e4m3 ("fn": no infinities, max 448, 0x7f / 0xff NaN) with round-to-nearest-even, saturating at 448.
uint8_t DoubleToFp8E4m3(double x);
double Fp8E4m3ToDouble(uint8_t bits);

// One K or V pool in a storage format. `scale` and `zero` follow kernels/layout/kv_layout.h (empty where the
// format has none).
struct QuantizedKvPool {
  KvDtype dtype = KvDtype::kBf16;
  int group_size = 0;
  bool is_key = false;
  PagedKvLayout layout;
  std::vector<uint8_t> data;
  std::vector<float> scale;
  std::vector<float> zero;
};

// Bytes of one (token, head) row of codes.
inline int64_t RowBytes(KvDtype dtype, int head_dim) { return int64_t{head_dim} * KvDtypeBits(dtype) / 8; }

// Encodes a float pool (layout.NumElements() values). InvalidArgument on a size mismatch, a bad group
// (ValidateQuantGroup) or head_dim not a multiple of 8.
absl::StatusOr<QuantizedKvPool> QuantizeKvPool(const std::vector<float>& pool, const PagedKvLayout& layout,
                                               KvDtype dtype, int group_size, bool is_key);

// The values the codes stand for, rounded to float.
std::vector<float> DequantizeKvPool(const QuantizedKvPool& pool);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_REFERENCE_KV_QUANT_H_
