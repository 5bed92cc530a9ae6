// File: cost_models/vidur_import.h
//
// Importers of Vidur's profiling CSVs (github.com/microsoft/vidur, data/profiling/...) into calibration
// tables, so users with Vidur profiles can start with the table model at once.
//   - attention.csv (vidur/profiling/attention): columns n_embd, n_q_head, n_kv_head,
//     num_tensor_parallel_workers, batch_size, kv_cache_size, prefill_chunk_size, is_prefill,
//     time_stats.attn_prefill.median, time_stats.attn_decode.median (ms), block_size (optional).
//     Prefill rows become prefill_attention points (batch, query_tokens = prefill_chunk_size,
//     context_tokens = kv_cache_size); decode rows decode_attention points. Heads per GPU = heads / TP;
//     head_dim = n_embd / n_q_head.
//   - mlp.csv (vidur/profiling/mlp): columns n_head, n_kv_head, n_embd, n_expanded_embd, use_gated_mlp,
//     num_tensor_parallel_workers, num_tokens and time_stats.<op>.median (ms) for attn_pre_proj (QKV),
//     attn_post_proj (O), mlp_up_proj and mlp_down_proj, which become GEMM points with their per-GPU
//     in/out features. Vidur's element-wise ops (norms, activation, RoPE, add) have no counterpart in the
//     kvsim composition and are reported as not imported.
//   - all_reduce.csv (vidur/profiling/collectives): columns num_workers, size (bytes), collective,
//     time_stats.all_reduce.median (ms) and, optionally, devices_per_node. A row with devices_per_node <
//     num_workers spans nodes (NCCL over the network, not NVLink); single-node and cross-node rows of the
//     same GPU count are different kernels, so only the scope VidurImportOptions names is imported
//     (single-node by default) and the others are counted as skipped by scope. Without a
//     devices_per_node column every row is taken as single-node (said in the report). Rows of other
//     collectives are reported as skipped.
// Prefill rows (is_prefill True): query_tokens = prefill_chunk_size (>= 1: the chunk's new tokens) and
// context_tokens = kv_cache_size (the prefix already cached before the chunk, not including it). Decode
// rows: batch_size sequences of one new token over kv_cache_size cached tokens each; prefill_chunk_size
// must be 0 there. Anything else is refused.
// A negative time is refused (file:line, column); a zero time (below the 1 us resolution) is skipped
// and reported.
// Vidur profiles fp16 and records no percentiles or repetition counts, so dtype is "fp16" and p10/p90 and
// repetitions are 0 (unknown). Nothing is dropped silently: skipped rows and unused columns are listed in
// the report. Errors name file:line and the column.
//
// Example:
//   VidurImportReport report;
//   KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ImportVidurProfiles("profiles/h100", &report));
#ifndef KVSIM_COST_MODELS_VIDUR_IMPORT_H_
#define KVSIM_COST_MODELS_VIDUR_IMPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/calibration.pb.h"

namespace kvsim {

struct VidurImportReport {
  std::vector<std::string> files;    // the files read
  int64_t rows = 0;                  // data rows read
  int64_t points = 0;                // calibration points written
  std::vector<std::string> skipped;  // "file:line: reason", one per skipped row
  // "file: column" of every column of the file that the import does not read (statistics other than the
  // median, element-wise ops without a kvsim counterpart, bookkeeping columns).
  std::vector<std::string> unused;
  // "file: N of M rows used (why)", one per file: which rows went into the table.
  std::vector<std::string> used_rows;
};

enum class AllReduceScope {
  kSingleNode,  // devices_per_node >= num_workers: all GPUs on one node (NVLink)
  kCrossNode,   // devices_per_node < num_workers: the group spans nodes
};

struct VidurImportOptions {
  AllReduceScope all_reduce_scope = AllReduceScope::kSingleNode;
};

// Each parses one file's text (`source` names it in errors) and appends points to `table`.
absl::Status ImportVidurAttentionCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                                     VidurImportReport* report);
absl::Status ImportVidurMlpCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                               VidurImportReport* report);
absl::Status ImportVidurAllReduceCsv(absl::string_view text, absl::string_view source, proto::CalibrationTable* table,
                                     VidurImportReport* report, const VidurImportOptions& options = {});

// The element-wise ops of one layer that mlp.csv times (columns time_stats.<op>.median, ms): input and
// post-attention RMS norm, RoPE (attn_rope), activation (mlp_act) and the residual add, counted twice (a
// Llama layer has two residual adds). For the fitted model's element-wise curve (cost_fit.h).
struct VidurElementwiseRow {
  int64_t tokens = 0;
  int64_t hidden = 0;  // n_embd
  int64_t tensor_parallel = 1;
  double median_ms = 0;  // the sum above
  std::string where;     // file:line
};
// Appends one row per mlp.csv row that has all five columns; errors as the other importers.
absl::Status ImportVidurElementwiseCsv(absl::string_view text, absl::string_view source,
                                       std::vector<VidurElementwiseRow>* rows, VidurImportReport* report);

// Reads whichever of attention.csv (or attention_sample.csv), mlp.csv and all_reduce.csv exist in `dir`
// (NotFound if none).
absl::StatusOr<proto::CalibrationTable> ImportVidurProfiles(const std::string& dir, VidurImportReport* report,
                                                            const VidurImportOptions& options = {});

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_VIDUR_IMPORT_H_
