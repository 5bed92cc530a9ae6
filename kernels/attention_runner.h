// File: kernels/attention_runner.h
//
// Host-side driver of the attention kernels: uploads a problem given as host arrays (segment table,
// query, KV pools in a storage format), plans the decode split, owns every device buffer, runs the
// kernels and returns the outputs to the host. Used by the GPU tests, the calibration's validation and
// its timing loops. Plain C++; without CUDA every entry point returns Unavailable.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto problem, DeviceDecodeProblem::Create(layout, table, 32, q, k4, v4,
//                                                                    scale, /*min_ctas=*/2 * 132 * 3));
//   KVSIM_RETURN_IF_ERROR(problem->PoisonOutputs());
//   KVSIM_RETURN_IF_ERROR(problem->Run());
//   KVSIM_ASSIGN_OR_RETURN(HostAttentionResult out, problem->Download());
//
// Thread-safety: a problem is used by one thread at a time.
#ifndef KVSIM_KERNELS_ATTENTION_RUNNER_H_
#define KVSIM_KERNELS_ATTENTION_RUNNER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/attention_args.h"
#include "kernels/decode_plan.h"
#include "kernels/device.h"
#include "kernels/layout/kv_layout.h"
#include "kernels/reference/kv_quant.h"

namespace kvsim {

// Outputs copied back: o [rows][num_q_heads][head_dim], lse [rows][num_q_heads] (natural log).
struct HostAttentionResult {
  std::vector<float> o;
  std::vector<float> lse;
};

// Device copies of one K or V pool.
struct DeviceKvBuffers {
  DeviceBuffer data, scale, zero;
  DeviceKvPool View() const;
};
absl::StatusOr<DeviceKvBuffers> UploadKvPool(const QuantizedKvPool& pool);

// The query rounded to bf16 (as the kernels read it), on the device.
absl::StatusOr<DeviceBuffer> UploadBf16(const std::vector<float>& values);

class DeviceDecodeProblem {
 public:
  // q = [num_requests][num_q_heads][head_dim] floats (rounded to bf16 on upload); k and v in the same
  // format and layout. The plan splits segments until items x num_kv_heads >= min_ctas.
  static absl::StatusOr<std::unique_ptr<DeviceDecodeProblem>> Create(const PagedKvLayout& layout,
                                                                     const SegmentTable& table, int num_q_heads,
                                                                     const std::vector<float>& q,
                                                                     const QuantizedKvPool& k, const QuantizedKvPool& v,
                                                                     double softmax_scale, int min_ctas);

  // As Create, with K/V already on the device (`dtype`, `group_size` describe them; kept by the caller).
  static absl::StatusOr<std::unique_ptr<DeviceDecodeProblem>> CreateWithDeviceKv(
      const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<float>& q,
      KvDtype dtype, int group_size, const DeviceKvPool& k, const DeviceKvPool& v, double softmax_scale, int min_ctas);

  // Fills outputs and partial states with 0xFF bytes (NaN) so that unwritten values cannot pass.
  absl::Status PoisonOutputs();
  absl::Status Run() { return LaunchDecodeChecked(true, true); }
  absl::Status RunPartialOnly() { return LaunchDecodeChecked(true, false); }
  absl::Status RunMergeOnly() { return LaunchDecodeChecked(false, true); }
  // Synchronises, then copies the outputs back.
  absl::StatusOr<HostAttentionResult> Download() const;

  const DecodePlan& plan() const { return plan_; }
  // Selects the decode kernel of the next runs (default kAuto).
  void UseKernel(DecodeKernel kernel) { args_.kernel = kernel; }
  // Replaces the KV pools the next runs read (same format and layout; for rotating pools in timing).
  void UseKv(const DeviceKvPool& k, const DeviceKvPool& v) {
    args_.k = k;
    args_.v = v;
  }

 private:
  DeviceDecodeProblem() = default;
  absl::Status LaunchDecodeChecked(bool partial, bool merge);

  DecodePlan plan_;
  DecodeArgs args_;
  DeviceBuffer q_, page_table_, items_, item_begin_, partial_o_, partial_lse_, out_o_, out_lse_;
  DeviceKvBuffers k_, v_;
};

class DevicePrefillProblem {
 public:
  // Queries of request r are rows [query_begin[r], query_begin[r + 1]) of q; K/V are bf16 pools.
  static absl::StatusOr<std::unique_ptr<DevicePrefillProblem>> Create(
      const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<int32_t>& query_begin,
      const std::vector<float>& q, const QuantizedKvPool& k, const QuantizedKvPool& v, double softmax_scale);

  // As Create, with bf16 K/V already on the device (kept by the caller).
  static absl::StatusOr<std::unique_ptr<DevicePrefillProblem>> CreateWithDeviceKv(
      const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<int32_t>& query_begin,
      const std::vector<float>& q, const void* k, const void* v, double softmax_scale);

  absl::Status PoisonOutputs();
  absl::Status Run();
  absl::StatusOr<HostAttentionResult> Download() const;
  void UseKv(const void* k, const void* v) {
    args_.k = k;
    args_.v = v;
  }

 private:
  DevicePrefillProblem() = default;

  PrefillArgs args_;
  int64_t rows_ = 0;
  DeviceBuffer q_, page_table_, segments_, segment_begin_, query_begin_, out_o_, out_lse_;
  DeviceKvBuffers k_, v_;
};

}  // namespace kvsim

#endif  // KVSIM_KERNELS_ATTENTION_RUNNER_H_
