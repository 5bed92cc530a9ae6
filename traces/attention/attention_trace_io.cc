#include "traces/attention/attention_trace_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "traces/attention/crc32.h"
#include "traces/attention/half.h"
#include "util/check.h"
#include "util/file.h"
#include "util/status_macros.h"

// Reader invariants (after Open): the file is mapped read-only and the reader never writes; every
// record's header and payload lie inside the map (Scan checks stored_bytes against what is left before
// any payload is touched), so Payload cannot read past it. samples_ has one entry per SAMPLE record,
// holding its decoded metadata and exactly num_kept_heads() HEAD references whose raw_bytes equal the
// size the header and that sample imply; the END record's count matched. ReadSample reads only this
// const state, which is why concurrent calls are safe.
// Order in Scan: bounds of the record header, then of its payload, then flags, then the tag's rules
// (HEADER first and once; HEAD only after a SAMPLE and no more than the header's heads; nothing after
// END). Small records (all but HEAD) are capped at 4 GiB raw and verified and decoded at once; a HEAD's
// checksum, decompression and finiteness check wait for ReadSample, which names the HEAD record at fault.
// Decoder: the first short read sticks (later reads return zeros and empty arrays); done() also
// demands that every byte was consumed. The writer validates a sample (shapes, values, column sums for
// all heads or none) before it writes any of its records.
// Why it is fast:
// - Open costs the record headers and the small payloads, O(records), not the tensor bytes: the
//   tensors' pages are not read until a sample is asked for.
// - ReadSample copies a stored HEAD payload once out of the map (or decompresses it once) and decodes it
//   in one pass: f32 by memcpy, fp16/bf16 element by element. The CRC-32 is table-driven (crc32.h).

namespace kvsim {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'S', 'A', 'T', 'T', 'N', '\x01'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFileHeaderBytes = 16;
constexpr uint64_t kRecordHeaderBytes = 32;
constexpr uint32_t kTagHeader = 1, kTagSample = 2, kTagHead = 3, kTagEnd = 4;
constexpr uint32_t kFlagZstd = 1;
// Bounds that keep a corrupt length field from requesting absurd allocations.
constexpr uint64_t kMaxSmallRecordBytes = uint64_t{1} << 32;

// Little-endian encoder for record payloads.
class Encoder {
 public:
  template <typename T>
  void Put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <typename T>
  void PutArray(const std::vector<T>& values) {
    Put<uint32_t>(static_cast<uint32_t>(values.size()));
    out_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  void PutTensor(const std::vector<float>& values, AttentionDType dtype) {
    const size_t start = out_.size();
    out_.resize(start + values.size() * DTypeBytes(dtype));
    char* dst = &out_[start];
    if (dtype == AttentionDType::kFloat32) {
      if (!values.empty()) std::memcpy(dst, values.data(), values.size() * sizeof(float));
      return;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t bits = dtype == AttentionDType::kFloat16 ? FloatToHalf(values[i]) : FloatToBFloat16(values[i]);
      std::memcpy(dst + 2 * i, &bits, 2);
    }
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// Bounds-checked little-endian decoder; the first failure sticks and is reported by ok().
class Decoder {
 public:
  explicit Decoder(absl::string_view data) : data_(data) {}
  template <typename T>
  T Get() {
    T value{};
    if (!Need(sizeof(T))) return value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  template <typename T>
  std::vector<T> GetArray() {
    const uint32_t n = Get<uint32_t>();
    std::vector<T> values;
    if (!Need(uint64_t{n} * sizeof(T))) return values;
    values.resize(n);
    // An empty vector's data() may be null, which memcpy must not get even for 0 bytes.
    if (n > 0) std::memcpy(values.data(), data_.data() + pos_, uint64_t{n} * sizeof(T));
    pos_ += uint64_t{n} * sizeof(T);
    return values;
  }
  std::vector<float> GetTensor(uint64_t count, AttentionDType dtype) {
    std::vector<float> values;
    const uint64_t bytes = count * DTypeBytes(dtype);
    if (!Need(bytes)) return values;
    values.resize(count);
    const char* src = data_.data() + pos_;
    if (dtype == AttentionDType::kFloat32) {
      if (count > 0) std::memcpy(values.data(), src, bytes);
    } else {
      for (uint64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        values[i] = dtype == AttentionDType::kFloat16 ? HalfToFloat(bits) : BFloat16ToFloat(bits);
      }
    }
    pos_ += bytes;
    return values;
  }
  std::string GetString() {
    const uint32_t n = Get<uint32_t>();
    if (!Need(n)) return "";
    std::string s(data_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == data_.size(); }
  uint64_t remaining() const { return data_.size() - pos_; }

 private:
  bool Need(uint64_t bytes) {
    if (!ok_ || bytes > data_.size() - pos_) ok_ = false;
    return ok_;
  }
  absl::string_view data_;
  uint64_t pos_ = 0;
  bool ok_ = true;
};

std::string EncodeHeader(const AttentionTraceHeader& h) {
  Encoder e;
  e.Put<uint32_t>(h.num_layers);
  e.Put<uint32_t>(h.num_query_heads);
  e.Put<uint32_t>(h.num_kv_heads);
  e.Put<uint32_t>(h.head_dim);
  e.Put<uint32_t>(static_cast<uint32_t>(h.dtype));
  e.Put<uint32_t>(static_cast<uint32_t>(h.rope.scaling));
  e.Put<double>(h.rope.base);
  e.Put<double>(h.rope.scaling_factor);
  e.Put<uint32_t>(h.synthetic ? 1 : 0);
  e.PutArray(h.kept_layers);
  e.PutArray(h.kept_kv_heads);
  e.Put<uint32_t>(static_cast<uint32_t>(h.model.size()));
  e.str().append(h.model);
  return std::move(e.str());
}

bool DecodeHeader(absl::string_view payload, AttentionTraceHeader* h) {
  Decoder d(payload);
  h->num_layers = static_cast<int32_t>(d.Get<uint32_t>());
  h->num_query_heads = static_cast<int32_t>(d.Get<uint32_t>());
  h->num_kv_heads = static_cast<int32_t>(d.Get<uint32_t>());
  h->head_dim = static_cast<int32_t>(d.Get<uint32_t>());
  h->dtype = static_cast<AttentionDType>(d.Get<uint32_t>());
  h->rope.scaling = static_cast<RopeScaling>(d.Get<uint32_t>());
  h->rope.base = d.Get<double>();
  h->rope.scaling_factor = d.Get<double>();
  h->synthetic = (d.Get<uint32_t>() & 1u) != 0;
  h->kept_layers = d.GetArray<int32_t>();
  h->kept_kv_heads = d.GetArray<int32_t>();
  h->model = d.GetString();
  return d.done();
}

std::string EncodeSample(const AttentionSample& s) {
  Encoder e;
  e.Put<uint64_t>(s.prompt_len);
  e.Put<uint64_t>(s.num_decode_steps);
  e.Put<uint64_t>(s.query_start);
  const bool sums = !s.heads.empty() && !s.heads[0].column_sums.empty();
  e.Put<uint32_t>(sums ? 1 : 0);
  e.PutArray(s.token_ids);
  e.PutArray(s.boundaries);
  return std::move(e.str());
}

bool DecodeSample(absl::string_view payload, AttentionSample* s, bool* has_column_sums) {
  Decoder d(payload);
  s->prompt_len = static_cast<int64_t>(d.Get<uint64_t>());
  s->num_decode_steps = static_cast<int64_t>(d.Get<uint64_t>());
  s->query_start = static_cast<int64_t>(d.Get<uint64_t>());
  *has_column_sums = (d.Get<uint32_t>() & 1u) != 0;
  s->token_ids = d.GetArray<int32_t>();
  s->boundaries = d.GetArray<int64_t>();
  return d.done();
}

// Raw bytes of one HEAD record for `sample` under `header`.
uint64_t HeadRecordBytes(const AttentionTraceHeader& h, const AttentionSample& s, bool sums) {
  const uint64_t d = h.head_dim, g = h.group_size();
  const uint64_t elements = 2 * s.seq_len() * d + g * s.num_queries() * d;
  return 8 + elements * DTypeBytes(h.dtype) + (sums ? g * s.prompt_len * 4 : 0);
}

absl::Status ErrnoStatus(const std::string& what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(errno));
  return errno == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

}  // namespace

int DTypeBytes(AttentionDType dtype) { return dtype == AttentionDType::kFloat32 ? 4 : 2; }

// ---------------------------------------------------------------------------------------------------
// Writer.

AttentionTraceWriter::AttentionTraceWriter(AttentionTraceHeader header, AttentionTraceWriteOptions options)
    : header_(std::move(header)), options_(options) {}

absl::StatusOr<std::unique_ptr<AttentionTraceWriter>> AttentionTraceWriter::Create(const std::string& path,
                                                                                   const AttentionTraceHeader& header,
                                                                                   AttentionTraceWriteOptions options) {
  KVSIM_RETURN_IF_ERROR(ValidateHeader(header));
  if (options.zstd_level < 0 || options.zstd_level > 19) {
    return absl::InvalidArgumentError(absl::StrCat("zstd level ", options.zstd_level, " is outside 0..19"));
  }
  std::unique_ptr<AttentionTraceWriter> writer(new AttentionTraceWriter(header, options));
  KVSIM_RETURN_IF_ERROR(writer->file_.Open(path));
  Encoder e;
  e.str().append(kMagic, sizeof(kMagic));
  e.Put<uint32_t>(kVersion);
  e.Put<uint32_t>(0);
  KVSIM_RETURN_IF_ERROR(writer->file_.Put(e.str()));
  KVSIM_RETURN_IF_ERROR(writer->WriteRecord(kTagHeader, EncodeHeader(header), false));
  return writer;
}

absl::Status AttentionTraceWriter::WriteRecord(uint32_t tag, const std::string& raw, bool compress) {
  std::string compressed;
  const std::string* stored = &raw;
  if (compress) {
    compressed.resize(ZSTD_compressBound(raw.size()));
    const size_t n = ZSTD_compress(compressed.data(), compressed.size(), raw.data(), raw.size(), options_.zstd_level);
    if (ZSTD_isError(n)) return absl::InternalError(absl::StrCat("zstd: ", ZSTD_getErrorName(n)));
    compressed.resize(n);
    stored = &compressed;
  }
  Encoder e;
  e.Put<uint32_t>(tag);
  e.Put<uint32_t>(compress ? kFlagZstd : 0);
  e.Put<uint64_t>(stored->size());
  e.Put<uint64_t>(raw.size());
  e.Put<uint32_t>(Crc32(*stored));
  e.Put<uint32_t>(0);
  KVSIM_RETURN_IF_ERROR(file_.Put(e.str()));
  return file_.Put(*stored);
}

absl::Status AttentionTraceWriter::Append(const AttentionSample& sample) {
  KVSIM_CHECK(file_.is_open()) << "Append after Finish";
  absl::Status valid = ValidateSample(header_, sample);
  if (valid.ok()) valid = ValidateSampleValues(header_, sample);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat("sample ", num_samples_, ": ", valid.message()));
  const bool sums = !sample.heads.empty() && !sample.heads[0].column_sums.empty();
  for (const HeadTensors& head : sample.heads) {
    if (head.column_sums.empty() == sums) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", num_samples_, ": column sums must be present for all heads or for none"));
    }
  }
  KVSIM_RETURN_IF_ERROR(WriteRecord(kTagSample, EncodeSample(sample), false));
  for (const HeadTensors& head : sample.heads) {
    Encoder e;
    e.Put<uint32_t>(head.layer);
    e.Put<uint32_t>(head.kv_head);
    e.PutTensor(head.keys, header_.dtype);
    e.PutTensor(head.values, header_.dtype);
    e.PutTensor(head.queries, header_.dtype);
    if (sums) e.PutTensor(head.column_sums, AttentionDType::kFloat32);
    KVSIM_RETURN_IF_ERROR(WriteRecord(kTagHead, e.str(), options_.zstd_level > 0));
  }
  ++num_samples_;
  return absl::OkStatus();
}

absl::Status AttentionTraceWriter::Finish() {
  KVSIM_CHECK(file_.is_open()) << "Finish called twice";
  Encoder e;
  e.Put<uint64_t>(num_samples_);
  KVSIM_RETURN_IF_ERROR(WriteRecord(kTagEnd, e.str(), false));
  return file_.Commit();
}

// ---------------------------------------------------------------------------------------------------
// Reader.

AttentionTraceReader::~AttentionTraceReader() {
  if (data_ != nullptr && size_ > 0) munmap(const_cast<char*>(data_), size_);
}

absl::Status AttentionTraceReader::Error(int64_t record_index, uint64_t offset, const std::string& what) const {
  return absl::DataLossError(absl::StrCat(path_, ": record ", record_index, " at byte offset ", offset, ": ", what));
}

absl::StatusOr<std::unique_ptr<AttentionTraceReader>> AttentionTraceReader::Open(const std::string& path) {
  std::unique_ptr<AttentionTraceReader> reader(new AttentionTraceReader());
  reader->path_ = path;
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot open ", path));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    close(fd);
    return ErrnoStatus(absl::StrCat("cannot stat ", path));
  }
  reader->size_ = static_cast<uint64_t>(info.st_size);
  if (reader->size_ > 0) {
    void* map = mmap(nullptr, reader->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      close(fd);
      return ErrnoStatus(absl::StrCat("cannot map ", path));
    }
    reader->data_ = static_cast<const char*>(map);
  }
  close(fd);
  KVSIM_RETURN_IF_ERROR(reader->Scan());
  return reader;
}

absl::StatusOr<std::string> AttentionTraceReader::Payload(const RecordRef& ref, int64_t record_index) const {
  absl::string_view stored(data_ + ref.offset + kRecordHeaderBytes, ref.stored_bytes);
  if (Crc32(stored) != ref.crc32) return Error(record_index, ref.offset, "checksum mismatch (corrupt payload)");
  if ((ref.flags & kFlagZstd) == 0) return std::string(stored);
  const std::string expected = absl::StrCat("zstd payload does not decompress to ", ref.raw_bytes, " bytes");
  const unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ref.raw_bytes)) {
    return Error(record_index, ref.offset, absl::StrCat(expected, " (its frame declares ", declared, ")"));
  }
  // Decompressed into a buffer that grows with what the frame actually yields (doubling, at most
  // raw_bytes), so a record that claims a huge size over a small frame cannot make the reader allocate
  // that size: memory stays within twice the bytes the frame really produces.
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> stream(ZSTD_createDStream(), ZSTD_freeDStream);
  if (stream == nullptr) return absl::ResourceExhaustedError(absl::StrCat(path_, ": cannot create a zstd stream"));
  std::string raw;
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  size_t produced = 0;
  size_t capacity = static_cast<size_t>(std::min<uint64_t>(
      ref.raw_bytes, std::max<uint64_t>(uint64_t{1} << 16, uint64_t{4} * stored.size())));
  raw.resize(capacity);
  for (;;) {
    if (produced == raw.size() && capacity < ref.raw_bytes) {
      capacity = static_cast<size_t>(std::min<uint64_t>(ref.raw_bytes, uint64_t{2} * capacity));
      raw.resize(capacity);
    }
    ZSTD_outBuffer out{raw.data(), raw.size(), produced};
    const size_t in_before = in.pos, out_before = produced;
    const size_t left = ZSTD_decompressStream(stream.get(), &out, &in);
    produced = out.pos;
    if (ZSTD_isError(left)) {
      return Error(record_index, ref.offset, absl::StrCat(expected, ": ", ZSTD_getErrorName(left)));
    }
    if (left == 0) break;  // the frame is complete
    if (produced == out_before && in.pos == in_before) {  // no progress: more than raw_bytes, or cut short
      return Error(record_index, ref.offset,
                   absl::StrCat(expected, produced == ref.raw_bytes ? " (it holds more)" : " (the frame is cut short)"));
    }
  }
  if (produced != ref.raw_bytes || in.pos != in.size) {
    return Error(record_index, ref.offset,
                 absl::StrCat(expected, " (", produced, ", with ", in.size - in.pos, " stored bytes left over)"));
  }
  raw.resize(produced);
  return raw;
}

absl::Status AttentionTraceReader::Scan() {
  if (size_ < kFileHeaderBytes || std::memcmp(data_, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(path_, ": not an attention trace (bad magic)"));
  }
  uint32_t version;
  std::memcpy(&version, data_ + 8, 4);
  if (version != kVersion) {
    return absl::DataLossError(absl::StrCat(path_, ": unsupported version ", version, ", expected ", kVersion));
  }
  uint64_t offset = kFileHeaderBytes;
  int64_t index = 0;
  bool have_header = false, have_end = false;
  size_t heads_per_sample = 0;
  for (; offset < size_; ++index) {
    if (have_end) return Error(index, offset, "data after the END record");
    if (size_ - offset < kRecordHeaderBytes) return Error(index, offset, "truncated record header");
    RecordRef ref;
    ref.offset = offset;
    uint32_t tag;
    std::memcpy(&tag, data_ + offset, 4);
    std::memcpy(&ref.flags, data_ + offset + 4, 4);
    std::memcpy(&ref.stored_bytes, data_ + offset + 8, 8);
    std::memcpy(&ref.raw_bytes, data_ + offset + 16, 8);
    std::memcpy(&ref.crc32, data_ + offset + 24, 4);
    if (ref.stored_bytes > size_ - offset - kRecordHeaderBytes) {
      return Error(index, offset,
                   absl::StrCat("truncated: payload of ", ref.stored_bytes, " bytes, only ",
                                size_ - offset - kRecordHeaderBytes, " left in the file"));
    }
    if ((ref.flags & ~kFlagZstd) != 0) return Error(index, offset, "unknown record flags");
    if ((ref.flags & kFlagZstd) == 0 && ref.raw_bytes != ref.stored_bytes) {
      return Error(index, offset, "uncompressed record with raw size != stored size");
    }
    offset += kRecordHeaderBytes + ref.stored_bytes;
    const bool small = tag != kTagHead;
    if (small && ref.raw_bytes > kMaxSmallRecordBytes) return Error(index, ref.offset, "record too large");
    if (!have_header && tag != kTagHeader) return Error(index, ref.offset, "first record is not HEADER");
    if (tag == kTagHeader) {
      if (have_header) return Error(index, ref.offset, "second HEADER record");
      KVSIM_ASSIGN_OR_RETURN(std::string payload, Payload(ref, index));
      if (!DecodeHeader(payload, &header_)) return Error(index, ref.offset, "malformed HEADER payload");
      if (auto s = ValidateHeader(header_); !s.ok()) return Error(index, ref.offset, std::string(s.message()));
      heads_per_sample = header_.num_kept_heads();
      have_header = true;
    } else if (tag == kTagSample) {
      if (!samples_.empty() && samples_.back().heads.size() != heads_per_sample) {
        return Error(index, ref.offset,
                     absl::StrCat("sample ", samples_.size() - 1, " has ", samples_.back().heads.size(),
                                  " HEAD records, expected ", heads_per_sample));
      }
      KVSIM_ASSIGN_OR_RETURN(std::string payload, Payload(ref, index));
      SampleIndex sample;
      sample.record_index = index;
      sample.offset = ref.offset;
      if (!DecodeSample(payload, &sample.meta, &sample.has_column_sums)) {
        return Error(index, ref.offset, "malformed SAMPLE payload");
      }
      AttentionSample& m = sample.meta;
      if (m.prompt_len <= 0 || m.num_decode_steps < 0 || m.query_start < 0 || m.query_start > m.prompt_len ||
          m.prompt_len > (int64_t{1} << 40) || m.num_decode_steps > (int64_t{1} << 40)) {
        return Error(index, ref.offset,
                     absl::StrCat("inconsistent sample sizes: prompt_len ", m.prompt_len, ", decode steps ",
                                  m.num_decode_steps, ", query_start ", m.query_start));
      }
      samples_.push_back(std::move(sample));
    } else if (tag == kTagHead) {
      if (samples_.empty()) return Error(index, ref.offset, "HEAD record before any SAMPLE");
      SampleIndex& sample = samples_.back();
      if (sample.heads.size() >= heads_per_sample) {
        return Error(
            index, ref.offset,
            absl::StrCat("sample ", samples_.size() - 1, " has more than ", heads_per_sample, " HEAD records"));
      }
      const uint64_t expected = HeadRecordBytes(header_, sample.meta, sample.has_column_sums);
      if (ref.raw_bytes != expected) {
        return Error(index, ref.offset,
                     absl::StrCat("HEAD record of sample ", samples_.size() - 1, " has ", ref.raw_bytes,
                                  " bytes, expected ", expected));
      }
      sample.heads.push_back(ref);
    } else if (tag == kTagEnd) {
      if (!samples_.empty() && samples_.back().heads.size() != heads_per_sample) {
        return Error(index, ref.offset,
                     absl::StrCat("sample ", samples_.size() - 1, " has ", samples_.back().heads.size(),
                                  " HEAD records, expected ", heads_per_sample));
      }
      KVSIM_ASSIGN_OR_RETURN(std::string payload, Payload(ref, index));
      Decoder d(payload);
      const uint64_t count = d.Get<uint64_t>();
      if (!d.done() || count != samples_.size()) {
        return Error(index, ref.offset,
                     absl::StrCat("END record counts ", count, " samples, the file has ", samples_.size()));
      }
      have_end = true;
    } else {
      return Error(index, ref.offset, absl::StrCat("unknown record tag ", tag));
    }
  }
  if (!have_end) return Error(index, offset, "truncated: the file ends without an END record");
  return absl::OkStatus();
}

absl::StatusOr<AttentionSample> AttentionTraceReader::ReadSample(int64_t index) const {
  KVSIM_CHECK(index >= 0 && index < num_samples()) << "sample " << index;
  const SampleIndex& entry = samples_[index];
  AttentionSample sample = entry.meta;
  const int64_t n = sample.seq_len(), d = header_.head_dim, g = header_.group_size();
  sample.heads.resize(entry.heads.size());
  for (size_t i = 0; i < entry.heads.size(); ++i) {
    const int64_t record = entry.record_index + 1 + static_cast<int64_t>(i);
    KVSIM_ASSIGN_OR_RETURN(std::string payload, Payload(entry.heads[i], record));
    Decoder dec(payload);
    HeadTensors& head = sample.heads[i];
    head.layer = static_cast<int32_t>(dec.Get<uint32_t>());
    head.kv_head = static_cast<int32_t>(dec.Get<uint32_t>());
    head.keys = dec.GetTensor(n * d, header_.dtype);
    head.values = dec.GetTensor(n * d, header_.dtype);
    head.queries = dec.GetTensor(g * sample.num_queries() * d, header_.dtype);
    if (entry.has_column_sums) head.column_sums = dec.GetTensor(g * sample.prompt_len, AttentionDType::kFloat32);
    if (!dec.done()) return Error(record, entry.heads[i].offset, "malformed HEAD payload");
  }
  if (auto s = ValidateSample(header_, sample); !s.ok()) {
    return Error(entry.record_index, entry.offset, absl::StrCat("sample ", index, ": ", s.message()));
  }
  for (size_t i = 0; i < sample.heads.size(); ++i) {  // the HEAD record holding a bad value is named
    if (auto s = ValidateHeadValues(header_, sample, i); !s.ok()) {
      return Error(entry.record_index + 1 + static_cast<int64_t>(i), entry.heads[i].offset,
                   absl::StrCat("sample ", index, ": ", s.message()));
    }
  }
  return sample;
}

}  // namespace kvsim
