// File: traces/attention/half.h
//
// Conversions between float32 and the 16-bit payload types of attention traces: IEEE 754 binary16
// (fp16) and bfloat16 (bf16). Round to nearest even; NaN and infinity are preserved; fp16 subnormals are
// handled exactly. Pure functions, thread-safe.
//
// Example:
//   uint16_t bits = FloatToHalf(0.5f);   // 0x3800
//   float x = HalfToFloat(bits);         // 0.5f
#ifndef KVSIM_TRACES_ATTENTION_HALF_H_
#define KVSIM_TRACES_ATTENTION_HALF_H_

#include <cstdint>

namespace kvsim {

// binary16 bits -> float (exact).
float HalfToFloat(uint16_t bits);
// float -> binary16 bits, round to nearest even; overflow gives infinity.
uint16_t FloatToHalf(float value);
// bfloat16 bits -> float (exact: bf16 is the top half of a float).
float BFloat16ToFloat(uint16_t bits);
// float -> bfloat16 bits, round to nearest even; NaN stays NaN.
uint16_t FloatToBFloat16(float value);

}  // namespace kvsim

#endif  // KVSIM_TRACES_ATTENTION_HALF_H_
