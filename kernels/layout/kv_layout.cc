#include "kernels/layout/kv_layout.h"

#include "absl/strings/str_format.h"

namespace kvsim {

void SegmentTable::AddRequest(const std::vector<SegmentSpec>& specs) {
  for (const SegmentSpec& spec : specs) {
    KvSegment segment;
    segment.page_table_offset = static_cast<int32_t>(page_table.size());
    segment.num_tokens = spec.num_tokens;
    page_table.insert(page_table.end(), spec.pages.begin(), spec.pages.end());
    segments.push_back(segment);
  }
  segment_begin.push_back(static_cast<int32_t>(segments.size()));
}

int64_t SegmentTable::RequestTokens(int r) const {
  int64_t total = 0;
  for (int s = segment_begin[r]; s < segment_begin[r + 1]; ++s) total += segments[s].num_tokens;
  return total;
}

absl::Status ValidateSegmentTable(const SegmentTable& table, const PagedKvLayout& layout) {
  if (layout.page_size <= 0 || layout.num_kv_heads <= 0 || layout.head_dim <= 0 || layout.num_pages < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KV layout: page_size, num_kv_heads and head_dim must be > 0 (got %d, %d, %d), num_pages >= 0",
                        layout.page_size, layout.num_kv_heads, layout.head_dim));
  }
  if (table.segment_begin.empty() || table.segment_begin[0] != 0 ||
      table.segment_begin.back() != static_cast<int32_t>(table.segments.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "segment table: segment_begin must start at 0 and end at the number of segments (%d)", table.segments.size()));
  }
  for (int r = 0; r < table.num_requests(); ++r) {
    if (table.segment_begin[r + 1] < table.segment_begin[r]) {
      return absl::InvalidArgumentError(absl::StrFormat("segment table: request %d: segment_begin decreases", r));
    }
    for (int s = table.segment_begin[r]; s < table.segment_begin[r + 1]; ++s) {
      const KvSegment& seg = table.segments[s];
      const int64_t pages = (int64_t{seg.num_tokens} + layout.page_size - 1) / layout.page_size;
      if (seg.num_tokens < 0 || seg.page_table_offset < 0 ||
          seg.page_table_offset + pages > static_cast<int64_t>(table.page_table.size())) {
        return absl::InvalidArgumentError(
            absl::StrFormat("segment table: request %d segment %d: %d tokens from page-table offset %d need %d pages; "
                            "the page table has %d entries",
                            r, s, seg.num_tokens, seg.page_table_offset, pages, table.page_table.size()));
      }
      for (int64_t i = 0; i < pages; ++i) {
        const int32_t page = table.page_table[seg.page_table_offset + i];
        if (page < 0 || page >= layout.num_pages) {
          return absl::InvalidArgumentError(
              absl::StrFormat("segment table: request %d segment %d: page %d is outside the pool of %d pages", r, s,
                              page, layout.num_pages));
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string KvDtypeName(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kBf16:
      return "bf16";
    case KvDtype::kFp8E4m3:
      return "fp8";
    case KvDtype::kInt8:
      return "int8";
    case KvDtype::kInt4:
      return "int4";
    case KvDtype::kInt2:
      return "int2";
  }
  return "unknown";
}

int KvDtypeBits(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kBf16:
      return 16;
    case KvDtype::kFp8E4m3:
    case KvDtype::kInt8:
      return 8;
    case KvDtype::kInt4:
      return 4;
    case KvDtype::kInt2:
      return 2;
  }
  return 0;
}

absl::Status ValidateQuantGroup(KvDtype dtype, int group_size, const PagedKvLayout& layout) {
  if (dtype != KvDtype::kInt4 && dtype != KvDtype::kInt2) return absl::OkStatus();
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: group size must be 32, 64 or 128 (got %d)", KvDtypeName(dtype), group_size));
  }
  if (layout.head_dim % group_size != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: group size %d does not divide head_dim %d",
                                                      KvDtypeName(dtype), group_size, layout.head_dim));
  }
  if (layout.page_size % KeyGroupTokens(group_size, layout.page_size) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: group size %d does not divide page_size %d",
                                                      KvDtypeName(dtype), group_size, layout.page_size));
  }
  return absl::OkStatus();
}

}  // namespace kvsim
