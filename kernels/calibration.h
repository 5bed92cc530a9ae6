// File: kernels/calibration.h
//
// `kvsim calibrate`'s library: the sweep grids, the timing of each point on the GPU, and the result as the
// cost model's calibration table (proto/calibration.proto; written as CSV by cost_models/calibration_table.h,
// the same code that reads it). Kinds written: decode_attention (includes its merge), segment_merge (the
// merge alone, bf16 rows only), prefill_attention, kv_projection, linear_gemm (QKV and O projections, LM
// head), mlp_gemm, host_device_copy (host to device, pinned; device-to-host figures go to the summary only,
// the table has no direction).
// int4 rows: group_size is the value group along channels; keys are grouped per channel over
// min(group_size, page_size) tokens (kernels/layout/kv_layout.h), so their scale bytes depend on page_size too.
//
// Method: KV pools are filled on the device with random values (never zeros) and rotated so that the
// bytes touched between two runs of a point exceed 4x the L2; pages are in a random order (seeded);
// warm-up runs precede `repetitions` runs timed one by one with CUDA events (points under 20 us per run
// are timed as groups of back-to-back runs, amortising launch gaps as in continuous serving); median, p10
// and p90 are reported. Before timing, small shapes of every kernel are checked against the float64 CPU reference.
//
// Example:
//   CalibrationOptions options;
//   KVSIM_ASSIGN_OR_RETURN(CalibrationResult result, RunCalibration(options, &std::cerr));
//   KVSIM_RETURN_IF_ERROR(WriteCalibrationTable(path, result.table));
//
// Thread-safety: RunCalibration uses the current GPU exclusively for its duration.
#ifndef KVSIM_KERNELS_CALIBRATION_H_
#define KVSIM_KERNELS_CALIBRATION_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/layout/kv_layout.h"
#include "proto/calibration.pb.h"

namespace kvsim {

struct DecodePoint {
  int batch = 1;
  int context_tokens = 1024;
  int num_segments = 1;
  KvDtype dtype = KvDtype::kBf16;
  int group_size = 0;
  int gqa = 4;  // query heads per KV head (8 KV heads)
  int page_size = 16;
};

struct PrefillPoint {
  int batch = 1;  // chunks in the batch (one per request)
  int chunk_tokens = 512;
  int prefix_tokens = 0;
  int prefix_segments = 1;
  int gqa = 4;
};

struct GemmPoint {
  proto::KernelKind kind;  // KV projection, linear (QKV, O, LM head) or MLP GEMM
  std::string name;        // e.g. "qkv_proj"
  int64_t tokens = 0, in_features = 0, out_features = 0;
};

struct CalibrationGrid {
  std::vector<DecodePoint> decode;
  std::vector<PrefillPoint> prefill;
  std::vector<GemmPoint> gemm;
  std::vector<int64_t> copy_bytes;
};

// The coarse grid (fits in under 5 minutes on an H200) or, with `full`, the full grid of KERNELS.md §3.
// Decode points have batch x context <= max_tokens (coarse 2^21 tokens, full 2^23: 32 GiB of bf16 KV).
CalibrationGrid MakeCalibrationGrid(bool full);

struct CalibrationOptions {
  bool full = false;
  int repetitions = 30;
  int warmup = 3;
  uint64_t seed = 1;
  bool validate = true;
  // Wall-clock budget of the whole run in seconds (0 = none). When it would be exceeded, each kind times an
  // even subset of its grid (CoverageOrder) and a note says how many points were timed.
  double budget_seconds = 0;
  std::string tool_revision;
  // Optional: only points whose kind is listed ("decode_attention", "prefill_attention", "gemm",
  // "host_device_copy"); empty = all.
  std::vector<std::string> only;
};

struct CalibrationResult {
  // The cost model's table (header: GPU, driver, CUDA, clocks, tool revision, date, source), its points
  // normalised and validated (cost_models/calibration_table.h NormaliseCalibrationPoints): write it with
  // WriteCalibrationTable.
  proto::CalibrationTable table;
  std::vector<std::string> notes;  // summary lines (validation, D2H copies, skipped points)
};

// Runs validation then the sweep, writing one progress line per point to `log` (may be null).
// Unavailable without a GPU; Internal when validation fails.
absl::StatusOr<CalibrationResult> RunCalibration(const CalibrationOptions& options, std::ostream* log);

// A permutation of 0..n-1 (bit-reversed counting) whose every prefix spreads evenly over the range: a
// sweep cut short by its budget still samples the whole grid.
std::vector<int> CoverageOrder(int n);

// Median, 10th and 90th percentile (nearest rank) of `samples`. REQUIRES: !samples.empty().
void Percentiles(std::vector<double> samples, double* p10, double* median, double* p90);

// Dtype name for the table: "bf16", "fp8", "int8", "int4", "int2".
std::string CalibrationDtypeName(KvDtype dtype);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_CALIBRATION_H_
