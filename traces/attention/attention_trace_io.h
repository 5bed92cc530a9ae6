// File: traces/attention/attention_trace_io.h
//
// The attention-trace file (".kvat"): a binary, little-endian, record-structured container for
// AttentionTraceHeader and AttentionSample (attention_trace.h). tools/record_attention.py writes the
// same layout from Python.
//
//   file    = magic "KVSATTN\x01" (8 bytes) | u32 version (1) | u32 reserved (0) | record*
//   record  = u32 tag | u32 flags | u64 stored_bytes | u64 raw_bytes | u32 crc32 | u32 reserved | payload
//             flags bit 0: payload is zstd-compressed (raw_bytes after decompression); crc32 (zlib's CRC-32,
//             crc32.h) covers the stored payload bytes.
//   records = HEADER, then for each sample: SAMPLE followed by one HEAD per kept (layer, KV head) in
//             header order (layer-major), then END. Nothing may follow END.
//   HEADER  (tag 1) u32 num_layers, num_query_heads, num_kv_heads, head_dim, dtype, rope_scaling |
//                   f64 rope_base, rope_scaling_factor | u32 flags (bit 0 synthetic) |
//                   u32 n, i32 kept_layers[n] | u32 m, i32 kept_kv_heads[m] | u32 len, model[len]
//   SAMPLE  (tag 2) u64 prompt_len, num_decode_steps, query_start | u32 flags (bit 0 column sums present) |
//                   u32 t, i32 token_ids[t] | u32 b, u64 boundaries[b]
//   HEAD    (tag 3) u32 layer, kv_head | keys[seq_len*d] | values[seq_len*d] | queries[G*(seq_len-query_start)*d]
//                   (in the header's dtype: fp16, bf16 or f32) | f32 column_sums[G*prompt_len] if flagged
//   END     (tag 4) u64 num_samples
//
// Reading memory-maps the file. Open() walks the record headers and decodes the small HEADER and SAMPLE
// records (checksums verified), so a truncated or inconsistent file is refused before any tensor is read;
// ReadSample() verifies the HEAD records' checksums, decodes them and refuses a tensor entry that is not
// finite (ValidateSampleValues: e.g. an fp16 overflow from another writer). Every error is DataLoss (corruption,
// truncation) or InvalidArgument (inconsistent contents), naming the file, record index and byte offset.
//
// Writing streams to "<path>.tmp.<pid>" and renames it over `path` in Finish(), so readers never see a
// partial file.
//
// Thread-safety: a reader may serve concurrent ReadSample() calls; a writer is single-threaded.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto writer, AttentionTraceWriter::Create(path, header, {.zstd_level = 3}));
//   KVSIM_RETURN_IF_ERROR(writer->Append(sample));
//   KVSIM_RETURN_IF_ERROR(writer->Finish());
//   KVSIM_ASSIGN_OR_RETURN(auto reader, AttentionTraceReader::Open(path));
//   KVSIM_ASSIGN_OR_RETURN(AttentionSample first, reader->ReadSample(0));
#ifndef KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_IO_H_
#define KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_IO_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "traces/attention/attention_trace.h"
#include "util/file.h"

namespace kvsim {

struct AttentionTraceWriteOptions {
  int zstd_level = 0;  // 0 = store payloads uncompressed; 1..19 = zstd level for HEAD records
};

class AttentionTraceWriter {
 public:
  // Validates `header` and starts the file. InvalidArgument for a bad header; I/O errors as util/file.h.
  static absl::StatusOr<std::unique_ptr<AttentionTraceWriter>> Create(const std::string& path,
                                                                      const AttentionTraceHeader& header,
                                                                      AttentionTraceWriteOptions options = {});
  // Destroyed without Finish(): the temporary file is removed (StreamedFile).

  // Appends one sample (ValidateSample() and ValidateSampleValues() first: InvalidArgument if either
  // fails, e.g. a value that overflows fp16, and nothing is written). Tensors are rounded to the
  // header's dtype.
  absl::Status Append(const AttentionSample& sample);
  // Writes END, flushes, and renames the file into place. REQUIRES: called once.
  absl::Status Finish();

 private:
  AttentionTraceWriter(AttentionTraceHeader header, AttentionTraceWriteOptions options);
  absl::Status WriteRecord(uint32_t tag, const std::string& raw, bool compress);

  StreamedFile file_;
  AttentionTraceHeader header_;
  AttentionTraceWriteOptions options_;
  int64_t num_samples_ = 0;
};

class AttentionTraceReader {
 public:
  // Maps `path` and checks its structure (see the file comment). NotFound if it does not exist.
  static absl::StatusOr<std::unique_ptr<AttentionTraceReader>> Open(const std::string& path);
  ~AttentionTraceReader();

  const AttentionTraceHeader& header() const { return header_; }
  int64_t num_samples() const { return static_cast<int64_t>(samples_.size()); }
  // Decodes sample `index` (0-based). REQUIRES: index < num_samples(). DataLoss on a checksum mismatch.
  absl::StatusOr<AttentionSample> ReadSample(int64_t index) const;

 private:
  struct RecordRef {
    uint64_t offset = 0;  // of the record header
    uint32_t flags = 0;
    uint64_t stored_bytes = 0;
    uint64_t raw_bytes = 0;
    uint32_t crc32 = 0;
  };
  struct SampleIndex {
    AttentionSample meta;  // everything but the heads' tensors
    bool has_column_sums = false;
    int64_t record_index = 0;  // of the SAMPLE record
    uint64_t offset = 0;       // of the SAMPLE record
    std::vector<RecordRef> heads;
  };
  AttentionTraceReader() = default;
  absl::Status Scan();
  absl::StatusOr<std::string> Payload(const RecordRef& ref, int64_t record_index) const;
  absl::Status Error(int64_t record_index, uint64_t offset, const std::string& what) const;

  std::string path_;
  const char* data_ = nullptr;
  uint64_t size_ = 0;
  AttentionTraceHeader header_;
  std::vector<SampleIndex> samples_;
};

// The size in bytes of one element of `dtype` in a file.
int DTypeBytes(AttentionDType dtype);

}  // namespace kvsim

#endif  // KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_IO_H_
