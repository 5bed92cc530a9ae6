#include "traces/native_format.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "traces/test_util.h"
#include "traces/trace_io.h"
#include "util/file.h"

namespace kvsim {
namespace {

// Requests exercising every field and the coder's edge cases.
std::vector<Request> EdgeRequests() {
  std::vector<Request> out;
  Request a;
  a.request_id = 0;
  a.arrival_ns = 0;
  a.input_tokens = 1000;
  a.output_tokens = 7;
  a.block_tokens = 16;
  a.block_hashes = {5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                    26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46,
                    47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67};  // 63
  out.push_back(a);
  Request b;  // a session turn with a parent, a model, tool calls, huge hashes
  b.request_id = 17;
  b.arrival_ns = 1'500'000'000;
  b.session_id = 3;
  b.parent_id = 0;
  b.turn = 2;
  b.input_tokens = 20;
  b.output_tokens = 0;
  b.block_tokens = 16;
  b.block_hashes = {~uint64_t{0}, 1, uint64_t{1} << 63};
  b.type = proto::REQUEST_TYPE_API;
  b.failed = true;
  b.model = "GPT-4 \"turbo\"";
  b.tool_calls = {{"bash", 2'000'000}, {"", 0}};
  out.push_back(b);
  Request c;  // earlier than b (non-monotonic), id going down, same model, no hashes but block_tokens
  c.request_id = 5;
  c.arrival_ns = 1'000;
  c.session_id = 3;
  c.turn = -1;
  c.input_tokens = 0;
  c.output_tokens = 1;
  c.block_tokens = 16;
  c.model = "GPT-4 \"turbo\"";
  out.push_back(c);
  Request d;  // no blocks at all, model back to empty, extreme values
  d.request_id = ~uint64_t{0};
  d.arrival_ns = INT64_MAX;
  d.session_id = INT64_MAX;
  d.input_tokens = INT64_MAX;
  d.output_tokens = 0;
  d.type = proto::REQUEST_TYPE_CONVERSATION;
  out.push_back(d);
  Request e;  // hash runs of several lengths, one wrapping past 2^64 - 1, a repeated id
  e.request_id = 6;
  e.arrival_ns = 5;
  e.input_tokens = 7 * 16;
  e.block_tokens = 16;
  e.block_hashes = {~uint64_t{0} - 1, ~uint64_t{0}, 0, 1, 100, 100, 101};
  out.push_back(e);
  return out;
}

absl::Status WriteNative(const std::string& path, const std::vector<Request>& requests, TraceWriterOptions options) {
  auto writer = OpenNativeTraceWriter(path, options);
  if (!writer.ok()) return writer.status();
  for (const Request& r : requests) {
    absl::Status status = (*writer)->Write(r);
    if (!status.ok()) return status;
  }
  return (*writer)->Close();
}

void ExpectSame(const std::vector<Request>& expected, const std::vector<Request>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(RequestDifference(expected[i], actual[i]), "") << "record " << i;
  }
}

TEST(NativeFormatTest, EveryFieldRoundTripsWithAndWithoutCompressionAndAcrossFrames) {
  std::vector<Request> requests;
  for (int copy = 0; copy < 50; ++copy) {
    for (const Request& r : EdgeRequests()) requests.push_back(r);
  }
  for (bool compress : {false, true}) {
    for (int64_t frame_bytes : {64, 65536}) {
      TraceWriterOptions options;
      options.block_tokens = 16;
      options.compress = compress;
      options.frame_bytes = frame_bytes;
      const std::string path = ::testing::TempDir() + "/edge.kvt";
      ASSERT_TRUE(WriteNative(path, requests, options).ok());
      auto reader = OpenNativeTrace(path, {});
      ASSERT_TRUE(reader.ok()) << reader.status();
      auto actual = ReadAll(**reader);
      ASSERT_TRUE(actual.ok()) << actual.status();
      ExpectSame(requests, *actual);
      EXPECT_EQ((*reader)->info().format, "native");
      EXPECT_EQ((*reader)->info().block_tokens, 16);
      auto header = ReadNativeHeader(path);
      ASSERT_TRUE(header.ok());
      // 64-byte frames hold a record or two each: many frames; 64 KiB holds all 250 records.
      if (frame_bytes == 65536) {
        EXPECT_EQ(header->num_frames(), 1u);
      } else {
        EXPECT_GT(header->num_frames(), 50u);
      }
    }
  }
}

// Values whose varints take every length from 1 to 10 bytes (a varint holds 7 bits per byte, so 2^(7k) - 1
// is the largest k-byte value and 2^(7k) the smallest (k+1)-byte one; zigzag doubles a signed field),
// and hash runs of every length from 1 to 11 (the decoder fills runs 4 ids at a time plus a tail).
std::vector<Request> VarintLengthRequests() {
  std::vector<Request> out;
  int64_t arrival_ns = 0;
  for (int bytes = 1; bytes <= 9; ++bytes) {
    for (int64_t above : {-1, 0}) {  // the last value of `bytes` bytes, then the first of bytes + 1
      const int64_t value = (int64_t{1} << std::min(7 * bytes - 1, 62)) + above;  // zigzag: 2 * value
      Request r;
      r.request_id = out.size();
      arrival_ns += value / 2;  // the arrival delta (no overflow: the sum stays below 2^63)
      r.arrival_ns = arrival_ns;
      r.input_tokens = value;
      r.output_tokens = value / 3;
      r.block_tokens = 16;
      const int run = bytes + 2 + static_cast<int>(above);  // 1 .. 11 ids
      const uint64_t first = static_cast<uint64_t>(value) * 5;
      for (int k = 0; k < run; ++k) r.block_hashes.push_back(first + k);
      r.block_hashes.push_back(first - 1);  // a second run, going backwards
      out.push_back(r);
    }
  }
  return out;
}

TEST(NativeFormatTest, VarintsOfEveryLengthAndRunsOfEveryLengthRoundTrip) {
  const std::vector<Request> requests = VarintLengthRequests();
  ASSERT_EQ(requests.size(), 18u);
  EXPECT_EQ(requests[1].input_tokens, 64);                 // zigzag 128: the first 2-byte varint
  EXPECT_EQ(requests[17].input_tokens, int64_t{1} << 62);  // zigzag 2^63: a 10-byte varint
  for (bool compress : {false, true}) {
    for (int64_t frame_bytes : {64, 65536}) {  // 64: records end at frame ends (the padding's edge)
      TraceWriterOptions options;
      options.block_tokens = 16;
      options.compress = compress;
      options.frame_bytes = frame_bytes;
      const std::string path = ::testing::TempDir() + "/varints.kvt";
      ASSERT_TRUE(WriteNative(path, requests, options).ok());
      auto reader = OpenNativeTrace(path, {});
      ASSERT_TRUE(reader.ok()) << reader.status();
      auto actual = ReadAll(**reader);
      ASSERT_TRUE(actual.ok()) << actual.status();
      ExpectSame(requests, *actual);
    }
  }
}

TEST(NativeFormatTest, HeaderCarriesHandComputedSummary) {
  const std::vector<Request> requests = EdgeRequests();
  TraceWriterOptions options;
  options.block_tokens = 16;
  options.source_format = "test";
  const std::string path = ::testing::TempDir() + "/summary.kvt";
  ASSERT_TRUE(WriteNative(path, requests, options).ok());
  auto header = ReadNativeHeader(path);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->source_format(), "test");
  EXPECT_EQ(header->block_tokens(), 16);
  EXPECT_EQ(header->num_requests(), 5u);
  EXPECT_EQ(header->duration_ns(), 5);  // last (5 ns) - first (0)
  EXPECT_EQ(header->input_tokens_total(), 1000u + 20 + 0 + uint64_t{INT64_MAX} + 112);
  EXPECT_EQ(header->output_tokens_total(), 8u);  // 7 + 0 + 1 + 0 + 0
  EXPECT_EQ(header->block_references(), 73u);    // 63 + 3 + 7
  EXPECT_EQ(header->max_input_tokens(), INT64_MAX);
  EXPECT_EQ(header->max_output_tokens(), 7);
  EXPECT_EQ(header->num_failed(), 1u);
  EXPECT_EQ(header->num_out_of_order(), 2u);  // c (1000 ns) after b (1.5 s); e (5 ns) after d
  EXPECT_EQ(header->compression(), proto::TRACE_COMPRESSION_ZSTD);
}

TEST(NativeFormatTest, VariableBlockTokenCountsRoundTrip) {
  const std::string path = ::testing::TempDir() + "/chunks.kvt";
  std::vector<Request> requests(3);
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].request_id = i;
    requests[i].arrival_ns = static_cast<int64_t>(i) * 10;
    requests[i].block_tokens = 34;
  }
  requests[0].input_tokens = 100;
  requests[0].block_hashes = {7, 8, 9};
  requests[0].block_token_counts = {33, 33, 34};
  requests[1].input_tokens = 5;  // no hashes: no counts
  requests[1].block_tokens = 0;
  requests[2].input_tokens = 31;
  requests[2].block_hashes = {7};
  requests[2].block_token_counts = {31};
  TraceWriterOptions options;
  options.block_tokens = 34;
  ASSERT_TRUE(WriteNative(path, requests, options).ok());
  auto back = ReadAll(path, {});
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(requests, *back);

  Request bad = requests[0];
  bad.block_token_counts = {33, 33};  // one count short
  const absl::Status status = WriteNative(::testing::TempDir() + "/bad.kvt", {bad}, options);
  EXPECT_NE(status.message().find("record 0: block_token_counts: 2 counts for 3 block hashes"), std::string::npos)
      << status;
}

TEST(NativeFormatTest, WriterRejectsInconsistentBlockSizesAndLeavesNoFile) {
  const std::string path = ::testing::TempDir() + "/rejected.kvt";
  std::remove(path.c_str());
  TraceWriterOptions options;
  options.block_tokens = 512;
  auto writer = OpenNativeTraceWriter(path, options);
  ASSERT_TRUE(writer.ok());
  Request r;
  r.block_tokens = 16;
  r.block_hashes = {1};
  absl::Status status = (*writer)->Write(r);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("record 0: block_tokens: expected 0 or the trace's 512, got 16"),
            absl::string_view::npos)
      << status;
  r.block_tokens = 0;
  EXPECT_EQ((*writer)->Write(r).code(), absl::StatusCode::kInvalidArgument);
  writer->reset();  // abandoned: nothing appears at `path`
  EXPECT_EQ(ReadFile(path).status().code(), absl::StatusCode::kNotFound);
}

// Writes the edge requests uncompressed in 64-byte frames and returns the file's bytes.
std::string EdgeFileBytes(const std::string& path) {
  TraceWriterOptions options;
  options.block_tokens = 16;
  options.compress = false;
  options.frame_bytes = 64;
  EXPECT_TRUE(WriteNative(path, EdgeRequests(), options).ok());
  return *ReadFile(path);
}

absl::Status ReadBack(const std::string& path, const std::string& bytes, size_t* records) {
  EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
  auto reader = OpenTrace(path, {});
  if (!reader.ok()) return reader.status();
  Request r;
  *records = 0;
  while ((*reader)->Next(&r)) ++*records;
  return (*reader)->status();
}

TEST(NativeFormatTest, CorruptionAndTruncationNameTheRecord) {
  const std::string path = ::testing::TempDir() + "/corrupt.kvt";
  const std::string good = EdgeFileBytes(path);
  size_t records = 0;
  ASSERT_TRUE(ReadBack(path, good, &records).ok());
  ASSERT_EQ(records, 5u);

  // Truncated in the middle of the last frame: the first records still come out, then DataLoss.
  absl::Status truncated = ReadBack(path, good.substr(0, good.size() - 3), &records);
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  // The records of the intact frames come out; the error names the first record of the cut frame.
  EXPECT_GE(records, 1u);
  EXPECT_LT(records, 5u);
  EXPECT_NE(truncated.message().find(absl::StrCat("record ", records, " (frame at byte")), absl::string_view::npos)
      << truncated;
  EXPECT_NE(truncated.message().find("file ends inside a frame"), absl::string_view::npos) << truncated;

  // A flipped byte inside the first frame's data: checksum mismatch at record 0.
  std::string flipped = good;
  flipped[kNativeHeaderBytes + kNativeFrameHeaderBytes + 5] ^= 0x40;
  absl::Status corrupt = ReadBack(path, flipped, &records);
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(
      corrupt.message().find("record 0 (frame at byte 4096): corrupt or truncated trace: frame checksum mismatch"),
      absl::string_view::npos)
      << corrupt;

  // Extra bytes after the last frame.
  absl::Status trailing = ReadBack(path, good + "x", &records);
  EXPECT_EQ(trailing.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(trailing.message().find("data after the last record"), absl::string_view::npos);

  // A damaged header.
  std::string header = good;
  header[30] ^= 1;
  EXPECT_EQ(ReadBack(path, header, &records).code(), absl::StatusCode::kDataLoss);
  // Cut inside the header: not recognisable as a native trace any more when named explicitly.
  auto cut = OpenNativeTrace((WriteFileAtomically(path, good.substr(0, 100)).ok(), path), {});
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cut.status().message().find("not a native kvsim trace"), absl::string_view::npos);
}

TEST(NativeFormatTest, EveryTruncationPointIsAnErrorNeverACrashOrSilentLoss) {
  const std::string path = ::testing::TempDir() + "/every_cut.kvt";
  const std::string good = EdgeFileBytes(path);
  for (size_t size = kNativeHeaderBytes; size < good.size(); ++size) {
    size_t records = 0;
    absl::Status status = ReadBack(path, good.substr(0, size), &records);
    EXPECT_FALSE(status.ok()) << "cut at " << size;
    EXPECT_LT(records, 5u);
  }
}

// traces/testdata/mooncake_head500_v1_zstd.kvt was written by the version-1 writer as first released
// (zstd level 3 with Huffman-coded literals, 2048-byte frames) from the first 500 records of the bundled
// Mooncake trace. Later writers change how frames are compressed, never what a reader accepts: the file
// must keep reading back as exactly those 500 records, as the Mooncake importer reads them today.
TEST(NativeFormatTest, FileWrittenByTheFirstVersion1WriterStillReads) {
  const std::string path = "traces/testdata/mooncake_head500_v1_zstd.kvt";
  auto header = ReadNativeHeader(path);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->compression(), proto::TRACE_COMPRESSION_ZSTD);
  EXPECT_EQ(header->num_requests(), 500u);
  EXPECT_GT(header->num_frames(), 1u);
  auto source = ReadAll(DataPath("mooncake_synthetic.jsonl"), {});
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_GE(source->size(), 500u);
  source->resize(500);
  auto actual = ReadAll(path, {});
  ASSERT_TRUE(actual.ok()) << actual.status();
  ExpectSame(*source, *actual);
}

int64_t FileSize(const std::string& path) {
  auto bytes = ReadFile(path);
  return bytes.ok() ? static_cast<int64_t>(bytes->size()) : -1;
}

// The bundled Mooncake trace written with and without Huffman-coded zstd literals: both read back as the
// source; Huffman coding makes the (skewed-byte) varint frames smaller, so the option really reaches zstd.
TEST(NativeFormatTest, ZstdLiteralModesBothRoundTripAndHuffmanIsSmaller) {
  auto source = ReadAll(DataPath("mooncake_synthetic.jsonl"), {});
  ASSERT_TRUE(source.ok()) << source.status();
  int64_t sizes[2] = {0, 0};
  for (bool huffman : {false, true}) {
    TraceWriterOptions options;
    options.block_tokens = 512;
    options.zstd_compress_literals = huffman;
    const std::string path = ::testing::TempDir() + (huffman ? "/huffman.kvt" : "/raw.kvt");
    ASSERT_TRUE(WriteNative(path, *source, options).ok());
    auto actual = ReadAll(path, {});
    ASSERT_TRUE(actual.ok()) << actual.status();
    ExpectSame(*source, *actual);
    sizes[huffman] = FileSize(path);
  }
  EXPECT_LT(sizes[1], sizes[0]);
}

// Decompression contexts go back to a shared pool when a reader closes: readers on several threads at
// once, each opened and closed repeatedly (more readers than the pool keeps), all read the exact records.
TEST(NativeFormatTest, ReadersOnSeveralThreadsShareNoDecompressionState) {
  auto source = ReadAll(DataPath("mooncake_synthetic.jsonl"), {});
  ASSERT_TRUE(source.ok()) << source.status();
  source->resize(1000);
  TraceWriterOptions options;
  options.block_tokens = 512;
  options.frame_bytes = 1024;  // many frames: many decompressions per reader
  const std::string path = ::testing::TempDir() + "/threads.kvt";
  ASSERT_TRUE(WriteNative(path, *source, options).ok());
  std::vector<std::string> problems(12);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < problems.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3 && problems[t].empty(); ++round) {
        auto actual = ReadAll(path, {});
        if (!actual.ok()) {
          problems[t] = actual.status().ToString();
        } else if (actual->size() != source->size()) {
          problems[t] = absl::StrCat(actual->size(), " records");
        } else {
          for (size_t i = 0; i < source->size() && problems[t].empty(); ++i) {
            const std::string difference = RequestDifference((*source)[i], (*actual)[i]);
            if (!difference.empty()) problems[t] = absl::StrCat("record ", i, ": ", difference);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < problems.size(); ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
}

TEST(NativeFormatTest, DetectedByMagic) {
  EXPECT_TRUE(LooksLikeNative(absl::string_view("KVSIMTRC\x01\0\0\0", 12)));
  EXPECT_FALSE(LooksLikeNative("KVSIMTR"));
  EXPECT_FALSE(LooksLikeNative("{\"kvsim_trace\": 1}"));
}

}  // namespace
}  // namespace kvsim
