// File: kernels/attention_kernels.h
//
// Launchers of kvsim's attention kernels over a segment table (kernels/layout/kv_layout.h), as plain C++: every
// pointer is device memory allocated by the caller (kernels/device.h DeviceBuffer), every launch is
// asynchronous on the default stream, and errors of the launch itself come back as absl::Status (errors
// that surface later come from DeviceSynchronize / DeviceTimer). Builds without CUDA return Unavailable.
//
// Kernels (head_dim 128; page_size a multiple of 16; num_q_heads / num_kv_heads in {1, 2, 4, 8}):
//   LaunchDecodePartial: split-KV decode, one CTA per (work item, KV head) of a DecodePlan; the CTA
//     serves all query heads of its KV head, so each KV byte is read once. Writes per item the attention
//     state (o, lse in log2) of every query head, or the final output directly when plan.direct.
//     The KV may be bf16, fp8 e4m3, int8, int4 or 2-bit; codes are converted in registers right after
//     their (coalesced) global load and accumulated in fp32. DecodeArgs.kernel picks the implementation:
//     tensor cores (mma.sync; the default) or CUDA-core FMAs; both match the float64 reference to the
//     same tolerances.
//   LaunchMergeStates: the exact merge of each request's item states, with the empty and all-empty guard.
//   LaunchPrefill: chunked prefill over the segment table, FlashAttention-2 style (64-query tiles,
//     tensor-core mma.sync on bf16, fp32 online softmax), causal only within each request's chunk.
// Outputs are fp32: o [rows][num_q_heads][128] and lse [rows][num_q_heads] in natural log (-inf when a
// row saw no token; its o is then 0).
//
// Example:
//   DecodeArgs args;  // fill shapes and device pointers
//   KVSIM_RETURN_IF_ERROR(LaunchDecode(args));
//   KVSIM_RETURN_IF_ERROR(DeviceSynchronize());
//
// Thread-safety: launchers keep no state; concurrent launches on one device are the caller's business.
#ifndef KVSIM_KERNELS_ATTENTION_KERNELS_H_
#define KVSIM_KERNELS_ATTENTION_KERNELS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/attention_args.h"

namespace kvsim {

// The decode kernel alone (see the file comment).
absl::Status LaunchDecodePartial(const DecodeArgs& args);
// The merge alone. REQUIRES: !args.direct.
absl::Status LaunchMergeStates(const DecodeArgs& args);
// Decode then, unless direct, merge.
absl::Status LaunchDecode(const DecodeArgs& args);

// Chunked prefill: request r's queries are the last n_r tokens of its context (see
// kernels/reference/attention_reference.h PrefillReference, which it matches).
absl::Status LaunchPrefill(const PrefillArgs& args);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_ATTENTION_KERNELS_H_
