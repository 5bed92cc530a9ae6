#include "cost_models/vidur_import.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/field_checks.h"
#include "cost_models/calibration_table.h"
#include "util/file.h"
#include "util/status_macros.h"

// Invariants of the import:
// - Every data row is counted in report->rows and ends one of three ways: points appended, a line in
//   report->skipped saying why (an empty or NaN time, a non-positive time, a collective other than
//   all_reduce), or an error that fails the import (a cell that does not parse, or a model shape that
//   cannot be: heads not dividing n_embd, n_kv_head not dividing n_q_head, zero TP, ...). Time columns
//   of the file that no importer reads are listed in report->unused.
// - Every appended point has passed ValidateCalibrationPoint; a point is added before it is checked, so
//   after an error the table passed in may hold it and ImportVidurProfiles returns only the status.
// - Units and shapes: Vidur's milliseconds become median_ns (x 1e6); shapes are per GPU: heads / TP, KV
//   heads max(1, n_kv_head / TP) (replicated when TP exceeds them), head_dim = n_embd / n_q_head; the
//   QKV projection's output is (heads / TP + 2 x KV heads) x head_dim, gated MLPs double the up
//   projection's output.
// Order in ForEachRow: the first non-blank line is the header (a repeated name or a missing required
// column fails before any row is read); each later row must have as many cells as the header.
// Cost: not a hot path (run once per import): one pass over each file; cells are found by name through
// a std::map, O(log columns) per lookup.

namespace kvsim {
namespace {

constexpr double kNsPerMs = 1e6;

// Splits one CSV line, honouring double quotes as pandas writes them.
std::vector<std::string> SplitCsv(absl::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  for (std::string& cell : cells) cell = std::string(absl::StripAsciiWhitespace(cell));
  return cells;
}

// One data row with typed access by column name; errors name file:line and the column.
class Row {
 public:
  Row(const std::map<std::string, size_t>& columns, std::vector<std::string> cells, std::string where)
      : columns_(columns), cells_(std::move(cells)), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  bool Has(const std::string& name) const { return columns_.count(name) > 0; }
  bool Empty(const std::string& name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) return true;
    const std::string& v = cells_[it->second];
    return v.empty() || absl::EqualsIgnoreCase(v, "nan");
  }
  absl::StatusOr<double> Number(const std::string& name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) return Error(name, "missing column");
    double v = 0;
    if (!absl::SimpleAtod(cells_[it->second], &v) || !std::isfinite(v)) {
      return Error(name, absl::StrCat("expected a number, got '", Excerpt(cells_[it->second]), "'"));
    }
    return v;
  }
  absl::StatusOr<int64_t> Integer(const std::string& name) const {
    KVSIM_ASSIGN_OR_RETURN(double v, Number(name));
    if (v != std::floor(v) || v < 0 || v > 2147483647.0) {
      return Error(name, absl::StrCat("expected a count in [0, 2147483647], got ", v));
    }
    return static_cast<int64_t>(v);
  }
  absl::StatusOr<bool> Bool(const std::string& name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) return Error(name, "missing column");
    const std::string v = absl::AsciiStrToLower(cells_[it->second]);
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    return Error(name, absl::StrCat("expected True or False, got '", Excerpt(cells_[it->second]), "'"));
  }
  std::string Text(const std::string& name) const {
    auto it = columns_.find(name);
    return it == columns_.end() ? "" : cells_[it->second];
  }

 private:
  absl::Status Error(const std::string& column, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": column ", column, ": ", what));
  }
  const std::map<std::string, size_t>& columns_;
  std::vector<std::string> cells_;
  std::string where_;
};

// Calls `on_row` for each data row; checks that `required` columns exist.
absl::Status ForEachRow(absl::string_view text, absl::string_view source, const std::vector<std::string>& required,
                        VidurImportReport* report, std::map<std::string, size_t>* columns,
                        const std::function<absl::Status(const Row&)>& on_row) {
  int line_number = 0;
  bool have_header = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<std::string> cells = SplitCsv(absl::StripTrailingAsciiWhitespace(line));
    const std::string where = absl::StrCat(source, ":", line_number);
    if (!have_header) {
      for (size_t i = 0; i < cells.size(); ++i) {
        if (!columns->emplace(cells[i], i).second) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": column '", Excerpt(cells[i]), "' appears twice"));
        }
      }
      for (const std::string& name : required) {
        if (columns->count(name) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": missing column '", name, "'"));
        }
      }
      have_header = true;
      continue;
    }
    if (cells.size() != columns->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected ", columns->size(), " cells, got ", cells.size()));
    }
    ++report->rows;
    KVSIM_RETURN_IF_ERROR(on_row(Row(*columns, std::move(cells), where)));
  }
  if (!have_header) return absl::InvalidArgumentError(absl::StrCat(source, ": empty file, expected a header row"));
  report->files.push_back(std::string(source));
  return absl::OkStatus();
}

proto::CalibrationPoint* AddPoint(proto::CalibrationTable* table, proto::KernelKind kind, double ms,
                                  VidurImportReport* report) {
  proto::CalibrationPoint* p = table->add_points();
  p->set_kind(kind);
  p->set_dtype("fp16");
  p->set_median_ns(ms * kNsPerMs);
  ++report->points;
  return p;
}

// Lists every column of the file outside `used`, in the file's column order.
void NoteUnusedColumns(const std::map<std::string, size_t>& columns, const std::vector<std::string>& used,
                       absl::string_view source, VidurImportReport* report) {
  std::vector<std::pair<size_t, std::string>> unused;
  for (const auto& [name, index] : columns) {
    if (std::find(used.begin(), used.end(), name) == used.end()) unused.emplace_back(index, name);
  }
  std::sort(unused.begin(), unused.end());
  for (const auto& [index, name] : unused) {
    report->unused.push_back(absl::StrCat(source, ": ", name.empty() ? "(unnamed index column)" : name));
  }
}

// A time cell: a number >= 0 (negative is refused naming the line and column).
absl::StatusOr<double> TimeMs(const Row& row, const std::string& column) {
  KVSIM_ASSIGN_OR_RETURN(double ms, row.Number(column));
  if (ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(row.where(), ": column ", column, ": expected a time >= 0 ms, got ", ms));
  }
  return ms;
}

}  // namespace

absl::Status ImportVidurAttentionCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                                     VidurImportReport* report) {
  const std::string prefill_col = "time_stats.attn_prefill.median", decode_col = "time_stats.attn_decode.median";
  std::map<std::string, size_t> columns;
  const int64_t rows_before = report->rows;
  int64_t used_rows = 0;
  KVSIM_RETURN_IF_ERROR(ForEachRow(
      text, source,
      {"n_embd", "n_q_head", "n_kv_head", "num_tensor_parallel_workers", "batch_size", "kv_cache_size",
       "prefill_chunk_size", "is_prefill"},
      report, &columns, [&](const Row& row) -> absl::Status {
        KVSIM_ASSIGN_OR_RETURN(bool prefill, row.Bool("is_prefill"));
        const std::string& time_col = prefill ? prefill_col : decode_col;
        if (row.Empty(time_col)) {
          report->skipped.push_back(absl::StrCat(row.where(), ": no ", time_col));
          return absl::OkStatus();
        }
        KVSIM_ASSIGN_OR_RETURN(double ms, TimeMs(row, time_col));
        KVSIM_ASSIGN_OR_RETURN(int64_t embd, row.Integer("n_embd"));
        KVSIM_ASSIGN_OR_RETURN(int64_t heads, row.Integer("n_q_head"));
        KVSIM_ASSIGN_OR_RETURN(int64_t kv_heads, row.Integer("n_kv_head"));
        KVSIM_ASSIGN_OR_RETURN(int64_t tp, row.Integer("num_tensor_parallel_workers"));
        KVSIM_ASSIGN_OR_RETURN(int64_t batch, row.Integer("batch_size"));
        KVSIM_ASSIGN_OR_RETURN(int64_t kv_cache, row.Integer("kv_cache_size"));
        KVSIM_ASSIGN_OR_RETURN(int64_t chunk, row.Integer("prefill_chunk_size"));
        if (heads == 0 || tp == 0 || embd % heads != 0) {
          return absl::InvalidArgumentError(absl::StrCat(row.where(),
                                                         ": n_q_head and num_tensor_parallel_workers must "
                                                         "be > 0 and n_q_head must divide n_embd"));
        }
        if (kv_heads < 1 || kv_heads > heads || heads % kv_heads != 0 || batch < 1) {
          return absl::InvalidArgumentError(absl::StrCat(row.where(), ": n_kv_head must divide n_q_head (", heads,
                                                         "), got ", kv_heads, ", and batch_size be >= 1, got ", batch));
        }
        // Vidur's semantics: a prefill row is one chunk of prefill_chunk_size new tokens after
        // kv_cache_size cached ones; a decode row has no chunk.
        if (prefill && chunk < 1) {
          return absl::InvalidArgumentError(absl::StrCat(row.where(),
                                                         ": column prefill_chunk_size: a prefill row "
                                                         "needs a chunk of >= 1 new tokens, got ",
                                                         chunk));
        }
        if (!prefill && chunk != 0) {
          return absl::InvalidArgumentError(absl::StrCat(row.where(),
                                                         ": column prefill_chunk_size: a decode row "
                                                         "must have 0, got ",
                                                         chunk));
        }
        if (ms == 0) {
          report->skipped.push_back(absl::StrCat(row.where(), ": zero time (below the 1 us resolution)"));
          return absl::OkStatus();
        }
        ++used_rows;
        proto::CalibrationPoint* p = AddPoint(
            table, prefill ? proto::KERNEL_KIND_PREFILL_ATTENTION : proto::KERNEL_KIND_DECODE_ATTENTION, ms, report);
        proto::KernelShape* s = p->mutable_shape();
        s->set_batch(batch);
        s->set_query_tokens(prefill ? chunk : 1);
        s->set_context_tokens(kv_cache);
        s->set_num_segments(1);
        s->set_num_heads(heads / tp);
        s->set_num_kv_heads(std::max<int64_t>(1, kv_heads / tp));
        s->set_head_dim(embd / heads);
        if (row.Has("block_size") && !row.Empty("block_size")) {
          KVSIM_ASSIGN_OR_RETURN(int64_t block, row.Integer("block_size"));
          s->set_page_size(block);
        }
        return ValidateCalibrationPoint(*p, row.where());
      }));
  NoteUnusedColumns(columns,
                    {prefill_col, decode_col, "n_embd", "n_q_head", "n_kv_head", "num_tensor_parallel_workers",
                     "batch_size", "kv_cache_size", "prefill_chunk_size", "is_prefill", "block_size"},
                    source, report);
  report->used_rows.push_back(absl::StrCat(source, ": ", used_rows, " of ", report->rows - rows_before,
                                           " rows used (prefill: chunk after kv_cache_size cached tokens; "
                                           "decode: batch_size sequences)"));
  return absl::OkStatus();
}

absl::Status ImportVidurMlpCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                               VidurImportReport* report) {
  struct Op {
    std::string column;
    proto::KernelKind kind;
  };
  const std::vector<Op> ops = {{"time_stats.attn_pre_proj.median", proto::KERNEL_KIND_LINEAR_GEMM},
                               {"time_stats.attn_post_proj.median", proto::KERNEL_KIND_LINEAR_GEMM},
                               {"time_stats.mlp_up_proj.median", proto::KERNEL_KIND_MLP_GEMM},
                               {"time_stats.mlp_down_proj.median", proto::KERNEL_KIND_MLP_GEMM}};
  std::map<std::string, size_t> columns;
  const int64_t rows_before = report->rows;
  int64_t used_rows = 0;
  KVSIM_RETURN_IF_ERROR(ForEachRow(
      text, source,
      {"n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp", "num_tensor_parallel_workers",
       "num_tokens"},
      report, &columns, [&](const Row& row) -> absl::Status {
        KVSIM_ASSIGN_OR_RETURN(int64_t heads, row.Integer("n_head"));
        KVSIM_ASSIGN_OR_RETURN(int64_t kv_heads, row.Integer("n_kv_head"));
        KVSIM_ASSIGN_OR_RETURN(int64_t embd, row.Integer("n_embd"));
        KVSIM_ASSIGN_OR_RETURN(int64_t expanded, row.Integer("n_expanded_embd"));
        KVSIM_ASSIGN_OR_RETURN(bool gated, row.Bool("use_gated_mlp"));
        KVSIM_ASSIGN_OR_RETURN(int64_t tp, row.Integer("num_tensor_parallel_workers"));
        KVSIM_ASSIGN_OR_RETURN(int64_t tokens, row.Integer("num_tokens"));
        if (heads == 0 || tp == 0 || embd % heads != 0 || tokens == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(row.where(),
                           ": n_head, num_tensor_parallel_workers and num_tokens must be > 0 and n_head must "
                           "divide n_embd"));
        }
        const int64_t head_dim = embd / heads;
        bool any = false;
        const int64_t in_out[4][2] = {{embd, (heads / tp + 2 * std::max<int64_t>(1, kv_heads / tp)) * head_dim},
                                      {heads / tp * head_dim, embd},
                                      {embd, (gated ? 2 : 1) * expanded / tp},
                                      {expanded / tp, embd}};
        for (size_t i = 0; i < ops.size(); ++i) {
          if (!row.Has(ops[i].column)) continue;
          if (row.Empty(ops[i].column)) {
            report->skipped.push_back(absl::StrCat(row.where(), ": no ", ops[i].column));
            continue;
          }
          KVSIM_ASSIGN_OR_RETURN(double ms, TimeMs(row, ops[i].column));
          if (ms == 0) {
            report->skipped.push_back(absl::StrCat(row.where(), ": zero ", ops[i].column));
            continue;
          }
          any = true;
          proto::CalibrationPoint* p = AddPoint(table, ops[i].kind, ms, report);
          p->mutable_shape()->set_query_tokens(tokens);
          p->mutable_shape()->set_in_features(in_out[i][0]);
          p->mutable_shape()->set_out_features(in_out[i][1]);
          FillCalibrationDefaults(p);
          KVSIM_RETURN_IF_ERROR(ValidateCalibrationPoint(*p, row.where()));
        }
        used_rows += any;
        return absl::OkStatus();
      }));
  std::vector<std::string> used = {
      "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp", "num_tensor_parallel_workers", "num_tokens"};
  for (const Op& op : ops) used.push_back(op.column);
  NoteUnusedColumns(columns, used, source, report);
  report->used_rows.push_back(absl::StrCat(source, ": ", used_rows, " of ", report->rows - rows_before,
                                           " rows used (4 GEMMs each: QKV, O, gate+up, down)"));
  return absl::OkStatus();
}

absl::Status ImportVidurAllReduceCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                                     VidurImportReport* report, const VidurImportOptions& options) {
  const std::string time_col = "time_stats.all_reduce.median";
  const bool single_node = options.all_reduce_scope == AllReduceScope::kSingleNode;
  std::map<std::string, size_t> columns;
  const int64_t rows_before = report->rows;
  int64_t used_rows = 0, other_scope = 0;
  bool has_devices_per_node = false;
  KVSIM_RETURN_IF_ERROR(
      ForEachRow(text, source, {"num_workers", "size", "collective", time_col}, report, &columns,
                 [&](const Row& row) -> absl::Status {
                   has_devices_per_node = row.Has("devices_per_node");
                   if (row.Text("collective") != "all_reduce") {
                     report->skipped.push_back(
                         absl::StrCat(row.where(), ": collective '", row.Text("collective"), "' not modelled"));
                     return absl::OkStatus();
                   }
                   if (row.Empty(time_col)) {
                     report->skipped.push_back(absl::StrCat(row.where(), ": no ", time_col));
                     return absl::OkStatus();
                   }
                   KVSIM_ASSIGN_OR_RETURN(double ms, TimeMs(row, time_col));
                   KVSIM_ASSIGN_OR_RETURN(int64_t workers, row.Integer("num_workers"));
                   KVSIM_ASSIGN_OR_RETURN(int64_t bytes, row.Integer("size"));
                   if (workers < 2 || bytes < 1) {
                     return absl::InvalidArgumentError(absl::StrCat(row.where(),
                                                                    ": an all-reduce needs num_workers >= 2 and "
                                                                    "size >= 1 byte, got ",
                                                                    workers, " and ", bytes));
                   }
                   bool cross_node = false;
                   if (has_devices_per_node) {
                     KVSIM_ASSIGN_OR_RETURN(int64_t per_node, row.Integer("devices_per_node"));
                     if (per_node < 1) {
                       return absl::InvalidArgumentError(
                           absl::StrCat(row.where(), ": column devices_per_node: expected >= 1, got ", per_node));
                     }
                     cross_node = per_node < workers;
                   }
                   if (cross_node == single_node) {  // the other scope: a different kernel, not this table's
                     ++other_scope;
                     return absl::OkStatus();
                   }
                   if (ms == 0) {
                     report->skipped.push_back(absl::StrCat(row.where(), ": zero time (below the 1 us resolution)"));
                     return absl::OkStatus();
                   }
                   ++used_rows;
                   proto::CalibrationPoint* p = AddPoint(table, proto::KERNEL_KIND_ALL_REDUCE, ms, report);
                   p->mutable_shape()->set_bytes(bytes);
                   p->mutable_shape()->set_num_gpus(workers);
                   FillCalibrationDefaults(p);
                   return ValidateCalibrationPoint(*p, row.where());
                 }));
  NoteUnusedColumns(columns, {"num_workers", "size", "collective", time_col, "devices_per_node"}, source, report);
  std::string why = single_node ? "single-node rows: devices_per_node >= num_workers"
                                : "cross-node rows: devices_per_node < num_workers";
  if (!has_devices_per_node) why = "no devices_per_node column: every row taken as single-node";
  report->used_rows.push_back(absl::StrCat(source, ": ", used_rows, " of ", report->rows - rows_before, " rows used (",
                                           why, "); ", other_scope, " rows of the other scope left out"));
  return absl::OkStatus();
}

absl::Status ImportVidurElementwiseCsv(absl::string_view text, absl::string_view source,
                                       std::vector<VidurElementwiseRow>* rows, VidurImportReport* report) {
  // Column, times counted per layer.
  const std::pair<const char*, int> ops[] = {{"time_stats.input_layernorm.median", 1},
                                             {"time_stats.post_attention_layernorm.median", 1},
                                             {"time_stats.attn_rope.median", 1},
                                             {"time_stats.mlp_act.median", 1},
                                             {"time_stats.add.median", 2}};
  std::map<std::string, size_t> columns;
  std::vector<std::string> required = {"n_embd", "num_tensor_parallel_workers", "num_tokens"};
  for (const auto& [column, times] : ops) required.push_back(column);
  return ForEachRow(text, source, required, report, &columns, [&](const Row& row) -> absl::Status {
    VidurElementwiseRow r;
    KVSIM_ASSIGN_OR_RETURN(r.tokens, row.Integer("num_tokens"));
    KVSIM_ASSIGN_OR_RETURN(r.hidden, row.Integer("n_embd"));
    KVSIM_ASSIGN_OR_RETURN(r.tensor_parallel, row.Integer("num_tensor_parallel_workers"));
    if (r.tokens < 1 || r.hidden < 1 || r.tensor_parallel < 1) {
      return absl::InvalidArgumentError(absl::StrCat(row.where(),
                                                     ": num_tokens, n_embd and "
                                                     "num_tensor_parallel_workers must be >= 1"));
    }
    for (const auto& [column, times] : ops) {
      if (row.Empty(column)) {
        report->skipped.push_back(absl::StrCat(row.where(), ": no ", column));
        return absl::OkStatus();
      }
      KVSIM_ASSIGN_OR_RETURN(double ms, TimeMs(row, column));
      r.median_ms += times * ms;
    }
    if (r.median_ms <= 0) {
      report->skipped.push_back(absl::StrCat(row.where(), ": zero element-wise time"));
      return absl::OkStatus();
    }
    r.where = row.where();
    rows->push_back(std::move(r));
    return absl::OkStatus();
  });
}

absl::StatusOr<proto::CalibrationTable> ImportVidurProfiles(const std::string& dir, VidurImportReport* report,
                                                            const VidurImportOptions& options) {
  proto::CalibrationTable table;
  using Importer =
      std::function<absl::Status(absl::string_view, absl::string_view, proto::CalibrationTable*, VidurImportReport*)>;
  auto all_reduce = [&options](absl::string_view text, absl::string_view source, proto::CalibrationTable* t,
                               VidurImportReport* r) { return ImportVidurAllReduceCsv(text, source, t, r, options); };
  const std::pair<const char*, Importer> files[] = {{"attention.csv", ImportVidurAttentionCsv},
                                                    {"attention_sample.csv", ImportVidurAttentionCsv},
                                                    {"mlp.csv", ImportVidurMlpCsv},
                                                    {"all_reduce.csv", all_reduce}};
  int found = 0;
  for (const auto& [name, importer] : files) {
    const std::string path = absl::StrCat(dir, "/", name);
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) {
      if (text.status().code() == absl::StatusCode::kNotFound) continue;
      return text.status();
    }
    ++found;
    KVSIM_RETURN_IF_ERROR(importer(*text, path, &table, report));
  }
  if (found == 0) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": none of attention.csv, attention_sample.csv, mlp.csv, all_reduce.csv found"));
  }
  if (table.points_size() == 0) {  // a table of no points cannot be read back
    return absl::InvalidArgumentError(absl::StrCat(dir, ": the profiles hold no usable rows (", report->rows, " read, ",
                                                   report->skipped.size(), " skipped)"));
  }
  proto::CalibrationHeader* h = table.mutable_header();
  h->set_synthetic_from_datasheet(false);
  h->set_source(absl::StrCat("imported from Vidur profiles in ", dir));
  return table;
}

}  // namespace kvsim
