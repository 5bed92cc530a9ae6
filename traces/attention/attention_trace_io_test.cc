#include "traces/attention/attention_trace_io.h"

#include <sys/resource.h>
#include <unistd.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "traces/attention/crc32.h"
#include "traces/attention/half.h"
#include "traces/attention/synthetic_trace.h"
#include "util/file.h"

namespace kvsim {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name, ".", getpid(), ".kvat");
}

SyntheticTrace Small(AttentionDType dtype, bool sums) {
  SyntheticTraceOptions o;
  o.num_samples = 2;
  o.num_layers = 2;
  o.num_kv_heads = 2;
  o.group_size = 2;
  o.head_dim = 40;
  o.prompt_len = 24;
  o.decode_steps = 3;
  o.query_window = 4;
  o.dtype = dtype;
  o.column_sums = sums;
  SyntheticTrace t = GenerateSyntheticTrace(o);
  t.samples[0].token_ids.assign(t.samples[0].seq_len(), 7);
  return t;
}

absl::Status Write(const std::string& path, const SyntheticTrace& t, int zstd_level = 0) {
  auto writer = AttentionTraceWriter::Create(path, t.header, {.zstd_level = zstd_level});
  if (!writer.ok()) return writer.status();
  for (const auto& s : t.samples) {
    if (auto status = (*writer)->Append(s); !status.ok()) return status;
  }
  return (*writer)->Finish();
}

float Round(float x, AttentionDType dtype) {
  if (dtype == AttentionDType::kFloat16) return HalfToFloat(FloatToHalf(x));
  if (dtype == AttentionDType::kBFloat16) return BFloat16ToFloat(FloatToBFloat16(x));
  return x;
}

void ExpectRoundTrip(AttentionDType dtype, bool sums, int zstd_level) {
  SyntheticTrace t = Small(dtype, sums);
  const std::string path = TempPath(absl::StrCat("rt", static_cast<int>(dtype), sums, zstd_level));
  ASSERT_TRUE(Write(path, t, zstd_level).ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const AttentionTraceHeader& h = (*reader)->header();
  EXPECT_EQ(h.model, "synthetic");
  EXPECT_TRUE(h.synthetic);
  EXPECT_EQ(h.kept_layers, t.header.kept_layers);
  EXPECT_EQ(h.dtype, dtype);
  ASSERT_EQ((*reader)->num_samples(), 2);
  for (int s = 0; s < 2; ++s) {
    auto sample = (*reader)->ReadSample(s);
    ASSERT_TRUE(sample.ok()) << sample.status();
    const AttentionSample& want = t.samples[s];
    EXPECT_EQ(sample->prompt_len, want.prompt_len);
    EXPECT_EQ(sample->num_decode_steps, want.num_decode_steps);
    EXPECT_EQ(sample->query_start, want.query_start);
    EXPECT_EQ(sample->token_ids, want.token_ids);
    EXPECT_EQ(sample->boundaries, want.boundaries);
    ASSERT_EQ(sample->heads.size(), want.heads.size());
    for (size_t i = 0; i < want.heads.size(); ++i) {
      const HeadTensors& a = sample->heads[i];
      const HeadTensors& b = want.heads[i];
      ASSERT_EQ(a.keys.size(), b.keys.size());
      for (size_t k = 0; k < b.keys.size(); ++k) ASSERT_EQ(a.keys[k], Round(b.keys[k], dtype));
      for (size_t k = 0; k < b.values.size(); ++k) ASSERT_EQ(a.values[k], Round(b.values[k], dtype));
      for (size_t k = 0; k < b.queries.size(); ++k) ASSERT_EQ(a.queries[k], Round(b.queries[k], dtype));
      EXPECT_EQ(a.column_sums, b.column_sums);  // always float32
    }
  }
}

TEST(AttentionTraceIoTest, RoundTripsEveryDtype) {
  ExpectRoundTrip(AttentionDType::kFloat16, false, 0);
  ExpectRoundTrip(AttentionDType::kBFloat16, true, 0);
  ExpectRoundTrip(AttentionDType::kFloat32, true, 0);
}

TEST(AttentionTraceIoTest, RoundTripsEmptyArraysAndTensors) {
  // Samples without token ids or boundaries, and a float32 sample whose column sums are absent: empty
  // arrays on both sides. The fuzz target `kvat` (UBSan) found the reader passing an empty vector's null
  // data() to memcpy for them, on the synthetic seed itself.
  SyntheticTrace t = Small(AttentionDType::kFloat32, false);
  for (AttentionSample& sample : t.samples) {
    sample.token_ids.clear();
    sample.boundaries.clear();
  }
  const std::string path = TempPath("empty_arrays");
  ASSERT_TRUE(Write(path, t, 0).ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto sample = (*reader)->ReadSample(0);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_TRUE(sample->token_ids.empty());
  EXPECT_TRUE(sample->boundaries.empty());
  EXPECT_EQ(sample->prompt_len, t.samples[0].prompt_len);
  ASSERT_EQ(sample->heads.size(), t.samples[0].heads.size());
  EXPECT_EQ(sample->heads[0].keys, t.samples[0].heads[0].keys);
  EXPECT_TRUE(sample->heads[0].column_sums.empty());
}

TEST(AttentionTraceIoTest, RoundTripsWithZstd) {
  ExpectRoundTrip(AttentionDType::kFloat16, true, 3);
  SyntheticTrace t = Small(AttentionDType::kFloat32, false);
  const std::string plain = TempPath("plain"), packed = TempPath("packed");
  ASSERT_TRUE(Write(plain, t, 0).ok());
  ASSERT_TRUE(Write(packed, t, 3).ok());
  EXPECT_LT(ReadFile(packed)->size(), ReadFile(plain)->size());
}

TEST(AttentionTraceIoTest, RefusesEveryTruncation) {
  SyntheticTrace t = Small(AttentionDType::kFloat16, false);
  const std::string path = TempPath("full");
  ASSERT_TRUE(Write(path, t).ok());
  const std::string bytes = *ReadFile(path);
  const std::string cut_path = TempPath("cut");
  // Every proper prefix is refused at Open(), with DataLoss and a message that says where.
  for (size_t cut = 0; cut < bytes.size(); cut += (cut < 200 ? 1 : 97)) {
    ASSERT_TRUE(WriteFileAtomically(cut_path, bytes.substr(0, cut)).ok());
    auto reader = AttentionTraceReader::Open(cut_path);
    ASSERT_FALSE(reader.ok()) << "prefix of " << cut << " bytes was accepted";
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << reader.status();
    if (cut >= 16) {
      EXPECT_NE(reader.status().message().find("record"), std::string::npos) << reader.status();
    }
  }
}

TEST(AttentionTraceIoTest, DetectsCorruptPayloadByChecksum) {
  SyntheticTrace t = Small(AttentionDType::kFloat16, false);
  const std::string path = TempPath("corrupt");
  ASSERT_TRUE(Write(path, t).ok());
  std::string bytes = *ReadFile(path);
  bytes[bytes.size() - 100] ^= 0x10;  // inside the last HEAD record of sample 1
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();  // HEAD payloads are checked when read
  EXPECT_TRUE((*reader)->ReadSample(0).ok());
  auto sample = (*reader)->ReadSample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), absl::StatusCode::kDataLoss);
  // Records: 0 HEADER, 1 SAMPLE 0, 2-5 its heads, 6 SAMPLE 1, 7-10 its heads: the last is record 10.
  EXPECT_NE(sample.status().message().find("record 10 "), std::string::npos) << sample.status();
  EXPECT_NE(sample.status().message().find("checksum"), std::string::npos) << sample.status();
}

// A record that claims a huge decompressed size over a small zstd frame (here the HEADER: 3 GiB claimed, a
// frame without a declared content size that yields 1,000 bytes, checksum right) is refused for what the
// frame yields, without allocating the claimed size: peak RSS grows by far less than 3 GiB.
TEST(AttentionTraceIoTest, RefusesAClaimedSizeTheFrameDoesNotHoldWithoutAllocatingIt) {
  const std::string valid_path = TempPath("claim_valid");
  ASSERT_TRUE(Write(valid_path, Small(AttentionDType::kFloat32, false), 0).ok());
  const std::string valid = *ReadFile(valid_path);
  const std::string content(1000, 'x');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ASSERT_NE(cctx, nullptr);
  ASSERT_EQ(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)), 0u);
  std::string frame(ZSTD_compressBound(content.size()), '\0');
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  ZSTD_inBuffer in{content.data(), content.size(), 0};
  ASSERT_EQ(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end), 0u);  // one call: everything flushed
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), ZSTD_CONTENTSIZE_UNKNOWN);

  const uint32_t tag = 1, flags = 1;  // HEADER, zstd
  const uint64_t stored = frame.size(), claimed = uint64_t{3} << 30;
  const uint32_t crc = Crc32(frame);
  std::string record(32, '\0');
  std::memcpy(record.data(), &tag, 4);
  std::memcpy(record.data() + 4, &flags, 4);
  std::memcpy(record.data() + 8, &stored, 8);
  std::memcpy(record.data() + 16, &claimed, 8);
  std::memcpy(record.data() + 24, &crc, 4);
  const std::string path = TempPath("claim");
  ASSERT_TRUE(WriteFileAtomically(path, valid.substr(0, 16) + record + frame).ok());

  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  auto reader = AttentionTraceReader::Open(path);
  getrusage(RUSAGE_SELF, &after);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reader.status().message().find("record 0 at byte offset 16: zstd payload does not decompress to "
                                           "3221225472 bytes (1000, with 0 stored bytes left over)"),
            std::string::npos)
      << reader.status();
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024) << "KiB";  // far below the claimed 3 GiB
}

TEST(AttentionTraceIoTest, RefusesTrailingDataAndBadMagic) {
  SyntheticTrace t = Small(AttentionDType::kFloat16, false);
  const std::string path = TempPath("trailing");
  ASSERT_TRUE(Write(path, t).ok());
  std::string bytes = *ReadFile(path);
  ASSERT_TRUE(WriteFileAtomically(path, bytes + std::string(40, '\0')).ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("after the END record"), std::string::npos) << reader.status();
  bytes[0] = 'X';
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  reader = AttentionTraceReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reader.status().message().find("bad magic"), std::string::npos);
  EXPECT_EQ(AttentionTraceReader::Open(TempPath("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST(AttentionTraceIoTest, WriterRejectsInconsistentOrNonFiniteSamples) {
  SyntheticTrace t = Small(AttentionDType::kFloat16, false);
  const std::string path = TempPath("reject");
  auto writer = AttentionTraceWriter::Create(path, t.header);
  ASSERT_TRUE(writer.ok());
  AttentionSample bad = t.samples[0];
  bad.heads[1].queries.resize(5);
  absl::Status s = (*writer)->Append(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sample 0: head record 1: queries"), std::string::npos) << s;

  // Values that are not finite at the trace's dtype. head_dim 40: keys[5 * 40 + 3] is position 5,
  // channel 3 of head record 1 (layer 0, kv head 1).
  bad = t.samples[0];
  bad.heads[1].keys[5 * 40 + 3] = std::numeric_limits<float>::infinity();
  s = (*writer)->Append(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sample 0: head record 1 (layer 0, kv head 1): keys[203] (position 5, channel 3) = inf "
                             "is not finite"),
            std::string::npos)
      << s;
  // 70000 overflows fp16 (largest finite 65504); 65519 still rounds to it. Queries of prompt_len 24,
  // window 4 and 3 decode steps: 7 per member, from position 20; entry 7 * 40 + 2 is member 1, position 20.
  bad = t.samples[0];
  bad.heads[0].values[0] = 65519.0f;
  bad.heads[0].queries[7 * 40 + 2] = -70000.0f;
  s = (*writer)->Append(bad);
  EXPECT_NE(s.message().find("queries[282] (query head 1 of the group, position 20, channel 2) = -70000 overflows "
                             "fp16"),
            std::string::npos)
      << s;
  bad.heads[0].queries[7 * 40 + 2] = 1.0f;
  bad.heads[1].column_sums.assign(2 * 24, 1.0f);
  bad.heads[0].column_sums.assign(2 * 24, 1.0f);
  bad.heads[0].column_sums[30] = std::nanf("");  // member 1, position 6
  ASSERT_TRUE(ValidateSample(t.header, bad).ok());
  s = ValidateSampleValues(t.header, bad);
  EXPECT_NE(s.message().find("column_sums[30] (query head 1 of the group, position 6) = nan is not finite"),
            std::string::npos)
      << s;
  bad.heads[0].column_sums[30] = 1.0f;
  EXPECT_TRUE(ValidateSampleValues(t.header, bad).ok());
  // bf16 holds 70000 (and anything below about 3.4e38).
  t.header.dtype = AttentionDType::kBFloat16;
  bad.heads[0].queries[7 * 40 + 2] = -70000.0f;
  EXPECT_TRUE(ValidateSampleValues(t.header, bad).ok());
  bad.heads[0].queries[7 * 40 + 2] = 3.4e38f;
  EXPECT_NE(ValidateSampleValues(t.header, bad).message().find("overflows bf16"), std::string::npos);
  // A refused sample leaves nothing in the file: a good one after it is sample 0.
  ASSERT_TRUE((*writer)->Append(t.samples[1]).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->num_samples(), 1);
  auto sample = (*reader)->ReadSample(0);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->prompt_len, t.samples[1].prompt_len);
}

// A file whose payload holds a NaN (written by another tool; the checksum matches it) is refused when
// the sample is read, naming the record and the entry.
TEST(AttentionTraceIoTest, ReaderRejectsNonFiniteValues) {
  SyntheticTrace t = Small(AttentionDType::kFloat32, false);
  const float marker = 12345.25f;
  t.samples[1].heads[2].values[7 * 40 + 11] = marker;  // head record 2: layer 1, kv head 0
  const std::string path = TempPath("nanfile");
  ASSERT_TRUE(Write(path, t).ok());
  std::string bytes = *ReadFile(path);
  char marker_bytes[4];
  std::memcpy(marker_bytes, &marker, 4);
  const size_t at = bytes.find(std::string(marker_bytes, 4));
  ASSERT_NE(at, std::string::npos);
  const float nan = std::nanf("");
  std::memcpy(&bytes[at], &nan, 4);
  // Re-seal the record holding it: records are a 32-byte header (tag, flags, stored and raw sizes, CRC of
  // the stored bytes, pad) and the stored bytes, after the 16-byte file header.
  size_t offset = 16;
  bool sealed = false;
  while (offset + 32 <= bytes.size() && !sealed) {
    uint64_t stored = 0;
    std::memcpy(&stored, &bytes[offset + 8], 8);
    if (at >= offset + 32 && at < offset + 32 + stored) {
      const uint32_t crc = Crc32(absl::string_view(&bytes[offset + 32], stored));
      std::memcpy(&bytes[offset + 24], &crc, 4);
      sealed = true;
    }
    offset += 32 + stored;
  }
  ASSERT_TRUE(sealed);
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto reader = AttentionTraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->ReadSample(0).ok());
  auto sample = (*reader)->ReadSample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), absl::StatusCode::kDataLoss);
  // Records: 0 HEADER, 1 SAMPLE 0, 2-5 its heads, 6 SAMPLE 1, 7-10 its heads: head record 2 is record 9.
  EXPECT_NE(sample.status().message().find("record 9 "), std::string::npos) << sample.status();
  EXPECT_NE(sample.status().message().find("sample 1: head record 2 (layer 1, kv head 0): values[291] (position 7, "
                                           "channel 11) = nan is not finite"),
            std::string::npos)
      << sample.status();
}

}  // namespace
}  // namespace kvsim
