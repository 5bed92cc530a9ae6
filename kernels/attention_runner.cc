#include "kernels/attention_runner.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/attention_kernels.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

template <typename T>
absl::StatusOr<DeviceBuffer> Upload(const std::vector<T>& values) {
  return DeviceBuffer::FromHost(values.data(), static_cast<int64_t>(values.size() * sizeof(T)));
}

absl::StatusOr<HostAttentionResult> DownloadOutputs(const DeviceBuffer& o, const DeviceBuffer& lse) {
  KVSIM_RETURN_IF_ERROR(DeviceSynchronize());
  HostAttentionResult result;
  result.o.resize(o.size_bytes() / sizeof(float));
  result.lse.resize(lse.size_bytes() / sizeof(float));
  KVSIM_RETURN_IF_ERROR(o.CopyToHost(result.o.data(), o.size_bytes()));
  KVSIM_RETURN_IF_ERROR(lse.CopyToHost(result.lse.data(), lse.size_bytes()));
  return result;
}

}  // namespace

DeviceKvPool DeviceKvBuffers::View() const {
  DeviceKvPool pool;
  pool.data = data.get();
  pool.scale = static_cast<const float*>(scale.get());
  pool.zero = static_cast<const float*>(zero.get());
  return pool;
}

absl::StatusOr<DeviceKvBuffers> UploadKvPool(const QuantizedKvPool& pool) {
  DeviceKvBuffers out;
  KVSIM_ASSIGN_OR_RETURN(out.data, Upload(pool.data));
  KVSIM_ASSIGN_OR_RETURN(out.scale, Upload(pool.scale));
  KVSIM_ASSIGN_OR_RETURN(out.zero, Upload(pool.zero));
  return out;
}

absl::StatusOr<DeviceBuffer> UploadBf16(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = FloatToBf16(values[i]);
  return Upload(bits);
}

absl::StatusOr<std::unique_ptr<DeviceDecodeProblem>> DeviceDecodeProblem::Create(
    const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<float>& q,
    const QuantizedKvPool& k, const QuantizedKvPool& v, double softmax_scale, int min_ctas) {
  if (k.dtype != v.dtype || k.group_size != v.group_size) {
    return absl::InvalidArgumentError("decode: K and V pools must share format and group size");
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceKvBuffers k_buffers, UploadKvPool(k));
  KVSIM_ASSIGN_OR_RETURN(DeviceKvBuffers v_buffers, UploadKvPool(v));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<DeviceDecodeProblem> p,
                         CreateWithDeviceKv(layout, table, num_q_heads, q, k.dtype, k.group_size, k_buffers.View(),
                                            v_buffers.View(), softmax_scale, min_ctas));
  p->k_ = std::move(k_buffers);
  p->v_ = std::move(v_buffers);
  return p;
}

absl::StatusOr<std::unique_ptr<DeviceDecodeProblem>> DeviceDecodeProblem::CreateWithDeviceKv(
    const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<float>& q, KvDtype dtype,
    int group_size, const DeviceKvPool& k, const DeviceKvPool& v, double softmax_scale, int min_ctas) {
  KVSIM_RETURN_IF_ERROR(ValidateSegmentTable(table, layout));
  const int64_t rows = int64_t{table.num_requests()} * num_q_heads;
  if (static_cast<int64_t>(q.size()) != rows * layout.head_dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("decode: q has %d values; expected %d", q.size(), rows * layout.head_dim));
  }
  std::unique_ptr<DeviceDecodeProblem> p(new DeviceDecodeProblem());
  p->plan_ = PlanDecode(table, layout.page_size, layout.num_kv_heads, min_ctas);
  const int64_t num_items = static_cast<int64_t>(p->plan_.items.size());
  KVSIM_ASSIGN_OR_RETURN(p->q_, UploadBf16(q));
  KVSIM_ASSIGN_OR_RETURN(p->page_table_, Upload(table.page_table));
  KVSIM_ASSIGN_OR_RETURN(p->items_, Upload(p->plan_.items));
  KVSIM_ASSIGN_OR_RETURN(p->item_begin_, Upload(p->plan_.item_begin));
  KVSIM_ASSIGN_OR_RETURN(p->partial_o_, DeviceBuffer::Allocate(num_items * num_q_heads * layout.head_dim * 4));
  KVSIM_ASSIGN_OR_RETURN(p->partial_lse_, DeviceBuffer::Allocate(num_items * num_q_heads * 4));
  KVSIM_ASSIGN_OR_RETURN(p->out_o_, DeviceBuffer::Allocate(rows * layout.head_dim * 4));
  KVSIM_ASSIGN_OR_RETURN(p->out_lse_, DeviceBuffer::Allocate(rows * 4));
  DecodeArgs& a = p->args_;
  a.layout = layout;
  a.num_q_heads = num_q_heads;
  a.dtype = dtype;
  a.group_size = group_size;
  a.softmax_scale = softmax_scale;
  a.q = p->q_.get();
  a.k = k;
  a.v = v;
  a.page_table = static_cast<const int32_t*>(p->page_table_.get());
  a.items = static_cast<const DecodeWorkItem*>(p->items_.get());
  a.num_items = static_cast<int>(num_items);
  a.item_begin = static_cast<const int32_t*>(p->item_begin_.get());
  a.num_requests = table.num_requests();
  a.direct = p->plan_.direct;
  // Never null, even when empty, so that argument checks pass for direct plans too.
  a.partial_o = static_cast<float*>(p->partial_o_.get() ? p->partial_o_.get() : p->out_o_.get());
  a.partial_lse = static_cast<float*>(p->partial_lse_.get() ? p->partial_lse_.get() : p->out_lse_.get());
  a.out_o = static_cast<float*>(p->out_o_.get());
  a.out_lse = static_cast<float*>(p->out_lse_.get());
  KVSIM_RETURN_IF_ERROR(CheckDecodeArgs(a));
  return p;
}

absl::Status DeviceDecodeProblem::PoisonOutputs() {
  KVSIM_RETURN_IF_ERROR(partial_o_.Fill(0xff));
  KVSIM_RETURN_IF_ERROR(partial_lse_.Fill(0xff));
  KVSIM_RETURN_IF_ERROR(out_o_.Fill(0xff));
  return out_lse_.Fill(0xff);
}

absl::Status DeviceDecodeProblem::LaunchDecodeChecked(bool partial, bool merge) {
  if (partial) KVSIM_RETURN_IF_ERROR(LaunchDecodePartial(args_));
  if (merge && !args_.direct) KVSIM_RETURN_IF_ERROR(LaunchMergeStates(args_));
  return absl::OkStatus();
}

absl::StatusOr<HostAttentionResult> DeviceDecodeProblem::Download() const { return DownloadOutputs(out_o_, out_lse_); }

absl::StatusOr<std::unique_ptr<DevicePrefillProblem>> DevicePrefillProblem::Create(
    const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<int32_t>& query_begin,
    const std::vector<float>& q, const QuantizedKvPool& k, const QuantizedKvPool& v, double softmax_scale) {
  if (k.dtype != KvDtype::kBf16 || v.dtype != KvDtype::kBf16) {
    return absl::InvalidArgumentError("prefill: K and V pools must be bf16");
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceKvBuffers k_buffers, UploadKvPool(k));
  KVSIM_ASSIGN_OR_RETURN(DeviceKvBuffers v_buffers, UploadKvPool(v));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<DevicePrefillProblem> p,
                         CreateWithDeviceKv(layout, table, num_q_heads, query_begin, q, k_buffers.data.get(),
                                            v_buffers.data.get(), softmax_scale));
  p->k_ = std::move(k_buffers);
  p->v_ = std::move(v_buffers);
  return p;
}

absl::StatusOr<std::unique_ptr<DevicePrefillProblem>> DevicePrefillProblem::CreateWithDeviceKv(
    const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, const std::vector<int32_t>& query_begin,
    const std::vector<float>& q, const void* k, const void* v, double softmax_scale) {
  KVSIM_RETURN_IF_ERROR(ValidateSegmentTable(table, layout));
  if (static_cast<int>(query_begin.size()) != table.num_requests() + 1 || query_begin[0] != 0) {
    return absl::InvalidArgumentError("prefill: query_begin must have num_requests + 1 entries from 0");
  }
  int max_queries = 0;
  for (int r = 0; r < table.num_requests(); ++r) {
    const int n = query_begin[r + 1] - query_begin[r];
    if (n < 0 || n > table.RequestTokens(r)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("prefill: request %d has %d queries for %d context tokens", r, n, table.RequestTokens(r)));
    }
    max_queries = std::max(max_queries, n);
  }
  std::unique_ptr<DevicePrefillProblem> p(new DevicePrefillProblem());
  p->rows_ = query_begin.back();
  if (static_cast<int64_t>(q.size()) != p->rows_ * num_q_heads * layout.head_dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("prefill: q has %d values; expected %d", q.size(), p->rows_ * num_q_heads * layout.head_dim));
  }
  KVSIM_ASSIGN_OR_RETURN(p->q_, UploadBf16(q));
  KVSIM_ASSIGN_OR_RETURN(p->page_table_, Upload(table.page_table));
  KVSIM_ASSIGN_OR_RETURN(p->segments_, Upload(table.segments));
  KVSIM_ASSIGN_OR_RETURN(p->segment_begin_, Upload(table.segment_begin));
  KVSIM_ASSIGN_OR_RETURN(p->query_begin_, Upload(query_begin));
  KVSIM_ASSIGN_OR_RETURN(p->out_o_, DeviceBuffer::Allocate(p->rows_ * num_q_heads * layout.head_dim * 4));
  KVSIM_ASSIGN_OR_RETURN(p->out_lse_, DeviceBuffer::Allocate(p->rows_ * num_q_heads * 4));
  PrefillArgs& a = p->args_;
  a.layout = layout;
  a.num_q_heads = num_q_heads;
  a.softmax_scale = softmax_scale;
  a.q = p->q_.get();
  a.k = k;
  a.v = v;
  a.page_table = static_cast<const int32_t*>(p->page_table_.get());
  a.segments = static_cast<const KvSegment*>(p->segments_.get());
  a.segment_begin = static_cast<const int32_t*>(p->segment_begin_.get());
  a.query_begin = static_cast<const int32_t*>(p->query_begin_.get());
  a.num_requests = table.num_requests();
  a.max_queries = max_queries;
  a.out_o = static_cast<float*>(p->out_o_.get());
  a.out_lse = static_cast<float*>(p->out_lse_.get());
  KVSIM_RETURN_IF_ERROR(CheckPrefillArgs(a));
  return p;
}

absl::Status DevicePrefillProblem::PoisonOutputs() {
  KVSIM_RETURN_IF_ERROR(out_o_.Fill(0xff));
  return out_lse_.Fill(0xff);
}

absl::Status DevicePrefillProblem::Run() { return LaunchPrefill(args_); }

absl::StatusOr<HostAttentionResult> DevicePrefillProblem::Download() const { return DownloadOutputs(out_o_, out_lse_); }

}  // namespace kvsim
