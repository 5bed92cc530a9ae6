#include "kernels/attention_args.h"

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status CheckCommon(const PagedKvLayout& layout, int num_q_heads, double softmax_scale) {
  if (layout.head_dim != 128) {
    return absl::InvalidArgumentError(absl::StrFormat("head_dim must be 128 (got %d)", layout.head_dim));
  }
  if (layout.page_size <= 0 || layout.page_size % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("page_size must be a positive multiple of 16 (got %d)", layout.page_size));
  }
  if (layout.num_kv_heads <= 0 || num_q_heads % layout.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("num_q_heads (%d) must be a multiple of num_kv_heads (%d)", num_q_heads, layout.num_kv_heads));
  }
  const int group = num_q_heads / layout.num_kv_heads;
  if (group != 1 && group != 2 && group != 4 && group != 8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("num_q_heads / num_kv_heads must be 1, 2, 4 or 8 (got %d)", group));
  }
  if (!(softmax_scale > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat("softmax_scale must be > 0 (got %g)", softmax_scale));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDecodeArgs(const DecodeArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckCommon(args.layout, args.num_q_heads, args.softmax_scale));
  KVSIM_RETURN_IF_ERROR(ValidateQuantGroup(args.dtype, args.group_size, args.layout));
  const bool scaled = args.dtype != KvDtype::kBf16;
  const bool zeroed = args.dtype == KvDtype::kInt4 || args.dtype == KvDtype::kInt2;
  if (args.q == nullptr || args.k.data == nullptr || args.v.data == nullptr || args.page_table == nullptr ||
      args.items == nullptr || args.out_o == nullptr || args.out_lse == nullptr || args.item_begin == nullptr ||
      (scaled && (args.k.scale == nullptr || args.v.scale == nullptr)) ||
      (zeroed && (args.k.zero == nullptr || args.v.zero == nullptr)) ||
      (!args.direct && (args.partial_o == nullptr || args.partial_lse == nullptr))) {
    return absl::InvalidArgumentError("decode: a device array the launch needs is null");
  }
  if (args.num_items < 0 || args.num_requests < 0 || (args.direct && args.num_items != args.num_requests)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("decode: %d items for %d requests (direct output needs one item per request)", args.num_items,
                        args.num_requests));
  }
  return absl::OkStatus();
}

absl::Status CheckPrefillArgs(const PrefillArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckCommon(args.layout, args.num_q_heads, args.softmax_scale));
  if (args.q == nullptr || args.k == nullptr || args.v == nullptr || args.page_table == nullptr ||
      args.segments == nullptr || args.segment_begin == nullptr || args.query_begin == nullptr ||
      args.out_o == nullptr || args.out_lse == nullptr) {
    return absl::InvalidArgumentError("prefill: a device array the launch needs is null");
  }
  if (args.num_requests < 0 || args.max_queries < 0) {
    return absl::InvalidArgumentError("prefill: negative num_requests or max_queries");
  }
  return absl::OkStatus();
}

}  // namespace kvsim
