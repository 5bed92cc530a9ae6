#include "kernels/decode_plan.h"

#include <algorithm>

namespace kvsim {
namespace {

int64_t CountItems(const SegmentTable& table, int64_t chunk_tokens) {
  int64_t items = 0;
  for (const KvSegment& s : table.segments) items += (s.num_tokens + chunk_tokens - 1) / chunk_tokens;
  return items;
}

}  // namespace

DecodePlan PlanDecode(const SegmentTable& table, int page_size, int num_kv_heads, int min_ctas) {
  int64_t longest = page_size;
  for (const KvSegment& s : table.segments) longest = std::max<int64_t>(longest, s.num_tokens);
  const int64_t floor_tokens = std::max(page_size, 256);
  int64_t chunk = page_size;
  while (chunk < longest) chunk *= 2;  // power-of-two multiple of page_size covering the longest segment
  while (chunk / 2 >= floor_tokens && CountItems(table, chunk) * num_kv_heads < min_ctas) chunk /= 2;

  DecodePlan plan;
  plan.chunk_tokens = static_cast<int32_t>(chunk);
  plan.direct = true;
  for (int r = 0; r < table.num_requests(); ++r) {
    for (int s = table.segment_begin[r]; s < table.segment_begin[r + 1]; ++s) {
      const KvSegment& seg = table.segments[s];
      for (int64_t t = 0; t < seg.num_tokens; t += chunk) {
        DecodeWorkItem item;
        item.request = r;
        item.page_table_offset = static_cast<int32_t>(seg.page_table_offset + t / page_size);
        item.num_tokens = static_cast<int32_t>(std::min<int64_t>(chunk, seg.num_tokens - t));
        plan.items.push_back(item);
      }
    }
    plan.item_begin.push_back(static_cast<int32_t>(plan.items.size()));
    if (plan.item_begin[r + 1] - plan.item_begin[r] != 1) plan.direct = false;
  }
  return plan;
}

}  // namespace kvsim
