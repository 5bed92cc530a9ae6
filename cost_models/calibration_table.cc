#include "cost_models/calibration_table.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "config/field_checks.h"
#include "util/file.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

// Data and invariants:
// - kKindNames is indexed by the proto::KernelKind number: its order must follow the enum in
//   proto/calibration.proto, and a new kind needs a name here.
// - NumericColumns is the one list of numeric columns: what the parser accepts and, in this order, what
//   the writer prints after kind and dtype. Every column's max_int is at most 2^53, so each integer a
//   cell may hold is exact in the double every cell is parsed through; larger values are refused, not
//   rounded.
// Order in ParseCalibrationCsv: `#` lines before the column row are header fields (unknown keys are
// comments) and after it plain comments; the column row must name known columns, each once, including
// kind and median_ns; each data row is checked for its cell count, parsed, given its defaults and only
// then validated, so every point of a returned table is normalised and valid (the text-proto path gets
// the same from NormaliseCalibrationPoints). The writer prints every column of every point (zeros
// included) and real-valued cells with 10 significant digits.
// Cost: not a hot path; tables are read once per run. Parsing is one pass over the text, with a linear
// search of NumericColumns per cell (O(cells x columns), 17 columns); the output is built in one string
// and written atomically.

namespace kvsim {
namespace {

constexpr const char* kKindNames[] = {"unspecified",   "decode_attention", "prefill_attention",
                                      "segment_merge", "kv_projection",    "mlp_gemm",
                                      "linear_gemm",   "all_reduce",       "host_device_copy"};
constexpr int kNumKinds = sizeof(kKindNames) / sizeof(kKindNames[0]);

// One CSV column: how to read it into a point and how to print it.
struct Column {
  const char* name;
  bool is_int;
  double max_int;  // the largest integer the proto field holds (and a double still does: at most 2^53)
  std::function<double(const proto::CalibrationPoint&)> get;
  std::function<void(double, proto::CalibrationPoint*)> set;
};

// Column::max_int of a field of C++ type T.
template <typename T>
constexpr double MaxColumnInteger() {
  if constexpr (std::is_integral_v<T>) {
    return std::min<double>(static_cast<double>(std::numeric_limits<T>::max()), 9007199254740992.0);
  } else {
    return std::numeric_limits<double>::infinity();
  }
}

#define KVSIM_SHAPE_COLUMN(field, is_int)                                                                            \
  Column {                                                                                                           \
#field, is_int, MaxColumnInteger < decltype(std::declval <proto::KernelShape>().field())>(),                     \
        [](const proto::CalibrationPoint&                                                                            \
               p) { return double(p.shape().field()); }, [](double v, proto::CalibrationPoint*                       \
                                                                          p) { p->mutable_shape()->set_##field(v); } \
  }
#define KVSIM_POINT_COLUMN(field, is_int)                                                                              \
  Column {                                                                                                             \
#field, is_int, MaxColumnInteger < decltype(std::declval <proto::CalibrationPoint>().field())>(),                  \
        [](const proto::CalibrationPoint& p) { return double(p.field()); }, [](double v, proto::CalibrationPoint*      \
                                                                                             p) { p->set_##field(v); } \
  }

const std::vector<Column>& NumericColumns() {
  static const auto* columns =
      new std::vector<Column>{KVSIM_POINT_COLUMN(group_size, true),   KVSIM_SHAPE_COLUMN(batch, true),
                              KVSIM_SHAPE_COLUMN(query_tokens, true), KVSIM_SHAPE_COLUMN(context_tokens, true),
                              KVSIM_SHAPE_COLUMN(num_segments, true), KVSIM_SHAPE_COLUMN(num_heads, true),
                              KVSIM_SHAPE_COLUMN(num_kv_heads, true), KVSIM_SHAPE_COLUMN(head_dim, true),
                              KVSIM_SHAPE_COLUMN(page_size, true),    KVSIM_SHAPE_COLUMN(in_features, true),
                              KVSIM_SHAPE_COLUMN(out_features, true), KVSIM_SHAPE_COLUMN(bytes, true),
                              KVSIM_SHAPE_COLUMN(num_gpus, true),     KVSIM_POINT_COLUMN(median_ns, false),
                              KVSIM_POINT_COLUMN(p10_ns, false),      KVSIM_POINT_COLUMN(p90_ns, false),
                              KVSIM_POINT_COLUMN(repetitions, true)};
  return *columns;
}

#undef KVSIM_SHAPE_COLUMN
#undef KVSIM_POINT_COLUMN

bool IsTextProtoPath(absl::string_view path) {
  return absl::EndsWith(path, ".textproto") || absl::EndsWith(path, ".txtpb") || absl::EndsWith(path, ".pbtxt");
}

absl::Status SetHeaderField(absl::string_view key, absl::string_view value, proto::CalibrationHeader* h,
                            const std::string& where) {
  const std::string v(value);
  if (key == "gpu_name") {
    h->set_gpu_name(v);
  } else if (key == "driver_version") {
    h->set_driver_version(v);
  } else if (key == "cuda_version") {
    h->set_cuda_version(v);
  } else if (key == "clocks") {
    h->set_clocks(v);
  } else if (key == "tool_revision") {
    h->set_tool_revision(v);
  } else if (key == "date") {
    h->set_date(v);
  } else if (key == "source") {
    h->set_source(v);
  } else if (key == "synthetic_from_datasheet") {
    if (v != "true" && v != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": synthetic_from_datasheet must be true or false, got '", v, "'"));
    }
    h->set_synthetic_from_datasheet(v == "true");
  }
  // Other `# ...` lines are comments.
  return absl::OkStatus();
}

std::string FormatNumber(double value, bool is_int) {
  if (is_int) return absl::StrCat(static_cast<int64_t>(value));
  return absl::StrFormat("%.10g", value);
}

}  // namespace

std::string KernelKindName(proto::KernelKind kind) {
  const int k = static_cast<int>(kind);
  return k >= 0 && k < kNumKinds ? kKindNames[k] : absl::StrCat("kind_", k);
}

absl::StatusOr<proto::KernelKind> ParseKernelKind(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  absl::string_view n = lower;
  absl::ConsumePrefix(&n, "kernel_kind_");
  for (int k = 1; k < kNumKinds; ++k) {
    if (n == kKindNames[k]) return static_cast<proto::KernelKind>(k);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown kernel kind '", name,
      "'; known: ", absl::StrJoin(std::vector<std::string>(kKindNames + 1, kKindNames + kNumKinds), ", ")));
}

int CalibrationDTypeBits(absl::string_view dtype) {
  static const auto* bits = new std::map<std::string, int, std::less<>>{
      {"fp32", 32}, {"bf16", 16}, {"fp16", 16}, {"fp8", 8}, {"int8", 8}, {"int4", 4}, {"int3", 3}, {"int2", 2}};
  auto it = bits->find(dtype);
  return it == bits->end() ? 0 : it->second;
}

void FillCalibrationDefaults(proto::CalibrationPoint* p) {
  if (p->dtype().empty()) p->set_dtype("bf16");
  proto::KernelShape* s = p->mutable_shape();
  if (s->batch() == 0) s->set_batch(1);
  if (s->num_segments() == 0) s->set_num_segments(1);
  if (p->kind() == proto::KERNEL_KIND_DECODE_ATTENTION && s->query_tokens() == 0) s->set_query_tokens(1);
}

absl::Status ValidateCalibrationPoint(const proto::CalibrationPoint& p, absl::string_view where) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", KernelKindName(p.kind()), " point: ", what));
  };
  if (p.kind() == proto::KERNEL_KIND_UNSPECIFIED || static_cast<int>(p.kind()) >= kNumKinds) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": kind must be one of the known kernel kinds"));
  }
  if (CalibrationDTypeBits(p.dtype()) == 0) {
    return error(absl::StrCat("dtype '", p.dtype(), "' is not one of fp32, bf16, fp16, fp8, int8, int4, int3, int2"));
  }
  // A picosecond at least: no kernel is faster, and the model works in seconds (1e-9 x a smaller value
  // can underflow to zero).
  // An hour at most: no kernel is slower, and iteration times built from it stay within int64 ns.
  if (!(p.median_ns() >= 1e-3 && p.median_ns() <= kMaxDurationNs)) {
    return error(absl::StrCat("median_ns must be a time in [0.001, 3.6e12] ns (at most an hour), got ", p.median_ns()));
  }
  if (!(p.p10_ns() >= 0 && p.p10_ns() <= kMaxDurationNs) || !(p.p90_ns() >= 0 && p.p90_ns() <= kMaxDurationNs) ||
      p.repetitions() < 0 || p.group_size() < 0) {
    return error("p10_ns and p90_ns must be in [0, 3.6e12] ns, repetitions and group_size >= 0");
  }
  // Percentiles of one set of timings are ordered (0 = unknown, left out).
  if ((p.p10_ns() > 0 && p.p10_ns() > p.median_ns()) || (p.p90_ns() > 0 && p.p90_ns() < p.median_ns())) {
    return error(absl::StrCat("p10_ns <= median_ns <= p90_ns expected (0 = unknown), got ", p.p10_ns(), ", ",
                              p.median_ns(), ", ", p.p90_ns()));
  }
  const proto::KernelShape& s = p.shape();
  if (s.batch() < 1 || s.query_tokens() < 0 || s.context_tokens() < 0 || s.num_segments() < 1 || s.num_heads() < 0 ||
      s.num_kv_heads() < 0 || s.head_dim() < 0 || s.page_size() < 0 || s.in_features() < 0 || s.out_features() < 0 ||
      s.bytes() < 0 || s.num_gpus() < 0) {
    return error("shape fields must be >= 0 (batch and num_segments >= 1)");
  }
  switch (p.kind()) {
    case proto::KERNEL_KIND_DECODE_ATTENTION:
    case proto::KERNEL_KIND_PREFILL_ATTENTION:
      if (s.query_tokens() < 1 || s.num_heads() < 1 || s.num_kv_heads() < 1 || s.head_dim() < 1) {
        return error("needs query_tokens, num_heads, num_kv_heads and head_dim >= 1");
      }
      break;
    case proto::KERNEL_KIND_SEGMENT_MERGE:
      if (s.num_heads() < 1 || s.head_dim() < 1) return error("needs num_heads and head_dim >= 1");
      break;
    case proto::KERNEL_KIND_KV_PROJECTION:
    case proto::KERNEL_KIND_MLP_GEMM:
    case proto::KERNEL_KIND_LINEAR_GEMM:
      if (s.query_tokens() < 1 || s.in_features() < 1 || s.out_features() < 1) {
        return error("needs query_tokens, in_features and out_features >= 1");
      }
      break;
    case proto::KERNEL_KIND_ALL_REDUCE:
      if (s.bytes() < 1 || s.num_gpus() < 2) return error("needs bytes >= 1 and num_gpus >= 2");
      break;
    case proto::KERNEL_KIND_HOST_DEVICE_COPY:
      if (s.bytes() < 1) return error("needs bytes >= 1");
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::CalibrationTable> ParseCalibrationCsv(absl::string_view text, absl::string_view source) {
  proto::CalibrationTable table;
  std::vector<std::string> header;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string where = absl::StrCat(source, ":", line_number);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "#")) {
      if (!header.empty()) continue;  // a comment among the rows
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
      KVSIM_RETURN_IF_ERROR(SetHeaderField(absl::StripAsciiWhitespace(kv.first), absl::StripAsciiWhitespace(kv.second),
                                           table.mutable_header(), where));
      continue;
    }
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    for (std::string& cell : cells) cell = std::string(absl::StripAsciiWhitespace(cell));
    if (header.empty()) {
      header = cells;
      bool has_kind = false, has_median = false;
      for (const std::string& name : header) {
        bool known = name == "kind" || name == "dtype";
        for (const Column& c : NumericColumns()) known = known || name == c.name;
        if (!known) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": unknown column '", name, "'"));
        }
        if (std::count(header.begin(), header.end(), name) > 1) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": column '", name, "' appears twice"));
        }
        has_kind = has_kind || name == "kind";
        has_median = has_median || name == "median_ns";
      }
      if (!has_kind || !has_median) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": the column row must name at least kind and median_ns"));
      }
      continue;
    }
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected ", header.size(), " comma-separated cells, got ", cells.size()));
    }
    proto::CalibrationPoint* point = table.add_points();
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string& name = header[i];
      if (name == "kind") {
        absl::StatusOr<proto::KernelKind> kind = ParseKernelKind(cells[i]);
        if (!kind.ok())
          return absl::InvalidArgumentError(absl::StrCat(where, ": column kind: ", kind.status().message()));
        point->set_kind(*kind);
        continue;
      }
      if (name == "dtype") {
        point->set_dtype(absl::AsciiStrToLower(cells[i]));
        continue;
      }
      for (const Column& c : NumericColumns()) {
        if (name != c.name) continue;
        double value = 0;
        // Decimal only: SimpleAtod would also take "0x10" as 16.
        const bool hex = cells[i].find_first_of("xX") != std::string::npos;
        if (!cells[i].empty() && (hex || !absl::SimpleAtod(cells[i], &value) || !std::isfinite(value) ||
                                  (c.is_int && value != std::floor(value)))) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": column ", name, ": expected ",
                                                         c.is_int ? "an integer" : "a number", ", got '",
                                                         Excerpt(cells[i]), "'"));
        }
        if (c.is_int && std::abs(value) > c.max_int) {  // beyond the proto field's range
          return absl::InvalidArgumentError(absl::StrCat(where, ": column ", name, ": expected an integer of at most ",
                                                         static_cast<int64_t>(c.max_int), ", got '", Excerpt(cells[i]),
                                                         "'"));
        }
        c.set(value, point);
      }
    }
    FillCalibrationDefaults(point);
    KVSIM_RETURN_IF_ERROR(ValidateCalibrationPoint(*point, where));
  }
  if (header.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no column row (expected kind,...,median_ns)"));
  }
  return table;
}

std::string CalibrationTableToCsv(const proto::CalibrationTable& table) {
  const proto::CalibrationHeader& h = table.header();
  std::string out;
  auto header_line = [&out](absl::string_view key, absl::string_view value) {
    if (!value.empty()) absl::StrAppend(&out, "# ", key, ": ", value, "\n");
  };
  header_line("gpu_name", h.gpu_name());
  header_line("driver_version", h.driver_version());
  header_line("cuda_version", h.cuda_version());
  header_line("clocks", h.clocks());
  header_line("tool_revision", h.tool_revision());
  header_line("date", h.date());
  header_line("synthetic_from_datasheet", h.synthetic_from_datasheet() ? "true" : "false");
  header_line("source", h.source());
  absl::StrAppend(&out, "kind,dtype");
  for (const Column& c : NumericColumns()) absl::StrAppend(&out, ",", c.name);
  absl::StrAppend(&out, "\n");
  for (const proto::CalibrationPoint& p : table.points()) {
    absl::StrAppend(&out, KernelKindName(p.kind()), ",", p.dtype().empty() ? "bf16" : p.dtype());
    for (const Column& c : NumericColumns()) absl::StrAppend(&out, ",", FormatNumber(c.get(p), c.is_int));
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::Status NormaliseCalibrationPoints(absl::string_view source, proto::CalibrationTable* table) {
  for (int i = 0; i < table->points_size(); ++i) {
    FillCalibrationDefaults(table->mutable_points(i));
    KVSIM_RETURN_IF_ERROR(ValidateCalibrationPoint(table->points(i), absl::StrCat(source, ": points[", i, "]")));
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::CalibrationTable> ReadCalibrationTable(const std::string& path) {
  proto::CalibrationTable table;
  if (IsTextProtoPath(path)) {
    KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(path, &table));
    KVSIM_RETURN_IF_ERROR(NormaliseCalibrationPoints(path, &table));
  } else {
    KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    KVSIM_ASSIGN_OR_RETURN(table, ParseCalibrationCsv(text, path));
  }
  if (table.points_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the calibration table has no points"));
  }
  return table;
}

absl::Status WriteCalibrationTable(const std::string& path, const proto::CalibrationTable& table) {
  return WriteFileAtomically(path, IsTextProtoPath(path) ? ToTextProto(table) : CalibrationTableToCsv(table));
}

}  // namespace kvsim
