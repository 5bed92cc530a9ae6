// File: kernels/layout/kv_layout.h
//
// The layouts shared by the CPU references and the GPU kernels (plain C++, no CUDA types): the paged KV
// pool, the segment table that describes each request's context as a list of page runs, and the storage
// of compressed KV formats.
//
// Paged KV pool (one per K and one per V), "NHD" like FlashInfer and vLLM:
//   element (page, slot, kv_head, dim) at ((page * page_size + slot) * num_kv_heads + kv_head) * head_dim + dim
// so one token's head_dim values for one KV head are contiguous (256 bytes in bf16 at head_dim 128).
//
// Segment table (CSR): request r owns segments [segment_begin[r], segment_begin[r + 1]). A segment is a
// run of pages listed in `page_table` from `page_table_offset`; it starts at slot 0 of its first page and
// holds `num_tokens` tokens, so only its last page may be partly used. A request's context is the
// concatenation of its segments in order (token positions count up across them). Segments may be empty.
// Pages may repeat across requests (shared prefixes) and need not be contiguous or ordered in the pool.
//
// Compressed formats (KvDtype), stored per pool:
//   kBf16:     data = bf16 values, layout above.
//   kFp8E4m3:  data = one e4m3 byte per value; scale (float) per (page, kv_head, slot): [pages][H][page_size].
//   kInt8:     data = int8 (symmetric, code in [-127, 127]); scale as for fp8.
//   kInt4/kInt2: asymmetric codes packed along head_dim, channel c in byte c / (8 / bits) at bit
//              (c % (8 / bits)) * bits: [pages][page_size][H][head_dim * bits / 8] bytes; value = code *
//              scale + zero with float scale and zero:
//     keys   (KIVI-style, per channel): one (scale, zero) per channel for each group of
//            KeyGroupTokens(group_size, page_size) consecutive slots of a page: [pages][H][groups][head_dim];
//     values (per token): one (scale, zero) per group of `group_size` consecutive channels of a token:
//            [pages][H][page_size][head_dim / group_size].
//
// Example:
//   SegmentTable table;
//   table.AddRequest({{/*pages=*/{4, 9}, /*num_tokens=*/20}, {{2}, 3}});  // 23 tokens in two segments
//   KVSIM_RETURN_IF_ERROR(ValidateSegmentTable(table, layout));
//
// Thread-safety: plain values; no shared state.
#ifndef KVSIM_KERNELS_LAYOUT_KV_LAYOUT_H_
#define KVSIM_KERNELS_LAYOUT_KV_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvsim {

// Shape of one paged KV pool.
struct PagedKvLayout {
  int64_t num_pages = 0;
  int page_size = 16;  // tokens per page
  int num_kv_heads = 8;
  int head_dim = 128;

  int64_t NumElements() const { return num_pages * page_size * num_kv_heads * head_dim; }
  // Index of element (page, slot, kv_head, 0) in the pool.
  int64_t RowOffset(int64_t page, int slot, int kv_head) const {
    return ((page * page_size + slot) * num_kv_heads + kv_head) * static_cast<int64_t>(head_dim);
  }
};

// A run of pages holding `num_tokens` tokens, listed in SegmentTable::page_table from `page_table_offset`.
struct KvSegment {
  int32_t page_table_offset = 0;
  int32_t num_tokens = 0;
};

// Per request, a list of segments (CSR over `segments`).
struct SegmentTable {
  std::vector<int32_t> segment_begin = {0};  // size num_requests + 1
  std::vector<KvSegment> segments;
  std::vector<int32_t> page_table;

  // A segment described by its pages and token count, for building tables.
  struct SegmentSpec {
    std::vector<int32_t> pages;
    int32_t num_tokens = 0;
  };
  // Appends a request made of `specs` in order.
  void AddRequest(const std::vector<SegmentSpec>& specs);

  int num_requests() const { return static_cast<int>(segment_begin.size()) - 1; }
  // Tokens of request r (sum over its segments).
  int64_t RequestTokens(int r) const;
};

// Ok if every offset, page index and count is in range: segment_begin is non-decreasing from 0 and ends at
// segments.size(); each segment's ceil(num_tokens / page_size) pages exist in page_table and name pages
// of the pool. InvalidArgument naming the request and segment otherwise.
absl::Status ValidateSegmentTable(const SegmentTable& table, const PagedKvLayout& layout);

// Page and slot of token `t` (0-based) of `segment`.
inline void LocateToken(const SegmentTable& table, const KvSegment& segment, int t, int page_size, int32_t* page,
                        int* slot) {
  *page = table.page_table[segment.page_table_offset + t / page_size];
  *slot = t % page_size;
}

enum class KvDtype { kBf16 = 0, kFp8E4m3 = 1, kInt8 = 2, kInt4 = 3, kInt2 = 4 };

// "bf16", "fp8", "int8", "int4", "int2".
std::string KvDtypeName(KvDtype dtype);
// Bits per stored value (16, 8, 8, 4, 2).
int KvDtypeBits(KvDtype dtype);

// Tokens sharing one key (scale, zero) per channel in kInt4/kInt2: the group, capped at one page.
inline int KeyGroupTokens(int group_size, int page_size) { return group_size < page_size ? group_size : page_size; }

// Ok if `group_size` suits `dtype` and `layout`: for kInt4/kInt2 one of 32, 64, 128 dividing head_dim,
// and page_size a multiple of KeyGroupTokens; ignored (any value) for the other formats.
absl::Status ValidateQuantGroup(KvDtype dtype, int group_size, const PagedKvLayout& layout);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_LAYOUT_KV_LAYOUT_H_
