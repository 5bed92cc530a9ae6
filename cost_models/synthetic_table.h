// File: cost_models/synthetic_table.h
//
// SynthesizeTable: a calibration table computed from datasheet figures, for GPUs nobody has measured yet.
// Every point is the kernel roofline (kernel_roofline.h, with wave quantisation over the SMs) of the
// configured model's kernel shapes on the configured device, plus a fixed launch floor per kernel. The
// header says `synthetic_from_datasheet: true`; tables measured by `kvsim calibrate` replace it.
//
// Grid (powers of two): decode attention batch 1..256 x context 256..128K for each KV format asked for;
// prefill attention chunk 16..8K x prefix {0, 1K..128K}; segment merge batch 1..256 x segments
// {2, 4, 8, 16, 64}; the six GEMMs of a layer and the LM head over 1..16K rows; all-reduce over
// 1..16K tokens of activations when tensor_parallel_size > 1; host<->device copies 4 KiB..1 GiB.
// No date is written, so the output depends only on the inputs.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, SynthesizeTable(config, SynthOptions()));
#ifndef KVSIM_COST_MODELS_SYNTHETIC_TABLE_H_
#define KVSIM_COST_MODELS_SYNTHETIC_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/calibration.pb.h"
#include "proto/config.pb.h"

namespace kvsim {

struct SynthOptions {
  double launch_ns = 2000;  // added to every kernel: launch and tail latency, per kernel
  std::vector<std::string> kv_dtypes = {"bf16", "fp8", "int8", "int4"};  // decode attention formats
};

// REQUIRES: a resolved config. InvalidArgument for an unknown dtype in options.kv_dtypes.
absl::StatusOr<proto::CalibrationTable> SynthesizeTable(const proto::ExperimentConfig& config,
                                                        const SynthOptions& options);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_SYNTHETIC_TABLE_H_
