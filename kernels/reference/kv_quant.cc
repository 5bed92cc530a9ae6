#include "kernels/reference/kv_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// The 127 non-negative finite e4m3 values, by code (0x00 .. 0x7e), increasing.
const std::array<double, 127>& Fp8PositiveValues() {
  static const std::array<double, 127> values = [] {
    std::array<double, 127> v{};
    for (int code = 0; code < 127; ++code) v[code] = Fp8E4m3ToDouble(static_cast<uint8_t>(code));
    return v;
  }();
  return values;
}

int Levels(KvDtype dtype) { return (1 << KvDtypeBits(dtype)) - 1; }

void PutCode(std::vector<uint8_t>& data, int64_t row_byte, int c, int bits, int code) {
  const int per_byte = 8 / bits;
  data[row_byte + c / per_byte] |= static_cast<uint8_t>(code << ((c % per_byte) * bits));
}

int GetCode(const std::vector<uint8_t>& data, int64_t row_byte, int c, int bits) {
  const int per_byte = 8 / bits;
  return (data[row_byte + c / per_byte] >> ((c % per_byte) * bits)) & ((1 << bits) - 1);
}

// Asymmetric parameters for values in [lo, hi] with `levels` steps: zero = lo, step rounded up to float.
void AsymmetricParams(float lo, float hi, int levels, float* scale, float* zero) {
  *zero = lo;
  const double step = (static_cast<double>(hi) - lo) / levels;
  float s = static_cast<float>(step);
  if (s < step) s = std::nextafter(s, INFINITY);
  *scale = s > 0 ? s : 1.0f;
}

int AsymmetricCode(float x, float scale, float zero, int levels) {
  const double code = std::nearbyint((static_cast<double>(x) - zero) / scale);
  return static_cast<int>(std::min<double>(std::max<double>(code, 0), levels));
}

// Index of (page, head, slot) in the per-(token, head) scale arrays: [pages][H][page_size].
int64_t TokenScaleIndex(const PagedKvLayout& l, int64_t page, int head, int slot) {
  return (page * l.num_kv_heads + head) * l.page_size + slot;
}

void QuantizeScaled(const std::vector<float>& pool, QuantizedKvPool& out) {
  const PagedKvLayout& l = out.layout;
  const bool fp8 = out.dtype == KvDtype::kFp8E4m3;
  out.scale.assign(l.num_pages * l.num_kv_heads * l.page_size, 1.0f);
  for (int64_t p = 0; p < l.num_pages; ++p) {
    for (int slot = 0; slot < l.page_size; ++slot) {
      for (int h = 0; h < l.num_kv_heads; ++h) {
        const int64_t row = l.RowOffset(p, slot, h);
        float amax = 0;
        for (int c = 0; c < l.head_dim; ++c) amax = std::max(amax, std::fabs(pool[row + c]));
        const float s = amax > 0 ? amax / (fp8 ? 448.0f : 127.0f) : 1.0f;
        out.scale[TokenScaleIndex(l, p, h, slot)] = s;
        for (int c = 0; c < l.head_dim; ++c) {
          const double x = static_cast<double>(pool[row + c]) / s;
          out.data[row + c] =
              fp8 ? DoubleToFp8E4m3(x)
                  : static_cast<uint8_t>(static_cast<int8_t>(std::min(127.0, std::max(-127.0, std::nearbyint(x)))));
        }
      }
    }
  }
}

void QuantizeKeysPerChannel(const std::vector<float>& pool, QuantizedKvPool& out) {
  const PagedKvLayout& l = out.layout;
  const int bits = KvDtypeBits(out.dtype), levels = Levels(out.dtype);
  const int gt = KeyGroupTokens(out.group_size, l.page_size), groups = l.page_size / gt;
  const int64_t row_bytes = RowBytes(out.dtype, l.head_dim);
  out.scale.assign(l.num_pages * l.num_kv_heads * groups * l.head_dim, 1.0f);
  out.zero.assign(out.scale.size(), 0.0f);
  for (int64_t p = 0; p < l.num_pages; ++p) {
    for (int h = 0; h < l.num_kv_heads; ++h) {
      for (int g = 0; g < groups; ++g) {
        for (int c = 0; c < l.head_dim; ++c) {
          float lo = INFINITY, hi = -INFINITY;
          for (int slot = g * gt; slot < (g + 1) * gt; ++slot) {
            lo = std::min(lo, pool[l.RowOffset(p, slot, h) + c]);
            hi = std::max(hi, pool[l.RowOffset(p, slot, h) + c]);
          }
          const int64_t param = ((p * l.num_kv_heads + h) * groups + g) * l.head_dim + c;
          AsymmetricParams(lo, hi, levels, &out.scale[param], &out.zero[param]);
          for (int slot = g * gt; slot < (g + 1) * gt; ++slot) {
            const int code =
                AsymmetricCode(pool[l.RowOffset(p, slot, h) + c], out.scale[param], out.zero[param], levels);
            PutCode(out.data, (l.RowOffset(p, slot, h) / l.head_dim) * row_bytes, c, bits, code);
          }
        }
      }
    }
  }
}

void QuantizeValuesPerToken(const std::vector<float>& pool, QuantizedKvPool& out) {
  const PagedKvLayout& l = out.layout;
  const int bits = KvDtypeBits(out.dtype), levels = Levels(out.dtype);
  const int groups = l.head_dim / out.group_size;
  const int64_t row_bytes = RowBytes(out.dtype, l.head_dim);
  out.scale.assign(l.num_pages * l.num_kv_heads * l.page_size * groups, 1.0f);
  out.zero.assign(out.scale.size(), 0.0f);
  for (int64_t p = 0; p < l.num_pages; ++p) {
    for (int slot = 0; slot < l.page_size; ++slot) {
      for (int h = 0; h < l.num_kv_heads; ++h) {
        const int64_t row = l.RowOffset(p, slot, h);
        for (int g = 0; g < groups; ++g) {
          const auto begin = pool.begin() + row + g * out.group_size;
          const auto [lo, hi] = std::minmax_element(begin, begin + out.group_size);
          const int64_t param = TokenScaleIndex(l, p, h, slot) * groups + g;
          AsymmetricParams(*lo, *hi, levels, &out.scale[param], &out.zero[param]);
          for (int c = g * out.group_size; c < (g + 1) * out.group_size; ++c) {
            PutCode(out.data, (row / l.head_dim) * row_bytes, c, bits,
                    AsymmetricCode(pool[row + c], out.scale[param], out.zero[param], levels));
          }
        }
      }
    }
  }
}

}  // namespace

uint16_t FloatToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

double Fp8E4m3ToDouble(uint8_t bits) {
  const int sign = bits >> 7, exponent = (bits >> 3) & 0xf, mantissa = bits & 7;
  if (exponent == 15 && mantissa == 7) return std::nan("");
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa / 8.0, -6) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

uint8_t DoubleToFp8E4m3(double x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(x);
  const std::array<double, 127>& v = Fp8PositiveValues();
  if (a >= v[126]) return sign | 126;  // saturate at 448
  // First value >= a; the nearest is it or its predecessor (ties to the even code).
  const int hi = static_cast<int>(std::lower_bound(v.begin(), v.end(), a) - v.begin());
  if (hi == 0) return sign;
  const int lo = hi - 1;
  const double dlo = a - v[lo], dhi = v[hi] - a;
  const int code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<uint8_t>(code);
}

absl::StatusOr<QuantizedKvPool> QuantizeKvPool(const std::vector<float>& pool, const PagedKvLayout& layout,
                                               KvDtype dtype, int group_size, bool is_key) {
  if (static_cast<int64_t>(pool.size()) != layout.NumElements()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KV pool has %d values; the layout needs %d", pool.size(), layout.NumElements()));
  }
  if (layout.head_dim % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("head_dim %d is not a multiple of 8", layout.head_dim));
  }
  KVSIM_RETURN_IF_ERROR(ValidateQuantGroup(dtype, group_size, layout));
  QuantizedKvPool out;
  out.dtype = dtype;
  out.group_size = group_size;
  out.is_key = is_key;
  out.layout = layout;
  const int64_t rows = layout.NumElements() / layout.head_dim;
  out.data.assign(rows * RowBytes(dtype, layout.head_dim), 0);
  switch (dtype) {
    case KvDtype::kBf16:
      for (int64_t i = 0; i < layout.NumElements(); ++i) {
        const uint16_t b = FloatToBf16(pool[i]);
        out.data[2 * i] = static_cast<uint8_t>(b & 0xff);
        out.data[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
      break;
    case KvDtype::kFp8E4m3:
    case KvDtype::kInt8:
      QuantizeScaled(pool, out);
      break;
    case KvDtype::kInt4:
    case KvDtype::kInt2:
      if (is_key) {
        QuantizeKeysPerChannel(pool, out);
      } else {
        QuantizeValuesPerToken(pool, out);
      }
      break;
  }
  return out;
}

std::vector<float> DequantizeKvPool(const QuantizedKvPool& q) {
  const PagedKvLayout& l = q.layout;
  std::vector<float> out(l.NumElements());
  const int bits = KvDtypeBits(q.dtype);
  const int64_t row_bytes = RowBytes(q.dtype, l.head_dim);
  for (int64_t p = 0; p < l.num_pages; ++p) {
    for (int slot = 0; slot < l.page_size; ++slot) {
      for (int h = 0; h < l.num_kv_heads; ++h) {
        const int64_t row = l.RowOffset(p, slot, h), row_byte = (row / l.head_dim) * row_bytes;
        for (int c = 0; c < l.head_dim; ++c) {
          double x = 0;
          switch (q.dtype) {
            case KvDtype::kBf16:
              x = Bf16ToFloat(static_cast<uint16_t>(q.data[2 * (row + c)] | (q.data[2 * (row + c) + 1] << 8)));
              break;
            case KvDtype::kFp8E4m3:
              x = Fp8E4m3ToDouble(q.data[row + c]) * q.scale[TokenScaleIndex(l, p, h, slot)];
              break;
            case KvDtype::kInt8:
              x = static_cast<int8_t>(q.data[row + c]) * static_cast<double>(q.scale[TokenScaleIndex(l, p, h, slot)]);
              break;
            case KvDtype::kInt4:
            case KvDtype::kInt2: {
              int64_t param;
              if (q.is_key) {
                const int gt = KeyGroupTokens(q.group_size, l.page_size), groups = l.page_size / gt;
                param = ((p * l.num_kv_heads + h) * groups + slot / gt) * l.head_dim + c;
              } else {
                param = TokenScaleIndex(l, p, h, slot) * (l.head_dim / q.group_size) + c / q.group_size;
              }
              x = GetCode(q.data, row_byte, c, bits) * static_cast<double>(q.scale[param]) + q.zero[param];
              break;
            }
          }
          out[row + c] = static_cast<float>(x);
        }
      }
    }
  }
  return out;
}

}  // namespace kvsim
