// File: cost_models/calibration_table.h
//
// Reading, writing and checking calibration tables (proto/calibration.proto) in their two forms:
//   - CSV (`.csv`): optional `# key: value` header lines (keys as in CalibrationHeader: gpu_name,
//     driver_version, cuda_version, clocks, tool_revision, date, synthetic_from_datasheet, source), then one
//     row of column names, then one row per point. Columns may come in any order; those not given are 0
//     (dtype: "bf16"); `kind` and `median_ns` are required. Columns: kind, dtype, group_size, batch,
//     query_tokens, context_tokens, num_segments, num_heads, num_kv_heads, head_dim, page_size,
//     in_features, out_features, bytes, num_gpus, median_ns, p10_ns, p90_ns, repetitions.
//     Kinds are written in lower case without the prefix: decode_attention, prefill_attention,
//     segment_merge, kv_projection, mlp_gemm, linear_gemm, all_reduce, host_device_copy.
//   - Text proto (`.textproto`, `.txtpb`, `.pbtxt`): a CalibrationTable message.
// Errors name the file and line (CSV) and the column and what was expected. Stateless functions.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ReadCalibrationTable("h200.csv"));
//   KVSIM_RETURN_IF_ERROR(WriteCalibrationTable("copy.csv", table));
#ifndef KVSIM_COST_MODELS_CALIBRATION_TABLE_H_
#define KVSIM_COST_MODELS_CALIBRATION_TABLE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/calibration.pb.h"

namespace kvsim {

// "decode_attention" etc.; "unspecified" for KERNEL_KIND_UNSPECIFIED.
std::string KernelKindName(proto::KernelKind kind);
// Inverse of KernelKindName (case-insensitive, the KERNEL_KIND_ prefix optional). InvalidArgument
// listing the known names.
absl::StatusOr<proto::KernelKind> ParseKernelKind(absl::string_view name);

// Bits per element of a calibration dtype ("int4" -> 4); 0 for an unknown name.
int CalibrationDTypeBits(absl::string_view dtype);

// Checks one point after defaults are applied: a known kind and dtype, median_ns > 0, non-negative
// shape fields, and the fields its kind needs (e.g. context_tokens >= 0 and head_dim > 0 for attention,
// in/out_features > 0 for GEMMs, bytes > 0 for all-reduce and copies). `where` prefixes the message.
absl::Status ValidateCalibrationPoint(const proto::CalibrationPoint& point, absl::string_view where);

// Fills documented defaults in place: dtype "bf16", batch 1, num_segments 1, query_tokens 1 for decode.
void FillCalibrationDefaults(proto::CalibrationPoint* point);

// FillCalibrationDefaults then ValidateCalibrationPoint on every point of `table`; errors name `source`
// and the point ("t.textproto: points[3]: ...").
absl::Status NormaliseCalibrationPoints(absl::string_view source, proto::CalibrationTable* table);

// Parses the CSV form; `source` names it in errors ("table.csv:12: column median_ns: ...").
absl::StatusOr<proto::CalibrationTable> ParseCalibrationCsv(absl::string_view text, absl::string_view source);
std::string CalibrationTableToCsv(const proto::CalibrationTable& table);

// By extension: text proto for .textproto/.txtpb/.pbtxt, CSV otherwise. Points are validated; defaults
// filled. A table without points (a header-only file) is InvalidArgument naming the file.
absl::StatusOr<proto::CalibrationTable> ReadCalibrationTable(const std::string& path);
// Atomically, in the form the extension names (CSV unless a text-proto extension).
absl::Status WriteCalibrationTable(const std::string& path, const proto::CalibrationTable& table);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_CALIBRATION_TABLE_H_
