// File: kernels/decode_plan.h
//
// Split-KV work planning for the multi-segment decode kernel: cuts each request's segments into work
// items (contiguous token ranges of one segment, starting on a page boundary) so that
// items x num_kv_heads CTAs fill the GPU, and records per request the range of its items (CSR) for the
// merge. Plain C++, shared by the CPU build and the GPU launchers.
//
// Example:
//   DecodePlan plan = PlanDecode(table, /*page_size=*/16, /*num_kv_heads=*/8, /*min_ctas=*/2 * 132 * 3);
//   // plan.items[i] covers tokens of one segment; plan.item_begin[r] .. [r + 1] are request r's items.
//
// Thread-safety: pure function.
#ifndef KVSIM_KERNELS_DECODE_PLAN_H_
#define KVSIM_KERNELS_DECODE_PLAN_H_

#include <cstdint>
#include <vector>

#include "kernels/layout/kv_layout.h"

namespace kvsim {

// One CTA's work (per KV head): `num_tokens` tokens in the pages listed at page_table[page_table_offset..].
struct DecodeWorkItem {
  int32_t request = 0;
  int32_t page_table_offset = 0;
  int32_t num_tokens = 0;  // >= 1
  int32_t reserved = 0;
};

struct DecodePlan {
  std::vector<DecodeWorkItem> items;
  std::vector<int32_t> item_begin = {0};  // size num_requests + 1
  int32_t chunk_tokens = 0;               // longest item, a multiple of page_size
  // True when every request has exactly one item: the kernel then writes the final output and the merge
  // is skipped.
  bool direct = false;
};

// Items of at most `chunk_tokens` tokens (chunk_tokens a multiple of page_size), chosen as the largest
// power-of-two multiple of page_size, starting from the longest segment, for which items x num_kv_heads
// >= min_ctas, but never below max(page_size, 256) tokens (FlashInfer's floor: shorter chunks cost more in
// merge than they gain). Empty segments produce no item; a request without tokens has no item (the merge
// writes the empty state for it). REQUIRES: ValidateSegmentTable(table, ...) is ok; page_size >= 1.
DecodePlan PlanDecode(const SegmentTable& table, int page_size, int num_kv_heads, int min_ctas);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_DECODE_PLAN_H_
