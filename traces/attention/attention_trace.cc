#include "traces/attention/attention_trace.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "traces/attention/half.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status CheckAscending(const std::vector<int32_t>& values, int32_t limit, const char* field) {
  if (values.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] >= limit) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "] = ", values[i], " is outside [0, ", limit, ")"));
    }
    if (i > 0 && values[i] <= values[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(field, " is not strictly ascending at index ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSize(size_t actual, int64_t expected, int head, const char* field) {
  if (static_cast<int64_t>(actual) == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("head record ", head, ": ", field, " has ", actual, " values, expected ", expected));
}

// x stored at `dtype` and read back (exact for float32).
float Stored(float x, AttentionDType dtype) {
  switch (dtype) {
    case AttentionDType::kFloat16:
      return HalfToFloat(FloatToHalf(x));
    case AttentionDType::kBFloat16:
      return BFloat16ToFloat(FloatToBFloat16(x));
    default:
      return x;
  }
}

// The index of the first entry of x that is not finite at `dtype`, or -1.
int64_t FirstUnstorable(const std::vector<float>& x, AttentionDType dtype) {
  // Fast test first (vectorised): every entry finite and well inside the dtype's range.
  const Eigen::Map<const Eigen::ArrayXf> a(x.data(), static_cast<Eigen::Index>(x.size()));
  const float safe = dtype == AttentionDType::kFloat16 ? 65504.0f : 3.38e38f;
  if (x.empty() || (a.isFinite().all() && a.abs().maxCoeff() <= safe)) return -1;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(Stored(x[i], dtype))) return static_cast<int64_t>(i);
  }
  return -1;
}

const char* DTypeName(AttentionDType dtype) {
  switch (dtype) {
    case AttentionDType::kFloat16:
      return "fp16";
    case AttentionDType::kBFloat16:
      return "bf16";
    default:
      return "float32";
  }
}

}  // namespace

absl::Status ValidateHeader(const AttentionTraceHeader& header) {
  if (header.num_layers <= 0 || header.num_query_heads <= 0 || header.num_kv_heads <= 0 || header.head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header: num_layers, num_query_heads, num_kv_heads and head_dim must be positive, got ", header.num_layers,
        ", ", header.num_query_heads, ", ", header.num_kv_heads, ", ", header.head_dim));
  }
  if (header.num_query_heads % header.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("header: num_query_heads ", header.num_query_heads,
                                                   " is not a multiple of num_kv_heads ", header.num_kv_heads));
  }
  if (header.dtype != AttentionDType::kFloat16 && header.dtype != AttentionDType::kBFloat16 &&
      header.dtype != AttentionDType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("header: unknown dtype ", static_cast<uint32_t>(header.dtype)));
  }
  if (!(header.rope.base > 0) || !std::isfinite(header.rope.base)) {
    return absl::InvalidArgumentError(
        absl::StrCat("header: rope base must be positive and finite, got ", header.rope.base));
  }
  if (header.rope.scaling != RopeScaling::kNone &&
      (!(header.rope.scaling_factor > 0) || !std::isfinite(header.rope.scaling_factor))) {
    return absl::InvalidArgumentError(
        absl::StrCat("header: rope scaling factor must be positive and finite, got ", header.rope.scaling_factor));
  }
  if (static_cast<uint32_t>(header.rope.scaling) > static_cast<uint32_t>(RopeScaling::kOther)) {
    return absl::InvalidArgumentError("header: unknown rope scaling type");
  }
  if (auto s = CheckAscending(header.kept_layers, header.num_layers, "header: kept_layers"); !s.ok()) {
    return s;
  }
  return CheckAscending(header.kept_kv_heads, header.num_kv_heads, "header: kept_kv_heads");
}

absl::Status ValidateSample(const AttentionTraceHeader& header, const AttentionSample& sample) {
  if (sample.prompt_len <= 0 || sample.num_decode_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat("prompt_len must be > 0 and num_decode_steps >= 0, got ",
                                                   sample.prompt_len, " and ", sample.num_decode_steps));
  }
  if (sample.query_start < 0 || sample.query_start > sample.prompt_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("query_start ", sample.query_start, " is outside [0, prompt_len = ", sample.prompt_len, "]"));
  }
  const int64_t n = sample.seq_len();
  if (!sample.token_ids.empty() && static_cast<int64_t>(sample.token_ids.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("token_ids has ", sample.token_ids.size(), " entries, expected 0 or ", n));
  }
  for (size_t i = 0; i < sample.boundaries.size(); ++i) {
    const int64_t b = sample.boundaries[i];
    if (b < 0 || b >= n || (i > 0 && b <= sample.boundaries[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("boundaries[", i, "] = ", b, " is not ascending within [0, ", n, ")"));
    }
  }
  const size_t num_heads = header.kept_layers.size() * header.kept_kv_heads.size();
  if (sample.heads.size() != num_heads) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample has ", sample.heads.size(), " head records, expected ", num_heads));
  }
  const int64_t d = header.head_dim;
  const int64_t g = header.group_size();
  for (size_t i = 0; i < num_heads; ++i) {
    const HeadTensors& head = sample.heads[i];
    const int32_t layer = header.kept_layers[i / header.kept_kv_heads.size()];
    const int32_t kv_head = header.kept_kv_heads[i % header.kept_kv_heads.size()];
    if (head.layer != layer || head.kv_head != kv_head) {
      return absl::InvalidArgumentError(absl::StrCat("head record ", i, " is (layer ", head.layer, ", kv head ",
                                                     head.kv_head, "), expected (", layer, ", ", kv_head, ")"));
    }
    const int idx = static_cast<int>(i);
    if (auto s = CheckSize(head.keys.size(), n * d, idx, "keys"); !s.ok()) return s;
    if (auto s = CheckSize(head.values.size(), n * d, idx, "values"); !s.ok()) return s;
    if (auto s = CheckSize(head.queries.size(), g * sample.num_queries() * d, idx, "queries"); !s.ok()) {
      return s;
    }
    if (!head.column_sums.empty()) {
      if (auto s = CheckSize(head.column_sums.size(), g * sample.prompt_len, idx, "column_sums"); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHeadValues(const AttentionTraceHeader& header, const AttentionSample& sample, size_t h) {
  const int64_t d = header.head_dim, q = sample.num_queries(), n = sample.prompt_len;
  const HeadTensors& head = sample.heads[h];
  // Each tensor's layout (attention_trace.h), to name an entry in the model's terms.
  enum class Layout { kPositions, kQueries, kColumnSums };
  const struct {
    const char* name;
    const std::vector<float>& x;
    AttentionDType dtype;
    Layout layout;
  } tensors[] = {{"keys", head.keys, header.dtype, Layout::kPositions},
                 {"values", head.values, header.dtype, Layout::kPositions},
                 {"queries", head.queries, header.dtype, Layout::kQueries},
                 {"column_sums", head.column_sums, AttentionDType::kFloat32, Layout::kColumnSums}};
  for (const auto& t : tensors) {
    const int64_t i = FirstUnstorable(t.x, t.dtype);
    if (i < 0) continue;
    std::string where;
    switch (t.layout) {
      case Layout::kPositions:
        where = absl::StrCat("position ", i / d, ", channel ", i % d);
        break;
      case Layout::kQueries:
        where = absl::StrCat("query head ", i / d / q, " of the group, position ", sample.query_start + i / d % q,
                             ", channel ", i % d);
        break;
      case Layout::kColumnSums:
        where = absl::StrCat("query head ", i / n, " of the group, position ", i % n);
        break;
    }
    const std::string problem =
        std::isfinite(t.x[i]) ? absl::StrCat("overflows ", DTypeName(t.dtype)) : "is not finite";
    return absl::InvalidArgumentError(absl::StrCat("head record ", h, " (layer ", head.layer, ", kv head ",
                                                   head.kv_head, "): ", t.name, "[", i, "] (", where, ") = ", t.x[i],
                                                   " ", problem));
  }
  return absl::OkStatus();
}

absl::Status ValidateSampleValues(const AttentionTraceHeader& header, const AttentionSample& sample) {
  for (size_t h = 0; h < sample.heads.size(); ++h) KVSIM_RETURN_IF_ERROR(ValidateHeadValues(header, sample, h));
  return absl::OkStatus();
}

}  // namespace kvsim
