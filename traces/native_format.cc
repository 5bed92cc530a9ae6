#include "traces/native_format.h"

#include <fcntl.h>
#include <unistd.h>
// ZSTD_c_literalCompressionMode is an experimental parameter of zstd.h; a library without it makes the
// writer's Open fail with zstd's error.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/base/config.h"
#include "absl/numeric/bits.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "traces/trace_format.h"
#include "util/file.h"
#include "util/status_macros.h"

// Writer invariants: the file is built as PATH.tmp.PID, header block zeroed first; Close writes the real
// header in place and only then renames (CommitTempFile), and a writer destroyed unclosed removes its
// temporary, so PATH is a whole trace or untouched. frame_ holds the records since the last flush, coded
// against delta_, which restarts at every frame (each frame decodes alone); a frame is flushed once its
// encoded bytes reach frame_bytes, so it passes that size by less than one record.
// Reader invariants: offset_ is the file offset of the next unread byte and frame_offset_ that of the
// current frame's header; record_ counts the records returned, frame_left_ those left in the decoded
// frame, which lies in frame_[0, encoded) followed by kFramePaddingBytes readable bytes. status_ is
// sticky: after an error Next returns false. LoadFrame checks in this order: the clean end (every record
// the header announces read, then no byte), the frame header (magic, first record index, record count,
// sizes against kNativeMaxFrameBytes *before* anything is allocated), then reads, decompresses and
// verifies the checksum of the decoded bytes before a record is decoded; bytes left after a frame's last
// record are corruption.
// Why it is fast:
// - A one-byte varint is decoded by the first test; 2 to 8 bytes from one 8-byte load with no branch on the
//   length (the padding makes the load safe at the frame's end). Runs of consecutive hash ids are
//   written with SSE2 two ids per store (FillRun).
// - DecodeRecord assigns every field of the caller's Request, so its vectors keep their capacity and no
//   per-record clearing is needed; the model string is copied only when it changes.
// - Frames are read with read(2) straight into reused buffers (no stdio copy); zstd contexts are pooled
//   across readers (up to 8), since creating one costs about 400 records' decoding; writers store zstd
//   literals raw by default, which decompresses faster. The checksum is one multiply-xor per 8 bytes.

namespace kvsim {
namespace {

constexpr uint32_t kFrameMagic = 0x5246564b;  // "KVFR" little-endian

// ---- Little-endian fixed-width and varint coding ---------------------------------------------------

void PutFixed32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}
void PutFixed64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

inline void PutVarint(std::string* out, uint64_t v) {
  char b[10];
  int n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out->append(b, n);
}
inline uint64_t ZigZag(uint64_t v) {  // v is a two's-complement int64 bit pattern
  return (v << 1) ^ (0 - (v >> 63));
}
inline uint64_t UnZigZag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }
inline void PutSigned(std::string* out, uint64_t v) { PutVarint(out, ZigZag(v)); }

// Readable bytes a decoded frame's buffer holds after its end, so that Decoder may load 8 bytes at any
// position up to the end at once (their values past the end never reach a result).
constexpr size_t kFramePaddingBytes = 16;

// Bounds-checked decoding of one frame's bytes.
// REQUIRES: kFramePaddingBytes readable bytes after `end`.
class Decoder {
 public:
  Decoder(const char* begin, const char* end)
      : p_(reinterpret_cast<const uint8_t*>(begin)), end_(reinterpret_cast<const uint8_t*>(end)) {}
  // Varints of 2 to 8 bytes (every value below 2^56) decode from one 8-byte load without a branch on
  // their length; longer ones (9 or 10 bytes: most block hashes) from the same load and their last
  // one or two bytes.
  bool Varint(uint64_t* v) {
    if (*p_ < 0x80 && p_ < end_) {  // one byte: the common case, and the shortest dependency chain
      *v = *p_++;
      return true;
    }
    uint64_t word;
    std::memcpy(&word, p_, 8);
#if defined(ABSL_IS_BIG_ENDIAN)
    word = __builtin_bswap64(word);
#endif
    const uint64_t stops = ~word & 0x8080808080808080ULL;  // the high bit of each final-byte candidate
    if (stops == 0) return LongVarint(word, v);
    const uint64_t through_stop = stops ^ (stops - 1);  // ones up to and including the first stop bit
    const size_t length = (absl::countr_zero(stops) + 1) >> 3;
    if (length > static_cast<size_t>(end_ - p_)) return false;
    *v = Groups(word & through_stop);
    p_ += length;
    return true;
  }
  bool Signed(uint64_t* v) {
    if (!Varint(v)) return false;
    *v = UnZigZag(*v);
    return true;
  }
  bool Bytes(uint64_t n, std::string* out) {
    if (n > static_cast<uint64_t>(end_ - p_)) return false;
    out->assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  size_t remaining() const { return end_ - p_; }

 private:
  // The 7-bit groups of the bytes of `word` (little-endian), packed: 56 bits.
  static uint64_t Groups(uint64_t word) {
    uint64_t x = word & 0x7f7f7f7f7f7f7f7fULL;                             // the 7-bit groups, one per byte
    x = (x & 0x007f007f007f007fULL) | ((x & 0x7f007f007f007f00ULL) >> 1);  // 14 bits per 16
    x = (x & 0x00003fff00003fffULL) | ((x & 0x3fff00003fff0000ULL) >> 2);  // 28 bits per 32
    return (x & 0x000000000fffffffULL) | ((x & 0x0fffffff00000000ULL) >> 4);
  }
  // A varint whose first 8 bytes, `word`, all continue: 9 or 10 bytes. As a byte loop would read it:
  // the 10th byte gives bit 63 only (its other bits are dropped) and must end the varint.
  bool LongVarint(uint64_t word, uint64_t* v) {
    const size_t available = static_cast<size_t>(end_ - p_);
    if (available <= 8) return false;
    uint64_t result = Groups(word);
    const uint64_t ninth = p_[8];
    result |= (ninth & 0x7f) << 56;
    if (ninth < 0x80) {
      *v = result;
      p_ += 9;
      return true;
    }
    if (available <= 9) return false;
    const uint64_t tenth = p_[9];
    if (tenth >= 0x80) return false;
    *v = result | tenth << 63;
    p_ += 10;
    return true;
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

// Writes first, first + 1, ..., first + n - 1 (mod 2^64) to out[0, n).
inline void FillRun(uint64_t first, uint64_t n, uint64_t* out) {
  uint64_t j = 0;
#if defined(__SSE2__)
  __m128i a = _mm_set_epi64x(static_cast<int64_t>(first + 1), static_cast<int64_t>(first));
  __m128i b = _mm_add_epi64(a, _mm_set1_epi64x(2));
  const __m128i four = _mm_set1_epi64x(4);
  for (; j + 4 <= n; j += 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j + 2), b);
    a = _mm_add_epi64(a, four);
    b = _mm_add_epi64(b, four);
  }
#endif
  for (; j < n; ++j) out[j] = first + j;
}

// Per-frame delta state, shared by the encoder and the decoder.
struct DeltaState {
  uint64_t previous_id = ~uint64_t{0};  // so that request 0 first in a frame codes as delta 0
  uint64_t previous_arrival = 0;
  uint64_t previous_session = 0;
  uint64_t previous_first_hash = 0;
  std::string previous_model;
};

void EncodeRecord(const Request& r, int32_t header_block_tokens, DeltaState* s, std::string* out) {
  uint32_t flags = 0;
  if (r.session_id >= 0) flags |= kHasSession;
  if (r.parent_id >= 0) flags |= kHasParent;
  if (r.turn != 0) flags |= kHasTurn;
  if (r.type != proto::REQUEST_TYPE_UNSPECIFIED) flags |= kHasType;
  if (r.block_tokens != 0 && r.block_tokens == header_block_tokens) flags |= kHasHashes;
  if (r.model != s->previous_model) flags |= kModelChanged;
  if (!r.tool_calls.empty()) flags |= kHasToolCalls;
  if (r.failed) flags |= kFailed;
  if ((flags & kHasHashes) && !r.block_token_counts.empty()) flags |= kHasBlockTokenCounts;
  PutVarint(out, flags);
  PutSigned(out, r.request_id - (s->previous_id + 1));
  s->previous_id = r.request_id;
  const uint64_t arrival = static_cast<uint64_t>(r.arrival_ns);
  PutSigned(out, arrival - s->previous_arrival);
  s->previous_arrival = arrival;
  if (flags & kHasSession) {
    PutSigned(out, static_cast<uint64_t>(r.session_id) - s->previous_session);
    s->previous_session = static_cast<uint64_t>(r.session_id);
  }
  if (flags & kHasParent) PutSigned(out, r.request_id - static_cast<uint64_t>(r.parent_id));
  if (flags & kHasTurn) PutSigned(out, static_cast<uint64_t>(static_cast<int64_t>(r.turn)));
  PutSigned(out, static_cast<uint64_t>(r.input_tokens));
  PutSigned(out, static_cast<uint64_t>(r.output_tokens));
  if (flags & kHasType) PutVarint(out, static_cast<uint32_t>(r.type));
  if (flags & kHasHashes) {
    const std::vector<uint64_t>& h = r.block_hashes;
    PutVarint(out, h.size());
    uint64_t previous = s->previous_first_hash;
    for (size_t k = 0; k < h.size();) {
      // A run: h[k] as a delta, then how many of the following ids continue it by +1 each.
      PutSigned(out, h[k] - previous);
      size_t end = k + 1;
      while (end < h.size() && h[end] == h[end - 1] + 1) ++end;
      PutVarint(out, end - k - 1);
      previous = h[end - 1];
      k = end;
    }
    if (!h.empty()) s->previous_first_hash = h[0];
  }
  if (flags & kHasBlockTokenCounts) {
    for (int32_t tokens : r.block_token_counts) PutVarint(out, static_cast<uint32_t>(tokens));
  }
  if (flags & kModelChanged) {
    PutVarint(out, r.model.size());
    out->append(r.model);
    s->previous_model = r.model;
  }
  if (flags & kHasToolCalls) {
    PutVarint(out, r.tool_calls.size());
    for (const ToolCall& call : r.tool_calls) {
      PutVarint(out, call.name.size());
      out->append(call.name);
      PutSigned(out, static_cast<uint64_t>(call.duration_ns));
    }
  }
}

// Decodes one record into `*r`, setting every field (so `*r` needs no clearing and keeps its vectors'
// capacity); returns "" or what is wrong.
const char* DecodeRecord(Decoder& d, int32_t header_block_tokens, DeltaState* s, Request* r) {
  uint64_t flags, v;
  if (!d.Varint(&flags)) return "record flags run past the frame";
  if (flags & ~uint64_t{kKnownFlags}) return "unknown record flags";
  if (!d.Signed(&v)) return "request_id runs past the frame";
  r->request_id = s->previous_id + 1 + v;
  s->previous_id = r->request_id;
  if (!d.Signed(&v)) return "arrival_ns runs past the frame";
  s->previous_arrival += v;
  r->arrival_ns = static_cast<int64_t>(s->previous_arrival);
  r->session_id = -1;
  r->parent_id = -1;
  r->turn = 0;
  r->type = proto::REQUEST_TYPE_UNSPECIFIED;
  r->block_tokens = 0;
  if (flags & kHasSession) {
    if (!d.Signed(&v)) return "session_id runs past the frame";
    s->previous_session += v;
    r->session_id = static_cast<int64_t>(s->previous_session);
    if (r->session_id < 0) return "negative session_id";
  }
  if (flags & kHasParent) {
    if (!d.Signed(&v)) return "parent_id runs past the frame";
    r->parent_id = static_cast<int64_t>(r->request_id - v);
    if (r->parent_id < 0) return "negative parent_id";
  }
  if (flags & kHasTurn) {
    if (!d.Signed(&v)) return "turn runs past the frame";
    const int64_t turn = static_cast<int64_t>(v);
    if (turn < INT32_MIN || turn > INT32_MAX || turn == 0) return "turn out of range";
    r->turn = static_cast<int32_t>(turn);
  }
  if (!d.Signed(&v)) return "input_tokens runs past the frame";
  r->input_tokens = static_cast<int64_t>(v);
  if (!d.Signed(&v)) return "output_tokens runs past the frame";
  r->output_tokens = static_cast<int64_t>(v);
  if (flags & kHasType) {
    if (!d.Varint(&v)) return "type runs past the frame";
    if (v == 0 || !proto::RequestType_IsValid(static_cast<int>(v))) return "unknown request type";
    r->type = static_cast<proto::RequestType>(v);
  }
  if (flags & kHasHashes) {
    if (header_block_tokens == 0) return "block hashes in a trace whose header has block_tokens 0";
    r->block_tokens = header_block_tokens;
    uint64_t count;
    if (!d.Varint(&count)) return "block hash count runs past the frame";
    if (count > kNativeMaxHashesPerRecord) return "block hash count over the per-record limit";
    r->block_hashes.resize(count);  // keeps the capacity; zero-fills only ids past the previous length
    uint64_t* out = r->block_hashes.data();
    uint64_t previous = s->previous_first_hash;
    for (uint64_t k = 0; k < count;) {
      uint64_t run;
      if (!d.Signed(&v) || !d.Varint(&run)) return "block hashes run past the frame";
      if (run >= count - k) return "a block hash run longer than the hash count";
      const uint64_t h = previous + v;
      FillRun(h, run + 1, out + k);
      k += run + 1;
      previous = h + run;
    }
    if (count > 0) s->previous_first_hash = out[0];
  } else {
    r->block_hashes.clear();  // the caller may have left the previous record's ids
  }
  r->block_token_counts.clear();
  if (flags & kHasBlockTokenCounts) {
    if (!(flags & kHasHashes)) return "block token counts without block hashes";
    r->block_token_counts.resize(r->block_hashes.size());
    int64_t sum = 0;
    for (int32_t& tokens : r->block_token_counts) {
      if (!d.Varint(&v)) return "block token counts run past the frame";
      if (v == 0 || v > INT32_MAX) return "block token count out of range";
      tokens = static_cast<int32_t>(v);
      sum += tokens;
    }
    if (sum != r->input_tokens) return "block token counts do not sum to input_tokens";
  }
  if (flags & kModelChanged) {
    if (!d.Varint(&v) || !d.Bytes(v, &s->previous_model)) return "model runs past the frame";
  }
  if (r->model != s->previous_model) r->model = s->previous_model;  // mostly equal: no copy
  if (flags & kHasToolCalls) {
    uint64_t count;
    if (!d.Varint(&count) || count == 0 || count > d.remaining()) return "tool call count runs past the frame";
    r->tool_calls.resize(count);
    for (ToolCall& call : r->tool_calls) {
      if (!d.Varint(&v) || !d.Bytes(v, &call.name)) return "tool name runs past the frame";
      if (!d.Signed(&v)) return "tool duration runs past the frame";
      call.duration_ns = static_cast<int64_t>(v);
    }
  } else {
    r->tool_calls.clear();
  }
  r->failed = (flags & kFailed) != 0;
  return "";
}

// ---- Decompression contexts ----------------------------------------------------------------------

// ZSTD_createDCtx costs about as much as decoding 400 records (it probes the CPU's features, which is
// slow in a virtual machine), and a replay may open many small traces: readers hand their context back
// here for the next reader. A context keeps no state between ZSTD_decompressDCtx calls, so reuse cannot
// change what a frame decodes to. Thread-safe.
class DecompressionContexts {
 public:
  static ZSTD_DCtx* Acquire() {
    {
      absl::MutexLock lock(&mutex_);
      if (pool_ != nullptr && !pool_->empty()) {
        ZSTD_DCtx* context = pool_->back();
        pool_->pop_back();
        return context;
      }
    }
    return ZSTD_createDCtx();
  }
  // Takes ownership; null is a no-op.
  static void Release(ZSTD_DCtx* context) {
    if (context == nullptr) return;
    {
      absl::MutexLock lock(&mutex_);
      if (pool_ == nullptr) pool_ = new std::vector<ZSTD_DCtx*>();  // never destroyed
      if (pool_->size() < kMaxPooled) {
        pool_->push_back(context);
        return;
      }
    }
    ZSTD_freeDCtx(context);
  }

 private:
  static constexpr size_t kMaxPooled = 8;  // ~100 KB each
  ABSL_CONST_INIT static absl::Mutex mutex_;
  static std::vector<ZSTD_DCtx*>* pool_ ABSL_GUARDED_BY(mutex_);
};
ABSL_CONST_INIT absl::Mutex DecompressionContexts::mutex_(absl::kConstInit);
std::vector<ZSTD_DCtx*>* DecompressionContexts::pool_ = nullptr;

absl::Status OpenError(const std::string& path, const char* verb) {
  const std::string message = absl::StrCat(path, ": cannot ", verb, ": ", std::strerror(errno));
  if (errno == ENOENT) return absl::NotFoundError(message);
  if (errno == EACCES || errno == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// Parses and checks the 4096-byte header block.
absl::StatusOr<proto::TraceHeader> ParseHeader(const std::string& path, const std::string& block) {
  if (block.size() < kNativeHeaderBytes || std::memcmp(block.data(), kNativeMagic, 8) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path,
                                                   ": not a native kvsim trace (expected the magic \"KVSIMTRC\" and a ",
                                                   kNativeHeaderBytes, "-byte header)"));
  }
  const uint32_t version = GetFixed32(block.data() + 8);
  if (version != kNativeVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": native trace version ", version, "; this build reads version ", kNativeVersion));
  }
  const uint32_t length = GetFixed32(block.data() + 12);
  if (length > kNativeHeaderBytes - 24) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt header: length ", length));
  }
  const absl::string_view bytes(block.data() + 24, length);
  proto::TraceHeader header;
  if (NativeChecksum(bytes) != GetFixed64(block.data() + 16) ||
      !header.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt header: checksum mismatch"));
  }
  if (header.block_tokens() < 0) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt header: block_tokens < 0"));
  }
  return header;
}

// ---- Writer -------------------------------------------------------------------------------------

class NativeWriter final : public TraceWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path, const TraceWriterOptions& options) {
    if (options.block_tokens < 0) {
      return absl::InvalidArgumentError(absl::StrCat("block_tokens: expected >= 0, got ", options.block_tokens));
    }
    if (options.frame_bytes < 64 || options.frame_bytes > kNativeMaxFrameBytes / 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame_bytes: expected 64 .. ", kNativeMaxFrameBytes / 2, ", got ", options.frame_bytes));
    }
    if (options.compress && (options.zstd_level < 1 || options.zstd_level > ZSTD_maxCLevel())) {
      return absl::InvalidArgumentError(
          absl::StrCat("zstd_level: expected 1 .. ", ZSTD_maxCLevel(), ", got ", options.zstd_level));
    }
    std::unique_ptr<NativeWriter> writer(new NativeWriter(options));
    KVSIM_RETURN_IF_ERROR(writer->file_.Open(path));
    if (options.compress) KVSIM_RETURN_IF_ERROR(writer->StartCompression());
    const std::string zeros(kNativeHeaderBytes, '\0');  // the header is written last, in place
    KVSIM_RETURN_IF_ERROR(writer->file_.Put(zeros));
    return std::unique_ptr<TraceWriter>(std::move(writer));
  }

  ~NativeWriter() override { ZSTD_freeCCtx(cctx_); }

  absl::Status Write(const Request& r) override {
    if (!file_.is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path(), ": writer closed"));
    if (r.block_tokens != 0 && r.block_tokens != options_.block_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(file_.path(), ": record ", header_.num_requests(),
                                                     ": block_tokens: expected 0 or the trace's ",
                                                     options_.block_tokens, ", got ", r.block_tokens));
    }
    if (absl::Status counts = CheckBlockTokenCounts(r); !counts.ok()) {  // the reader would refuse it
      return absl::InvalidArgumentError(
          absl::StrCat(file_.path(), ": record ", header_.num_requests(), ": ", counts.message()));
    }
    if (r.block_tokens == 0 && !r.block_hashes.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file_.path(), ": record ", header_.num_requests(), ": block_hashes given with block_tokens 0"));
    }
    if (frame_records_ == 0) frame_first_record_ = header_.num_requests();
    EncodeRecord(r, options_.block_tokens, &delta_, &frame_);
    ++frame_records_;
    UpdateSummary(r);
    if (frame_.size() >= static_cast<size_t>(options_.frame_bytes)) return FlushFrame();
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (!file_.is_open()) return absl::FailedPreconditionError(absl::StrCat(file_.path(), ": closed twice"));
    KVSIM_RETURN_IF_ERROR(FlushFrame());
    std::string bytes;
    header_.SerializeToString(&bytes);
    if (bytes.size() > kNativeHeaderBytes - 24) {
      return absl::InternalError(absl::StrCat(file_.path(), ": header too large: ", bytes.size()));
    }
    std::string block(kNativeMagic, 8);
    PutFixed32(&block, kNativeVersion);
    PutFixed32(&block, static_cast<uint32_t>(bytes.size()));
    PutFixed64(&block, NativeChecksum(bytes));
    block += bytes;
    block.resize(kNativeHeaderBytes, '\0');
    if (std::fseek(file_.stream(), 0, SEEK_SET) != 0) {
      return absl::InternalError(absl::StrCat(file_.temp_path(), ": cannot seek: ", std::strerror(errno)));
    }
    KVSIM_RETURN_IF_ERROR(file_.Put(block));
    return file_.Commit();
  }

 private:
  explicit NativeWriter(const TraceWriterOptions& options) : options_(options) {
    header_.set_source_format(options.source_format);
    header_.set_block_tokens(options.block_tokens);
    header_.set_compression(options.compress ? proto::TRACE_COMPRESSION_ZSTD : proto::TRACE_COMPRESSION_NONE);
  }

  absl::Status StartCompression() {
    cctx_ = ZSTD_createCCtx();
    if (cctx_ == nullptr) return absl::InternalError(absl::StrCat(file_.path(), ": zstd: cannot allocate a context"));
    for (const auto& [parameter, value] :
         {std::make_pair(ZSTD_c_compressionLevel, options_.zstd_level),
          std::make_pair(ZSTD_c_literalCompressionMode,
                         static_cast<int>(options_.zstd_compress_literals ? ZSTD_ps_enable : ZSTD_ps_disable))}) {
      const size_t result = ZSTD_CCtx_setParameter(cctx_, parameter, value);
      if (ZSTD_isError(result)) {
        return absl::InternalError(absl::StrCat(file_.path(), ": zstd: ", ZSTD_getErrorName(result)));
      }
    }
    return absl::OkStatus();
  }


  void UpdateSummary(const Request& r) {
    const uint64_t n = header_.num_requests();
    if (n == 0) first_arrival_ns_ = r.arrival_ns;
    if (n > 0 && r.arrival_ns < last_arrival_ns_) {
      header_.set_num_out_of_order(header_.num_out_of_order() + 1);
    }
    last_arrival_ns_ = r.arrival_ns;
    header_.set_duration_ns(r.arrival_ns - first_arrival_ns_);
    header_.set_num_requests(n + 1);
    header_.set_input_tokens_total(header_.input_tokens_total() + r.input_tokens);
    header_.set_output_tokens_total(header_.output_tokens_total() + r.output_tokens);
    header_.set_block_references(header_.block_references() + r.block_hashes.size());
    header_.set_max_input_tokens(std::max(header_.max_input_tokens(), r.input_tokens));
    header_.set_max_output_tokens(std::max(header_.max_output_tokens(), r.output_tokens));
    if (r.failed) header_.set_num_failed(header_.num_failed() + 1);
  }

  absl::Status FlushFrame() {
    if (frame_records_ == 0) return absl::OkStatus();
    absl::string_view stored = frame_;
    if (options_.compress) {
      compressed_.resize(ZSTD_compressBound(frame_.size()));
      const size_t size = ZSTD_compress2(cctx_, compressed_.data(), compressed_.size(), frame_.data(), frame_.size());
      if (ZSTD_isError(size)) {
        return absl::InternalError(absl::StrCat(file_.path(), ": zstd: ", ZSTD_getErrorName(size)));
      }
      stored = absl::string_view(compressed_.data(), size);
    }
    std::string head;
    PutFixed32(&head, kFrameMagic);
    PutFixed32(&head, static_cast<uint32_t>(frame_records_));
    PutFixed32(&head, static_cast<uint32_t>(frame_.size()));
    PutFixed32(&head, static_cast<uint32_t>(stored.size()));
    PutFixed64(&head, frame_first_record_);
    PutFixed64(&head, NativeChecksum(frame_));
    KVSIM_RETURN_IF_ERROR(file_.Put(head));
    KVSIM_RETURN_IF_ERROR(file_.Put(stored));
    header_.set_num_frames(header_.num_frames() + 1);
    frame_.clear();
    frame_records_ = 0;
    delta_ = DeltaState();
    return absl::OkStatus();
  }

  StreamedFile file_;
  TraceWriterOptions options_;
  ZSTD_CCtx* cctx_ = nullptr;
  proto::TraceHeader header_;
  std::string frame_;
  std::string compressed_;
  uint64_t frame_records_ = 0;
  uint64_t frame_first_record_ = 0;
  DeltaState delta_;
  int64_t first_arrival_ns_ = 0;
  int64_t last_arrival_ns_ = 0;
};

// ---- Reader -------------------------------------------------------------------------------------

class NativeReader final : public TraceReader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return OpenError(path, "open");
    std::unique_ptr<NativeReader> reader(new NativeReader(path, fd));
    std::string block(kNativeHeaderBytes, '\0');
    const size_t got = reader->ReadFully(block.data(), block.size());
    if (!reader->status_.ok()) return reader->status_;
    block.resize(got);
    KVSIM_ASSIGN_OR_RETURN(reader->header_, ParseHeader(path, block));
    reader->info_.block_tokens = reader->header_.block_tokens();
    reader->offset_ = kNativeHeaderBytes;
    return std::unique_ptr<TraceReader>(std::move(reader));
  }

  ~NativeReader() override {
    ::close(fd_);
    DecompressionContexts::Release(dctx_);
  }

  bool Next(Request* request) override {
    if (!status_.ok()) return false;
    if (frame_left_ == 0) {
      if (!LoadFrame()) return false;
    }
    const char* problem = DecodeRecord(decoder_, header_.block_tokens(), &delta_, request);
    if (*problem != '\0') return Corrupt(problem);
    ++record_;
    if (--frame_left_ == 0 && decoder_.remaining() != 0) {
      return Corrupt("bytes left over after the frame's last record");
    }
    return true;
  }

  absl::Status status() const override { return status_; }
  const TraceInfo& info() const override { return info_; }

 private:
  NativeReader(std::string path, int fd) : fd_(fd), info_{std::move(path), "native", 0}, decoder_(nullptr, nullptr) {}

  // Reads up to `n` bytes (fewer only at the end of the file) straight into `out`: frames are large, so
  // a stdio buffer would only add a copy. Sets status_ on a read error.
  size_t ReadFully(char* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::read(fd_, out + done, n - done);
      if (got > 0) {
        done += static_cast<size_t>(got);
      } else if (got == 0) {
        break;
      } else if (errno != EINTR) {
        status_ = absl::DataLossError(absl::StrCat(info_.path, ": record ", record_, " (frame at byte ", frame_offset_,
                                                   "): cannot read: ", std::strerror(errno)));
        break;
      }
    }
    return done;
  }

  bool Corrupt(absl::string_view what) {
    status_ = absl::DataLossError(absl::StrCat(info_.path, ": record ", record_, " (frame at byte ", frame_offset_,
                                               "): corrupt or truncated trace: ", what));
    return false;
  }

  // Reads the next frame; false at a clean end (all records read, nothing after) or on error.
  bool LoadFrame() {
    frame_offset_ = offset_;
    char head[kNativeFrameHeaderBytes];
    const size_t got = ReadFully(head, sizeof(head));
    if (!status_.ok()) return false;
    offset_ += got;
    if (record_ == header_.num_requests()) {
      if (got == 0) return false;  // clean end
      return Corrupt("data after the last record the header announces");
    }
    if (got < sizeof(head)) {
      return Corrupt(
          absl::StrCat("file ends after ", record_, " of the header's ", header_.num_requests(), " records"));
    }
    const uint32_t records = GetFixed32(head + 4);
    const uint32_t encoded = GetFixed32(head + 8);
    const uint32_t stored = GetFixed32(head + 12);
    if (GetFixed32(head) != kFrameMagic) return Corrupt("bad frame magic");
    if (GetFixed64(head + 16) != record_) return Corrupt("frame starts at an unexpected record index");
    if (records == 0 || records > header_.num_requests() - record_) return Corrupt("bad frame record count");
    if (encoded > kNativeMaxFrameBytes || stored > kNativeMaxFrameBytes) return Corrupt("frame too large");
    const bool zstd = header_.compression() == proto::TRACE_COMPRESSION_ZSTD;
    if (!zstd && stored != encoded) return Corrupt("stored size differs from the encoded size");
    // The decoded frame lives in frame_[0, encoded), followed by kFramePaddingBytes (see Decoder).
    frame_.resize(encoded + kFramePaddingBytes);
    std::string& target = zstd ? compressed_ : frame_;
    if (zstd) target.resize(stored);
    const size_t read = ReadFully(target.data(), stored);
    if (!status_.ok()) return false;
    offset_ += read;
    if (read < stored) return Corrupt("file ends inside a frame");
    if (zstd) {
      if (dctx_ == nullptr) dctx_ = DecompressionContexts::Acquire();
      if (dctx_ == nullptr) {
        status_ =
            absl::ResourceExhaustedError(absl::StrCat(info_.path, ": zstd: cannot allocate a decompression context"));
        return false;
      }
      const size_t size = ZSTD_decompressDCtx(dctx_, frame_.data(), encoded, compressed_.data(), stored);
      if (ZSTD_isError(size) || size != encoded) return Corrupt("zstd frame does not decompress");
    }
    const absl::string_view frame(frame_.data(), encoded);
    if (NativeChecksum(frame) != GetFixed64(head + 24)) return Corrupt("frame checksum mismatch");
    decoder_ = Decoder(frame.data(), frame.data() + frame.size());
    delta_ = DeltaState();
    frame_left_ = records;
    return true;
  }

  int fd_;
  TraceInfo info_;
  proto::TraceHeader header_;
  ZSTD_DCtx* dctx_ = nullptr;
  std::string frame_;
  std::string compressed_;
  Decoder decoder_;
  DeltaState delta_;
  uint64_t frame_left_ = 0;
  uint64_t record_ = 0;
  uint64_t offset_ = 0;
  uint64_t frame_offset_ = 0;
  absl::Status status_;
};

}  // namespace

uint64_t NativeChecksum(absl::string_view data) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = 0x243f6a8885a308d3ULL ^ data.size();
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < data.size(); ++k) tail |= uint64_t{static_cast<uint8_t>(data[i + k])} << (8 * k);
  h = (h ^ tail) * kMul;
  return h ^ (h >> 32);
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenNativeTrace(const std::string& path, const TraceOptions& options) {
  return NativeReader::Open(path);
}

absl::StatusOr<proto::TraceHeader> ReadNativeHeader(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return OpenError(path, "open");
  std::string block(kNativeHeaderBytes, '\0');
  block.resize(std::fread(block.data(), 1, block.size(), file));
  std::fclose(file);
  return ParseHeader(path, block);
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenNativeTraceWriter(const std::string& path,
                                                                   const TraceWriterOptions& options) {
  return NativeWriter::Open(path, options);
}

bool LooksLikeNative(absl::string_view head) { return absl::StartsWith(head, absl::string_view(kNativeMagic, 8)); }

KVSIM_REGISTER_TRACE_FORMAT(
    native, {
                .name = "native",
                .description = "kvsim native binary trace (magic KVSIMTRC; varint records in zstd frames)",
                .detect_order = 0,
                .detect = LooksLikeNative,
                .open = OpenNativeTrace,
            });

}  // namespace kvsim
