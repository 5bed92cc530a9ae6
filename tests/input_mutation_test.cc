// Mutation test of kvsim's input formats: from a valid hand-written seed of each format (Mooncake JSONL,
// Azure CSV, the native binary trace, an experiment config, a workload spec, a calibration CSV), systematic
// mutants (truncation, byte flips, numbers replaced by huge / negative / NaN / non-numeric values, wrong
// types, a missing required field, a duplicated field, invalid UTF-8), each with the outcome its class
// must have: refused with a message naming the file and the mutated line (or record, or field), or read
// exactly as the seed's hand-computed reading says it must be (e.g. a mutation in an ignored column).
// No mutant may crash, and none may be read into anything else.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "gtest/gtest.h"
#include "proto/calibration.pb.h"
#include "proto/config.pb.h"
#include "proto/workload.pb.h"
#include "traces/generators/generate_trace.h"
#include "traces/request.h"
#include "traces/test_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// A format: the file extension its seed is written with and how kvsim reads a file of it, reduced to a
// text that lists what was read (compared with the expected reading).
struct Format {
  std::string name;
  std::string extension;
  std::function<absl::StatusOr<std::string>(const std::string& path)> read;
};

// One line per request: the fields the formats below carry.
std::string Describe(const std::vector<Request>& requests) {
  std::string out;
  for (const Request& r : requests) {
    absl::StrAppend(&out, "id=", r.request_id, " arrival_ns=", r.arrival_ns, " in=", r.input_tokens,
                    " out=", r.output_tokens, " hashes=[", absl::StrJoin(r.block_hashes, ","), "]\n");
  }
  return out;
}

absl::StatusOr<std::string> ReadTrace(const std::string& path, const std::string& format) {
  TraceOptions options;
  options.format = format;
  absl::StatusOr<std::vector<Request>> requests = ReadAll(path, options);
  if (!requests.ok()) return requests.status();
  return Describe(*requests);
}

int mutant_count = 0;

std::string WriteMutant(const Format& format, const std::string& text) {
  return WriteTempFile(absl::StrCat(format.name, "_mutant", ++mutant_count, format.extension), text);
}

// Refused, the message naming the file and "FILE:LINE" (line > 0) or containing `needle` (when given).
void ExpectRefused(const Format& format, const std::string& what, const std::string& text, int line,
                   const std::string& needle = "") {
  const std::string path = WriteMutant(format, text);
  absl::StatusOr<std::string> read = format.read(path);
  ASSERT_FALSE(read.ok()) << format.name << ", " << what << ": accepted; read as\n" << *read;
  const std::string message(read.status().message());
  EXPECT_NE(message.find(path), std::string::npos) << format.name << ", " << what << ": " << message;
  if (line > 0) {
    EXPECT_NE(message.find(absl::StrCat(path, ":", line, ":")), std::string::npos)
        << format.name << ", " << what << ": does not name line " << line << ": " << message;
  }
  if (!needle.empty()) {
    EXPECT_NE(message.find(needle), std::string::npos)
        << format.name << ", " << what << ": does not name '" << needle << "': " << message;
  }
}

void ExpectReadAs(const Format& format, const std::string& what, const std::string& text,
                  const std::string& expected) {
  const std::string path = WriteMutant(format, text);
  absl::StatusOr<std::string> read = format.read(path);
  ASSERT_TRUE(read.ok()) << format.name << ", " << what << ": " << read.status();
  EXPECT_EQ(*read, expected) << format.name << ", " << what;
}

// Byte offset where 1-based line `line` of `text` starts, and the line itself without its newline.
size_t LineStart(const std::string& text, int line) {
  size_t at = 0;
  for (int i = 1; i < line; ++i) at = text.find('\n', at) + 1;
  return at;
}
std::string Line(const std::string& text, int line) {
  const size_t start = LineStart(text, line);
  return text.substr(start, text.find('\n', start) - start);
}

// Each byte of each of `lines` (from its first non-blank) with its top bit flipped: no text-proto token, so
// refused at its line.
void ExpectTopBitFlipsRefused(const Format& format, const std::string& seed, std::initializer_list<int> lines) {
  for (int line : lines) {
    const std::string text = Line(seed, line);
    const size_t start = LineStart(seed, line);
    for (size_t i = text.find_first_not_of(' '); i < text.size(); ++i) {
      std::string mutant = seed;
      mutant[start + i] = static_cast<char>(mutant[start + i] ^ 0x80);
      ExpectRefused(format, absl::StrCat("line ", line, " byte ", i, " flipped"), mutant, line);
    }
  }
}

// `text` with the first `from` on line `line` replaced by `to`; the test fails if there is none.
std::string ReplaceOnLine(const std::string& text, int line, const std::string& from, const std::string& to) {
  const size_t start = LineStart(text, line);
  const size_t end = text.find('\n', start);
  const size_t at = text.find(from, start);
  if (at == std::string::npos || at >= end) {
    ADD_FAILURE() << "'" << from << "' is not on line " << line;
    return text;
  }
  return text.substr(0, at) + to + text.substr(at + from.size());
}

// The first `lines` lines of `text` (newlines kept).
std::string FirstLines(const std::string& text, int lines) { return text.substr(0, LineStart(text, lines + 1)); }

// The first `records` lines of a reading (one line per record).
std::string FirstRecords(const std::string& reading, int records) { return FirstLines(reading, records); }

// Values that no numeric field may take, each with its name.
const std::vector<std::pair<std::string, std::string>>& BadNumbers() {
  static const auto* values = new std::vector<std::pair<std::string, std::string>>{
      {"huge exponent", "1e400"},      {"past int64", "99999999999999999999999"}, {"NaN", "NaN"},
      {"non-numeric", "abc"},          {"infinity", "inf"},                        {"empty", ""}};
  return *values;
}

// ---------------------------------------------------------------------------------------------------------
// Mooncake JSONL.

const Format kMooncake{"mooncake", ".jsonl", [](const std::string& path) { return ReadTrace(path, "mooncake"); }};

// 512-token blocks: ceil(600 / 512) = 2 ids, ceil(100 / 512) = 1, ceil(1024 / 512) = 2. Timestamps in ms.
constexpr char kMooncakeSeed[] =
    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 5, \"input_length\": 100, \"output_length\": 3, \"hash_ids\": [7]}\n"
    "{\"timestamp\": 12, \"input_length\": 1024, \"output_length\": 25, \"hash_ids\": [1, 9], \"note\": \"x\"}\n";
constexpr char kMooncakeReading[] =
    "id=0 arrival_ns=0 in=600 out=10 hashes=[1,2]\n"
    "id=1 arrival_ns=5000000 in=100 out=3 hashes=[7]\n"
    "id=2 arrival_ns=12000000 in=1024 out=25 hashes=[1,9]\n";

TEST(InputMutationTest, MooncakeSeedReadsAsHandComputed) {
  ExpectReadAs(kMooncake, "seed", kMooncakeSeed, kMooncakeReading);
}

TEST(InputMutationTest, MooncakeTruncation) {
  const std::string seed = kMooncakeSeed;
  // At a line end: the records before it, exactly.
  for (int lines : {1, 2}) {
    ExpectReadAs(kMooncake, absl::StrCat("cut after line ", lines), FirstLines(seed, lines),
                 FirstRecords(kMooncakeReading, lines));
  }
  // Inside line 2 or 3 (after its first byte, in the middle, before its closing brace): refused there.
  for (int line : {2, 3}) {
    const size_t start = LineStart(seed, line), length = Line(seed, line).size();
    for (size_t keep : {size_t{1}, length / 2, length - 1}) {
      ExpectRefused(kMooncake, absl::StrCat("cut in line ", line, " after ", keep, " bytes"),
                    seed.substr(0, start + keep), line);
    }
  }
  ExpectRefused(kMooncake, "empty file", "", 0, "at least one record");
}

TEST(InputMutationTest, MooncakeByteFlips) {
  // Every byte of line 2 with its top bit flipped: outside strings that is no JSON token, and the line
  // ending flipped joins two lines; each is refused at line 2.
  const std::string seed = kMooncakeSeed;
  const size_t start = LineStart(seed, 2), length = Line(seed, 2).size();
  for (size_t i = start; i <= start + length; ++i) {
    std::string text = seed;
    text[i] = static_cast<char>(text[i] ^ 0x80);
    ExpectRefused(kMooncake, absl::StrCat("byte ", i, " flipped"), text, 2);
  }
}

TEST(InputMutationTest, MooncakeBadNumbers) {
  for (const std::string field : {"timestamp", "input_length", "output_length"}) {
    const std::string original = Line(kMooncakeSeed, 2);
    const size_t at = original.find(field) + field.size() + 3;  // after `": `
    const size_t end = original.find(',', at);
    const std::string value = original.substr(at, end - at);
    const std::string key = absl::StrCat("\"", field, "\": ", value);
    for (const auto& [name, bad] : BadNumbers()) {
      // None is a JSON number the parser can hold: refused at the line (as a JSON error).
      ExpectRefused(kMooncake, field + ": " + name,
                    ReplaceOnLine(kMooncakeSeed, 2, key, absl::StrCat("\"", field, "\": ", bad)), 2);
    }
    for (const std::string wrong : {"\"5\"", "[5]", "{}", "null", "true", "1.5"}) {
      ExpectRefused(kMooncake, field + ": wrong type " + wrong,
                    ReplaceOnLine(kMooncakeSeed, 2, key, absl::StrCat("\"", field, "\": ", wrong)), 2, field);
    }
  }
  // Negative token counts are refused; a negative timestamp is a valid time before the others (the
  // origin moves to it: line 2 first, then lines 1 and 3 at 5 and 17 ms).
  ExpectRefused(kMooncake, "negative input_length",
                ReplaceOnLine(kMooncakeSeed, 2, "\"input_length\": 100", "\"input_length\": -100"), 2, "input_length");
  ExpectRefused(kMooncake, "negative output_length",
                ReplaceOnLine(kMooncakeSeed, 2, "\"output_length\": 3", "\"output_length\": -3"), 2, "output_length");
  ExpectReadAs(kMooncake, "negative timestamp", ReplaceOnLine(kMooncakeSeed, 2, "\"timestamp\": 5", "\"timestamp\": -5"),
               "id=1 arrival_ns=0 in=100 out=3 hashes=[7]\n"
               "id=0 arrival_ns=5000000 in=600 out=10 hashes=[1,2]\n"
               "id=2 arrival_ns=17000000 in=1024 out=25 hashes=[1,9]\n");
  for (const auto& [name, bad] : BadNumbers()) {
    ExpectRefused(kMooncake, "hash id: " + name, ReplaceOnLine(kMooncakeSeed, 2, "[7]", "[" + bad + "]"), 2);
  }
  // Ids are opaque 64-bit values: a negative (signed) id is its two's complement, 2^64 - 7.
  ExpectReadAs(kMooncake, "negative hash id", ReplaceOnLine(kMooncakeSeed, 2, "[7]", "[-7]"),
               "id=0 arrival_ns=0 in=600 out=10 hashes=[1,2]\n"
               "id=1 arrival_ns=5000000 in=100 out=3 hashes=[18446744073709551609]\n"
               "id=2 arrival_ns=12000000 in=1024 out=25 hashes=[1,9]\n");
  ExpectRefused(kMooncake, "hash_ids not an array", ReplaceOnLine(kMooncakeSeed, 2, "[7]", "7"), 2, "hash_ids");
}

TEST(InputMutationTest, MooncakeMissingDuplicatedAndIgnoredFields) {
  ExpectRefused(kMooncake, "missing timestamp", ReplaceOnLine(kMooncakeSeed, 2, "\"timestamp\": 5, ", ""), 2, "timestamp");
  ExpectRefused(kMooncake, "missing input_length", ReplaceOnLine(kMooncakeSeed, 2, "\"input_length\": 100, ", ""), 2,
                "input_length");
  ExpectRefused(kMooncake, "missing output_length", ReplaceOnLine(kMooncakeSeed, 2, "\"output_length\": 3, ", ""), 2,
                "output_length");
  ExpectRefused(kMooncake, "missing hash_ids", ReplaceOnLine(kMooncakeSeed, 2, ", \"hash_ids\": [7]", ""), 2, "hash_ids");
  ExpectRefused(kMooncake, "duplicated input_length",
                ReplaceOnLine(kMooncakeSeed, 2, "\"input_length\": 100", "\"input_length\": 100, \"input_length\": 100"),
                2, "duplicate key");
  // The ignored key "note": any JSON value the parser can hold reads as the seed does; a number it cannot
  // hold and invalid UTF-8 are refused at the line (the whole line is parsed).
  for (const std::string value : {"\"y\"", "1234567890123456789", "[1, {\"a\": null}]", "-1e300", "{}"}) {
    ExpectReadAs(kMooncake, "note = " + value, ReplaceOnLine(kMooncakeSeed, 3, "\"x\"", value), kMooncakeReading);
  }
  for (const std::string value : {"123456789012345678901234567890", "-1e400"}) {
    ExpectRefused(kMooncake, "note = " + value, ReplaceOnLine(kMooncakeSeed, 3, "\"x\"", value), 3);
  }
  ExpectReadAs(kMooncake, "note dropped", ReplaceOnLine(kMooncakeSeed, 3, ", \"note\": \"x\"", ""), kMooncakeReading);
  ExpectRefused(kMooncake, "invalid UTF-8 in note", ReplaceOnLine(kMooncakeSeed, 3, "\"x\"", "\"\xc3\x28\""), 3);
}

// ---------------------------------------------------------------------------------------------------------
// Azure CSV (with an extra column, which the reader ignores).

const Format kAzure{"azure", ".csv", [](const std::string& path) { return ReadTrace(path, "azure"); }};

constexpr char kAzureSeed[] =
    "TIMESTAMP,ContextTokens,GeneratedTokens,Note\n"
    "2023-11-16 18:17:03.0000000,4808,10,a\n"
    "2023-11-16 18:17:04.5000000,3180,8,b\n"
    "2023-11-16 18:17:06.0000000,549,173,c\n";
constexpr char kAzureReading[] =
    "id=0 arrival_ns=0 in=4808 out=10 hashes=[]\n"
    "id=1 arrival_ns=1500000000 in=3180 out=8 hashes=[]\n"
    "id=2 arrival_ns=3000000000 in=549 out=173 hashes=[]\n";

TEST(InputMutationTest, AzureSeedReadsAsHandComputed) { ExpectReadAs(kAzure, "seed", kAzureSeed, kAzureReading); }

TEST(InputMutationTest, AzureTruncation) {
  const std::string seed = kAzureSeed;
  for (int records : {1, 2}) {
    ExpectReadAs(kAzure, absl::StrCat("cut after record ", records), FirstLines(seed, records + 1),
                 FirstRecords(kAzureReading, records));
  }
  // Inside the timestamp or the token counts of line 3: a row with a bad field or too few fields.
  const size_t start = LineStart(seed, 3);
  for (size_t keep : {size_t{1}, size_t{13}, size_t{30}}) {
    ExpectRefused(kAzure, absl::StrCat("cut in line 3 after ", keep, " bytes"), seed.substr(0, start + keep), 3);
  }
  // Before the last row's Note: the ignored column is empty, the row reads the same.
  ExpectReadAs(kAzure, "cut before the last Note", seed.substr(0, seed.size() - 2), kAzureReading);
  ExpectRefused(kAzure, "cut in the header", seed.substr(0, 20), 1);
}

TEST(InputMutationTest, AzureByteFlips) {
  // Each byte of line 3's timestamp and token counts with its top bit flipped: refused at line 3. The
  // same in the ignored Note column reads as the seed does.
  const std::string seed = kAzureSeed;
  const size_t start = LineStart(seed, 3);
  const std::string line = Line(seed, 3);
  const size_t note = line.rfind(',') + 1;
  for (size_t i = 0; i < note - 1; ++i) {
    std::string text = seed;
    text[start + i] = static_cast<char>(text[start + i] ^ 0x80);
    ExpectRefused(kAzure, absl::StrCat("byte ", i, " of line 3 flipped"), text, 3);
  }
  std::string text = seed;
  text[start + note] = static_cast<char>(text[start + note] ^ 0x80);
  ExpectReadAs(kAzure, "Note byte flipped", text, kAzureReading);
}

TEST(InputMutationTest, AzureBadNumbersAndColumns) {
  for (const std::string value : {"3180", "8"}) {
    const std::string key = "," + value + ",";
    for (const auto& [name, bad] : BadNumbers()) {
      ExpectRefused(kAzure, value + ": " + name, ReplaceOnLine(kAzureSeed, 3, key, "," + bad + ","), 3);
    }
    for (const std::string wrong : {"-5", "1.5", "0x10", "\"\"", "5 5"}) {
      ExpectRefused(kAzure, value + ": " + wrong, ReplaceOnLine(kAzureSeed, 3, key, "," + wrong + ","), 3);
    }
  }
  ExpectRefused(kAzure, "timestamp not a time", ReplaceOnLine(kAzureSeed, 3, "2023-11-16 18:17:04.5000000", "abc"), 3,
                "TIMESTAMP");
  ExpectRefused(kAzure, "invalid UTF-8 in a token count", ReplaceOnLine(kAzureSeed, 3, ",3180,", ",31\xc3\x28,"), 3);
  ExpectReadAs(kAzure, "invalid UTF-8 in Note", ReplaceOnLine(kAzureSeed, 3, ",b", ",\xc3\x28"), kAzureReading);
  ExpectReadAs(kAzure, "quoted comma in Note", ReplaceOnLine(kAzureSeed, 3, ",b", ",\"b,b\""), kAzureReading);
  ExpectRefused(kAzure, "missing GeneratedTokens column", ReplaceOnLine(kAzureSeed, 1, "GeneratedTokens", "Generated"),
                1, "GeneratedTokens");
  ExpectRefused(kAzure, "duplicated ContextTokens column", ReplaceOnLine(kAzureSeed, 1, "Note", "ContextTokens"), 1,
                "duplicated column");
  ExpectRefused(kAzure, "a row with a field too many", ReplaceOnLine(kAzureSeed, 3, ",b", ",b,extra"), 3);
  ExpectRefused(kAzure, "a row with a field too few", ReplaceOnLine(kAzureSeed, 3, ",8,b", ",8"), 3);
}

// ---------------------------------------------------------------------------------------------------------
// The native binary trace, written by kvsim from the Mooncake seed.

const Format kNative{"native", ".kvt", [](const std::string& path) { return ReadTrace(path, "native"); }};

std::string NativeSeed() {
  absl::StatusOr<std::vector<Request>> requests = ReadAll(WriteTempFile("native_source.jsonl", kMooncakeSeed), {});
  EXPECT_TRUE(requests.ok()) << requests.status();
  const std::string path = WriteTempFile("native_seed.kvt", "");
  TraceWriterOptions options;
  options.block_tokens = 512;
  options.compress = false;
  absl::StatusOr<std::unique_ptr<TraceWriter>> writer = OpenTraceWriter(path, "native", options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const Request& r : *requests) EXPECT_TRUE((*writer)->Write(r).ok());
  EXPECT_TRUE((*writer)->Close().ok());
  absl::StatusOr<std::string> bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return *bytes;
}

TEST(InputMutationTest, NativeTruncationAndByteFlips) {
  const std::string seed = NativeSeed();
  ExpectReadAs(kNative, "seed", seed, kMooncakeReading);
  // The serialized TraceHeader's length is bytes [12, 16); zero padding follows it up to byte 4096.
  uint32_t header_length = 0;
  for (int i = 3; i >= 0; --i) header_length = header_length * 256 + static_cast<uint8_t>(seed[12 + i]);
  const size_t padding = 24 + header_length;
  ASSERT_LT(padding, 4096u);
  ASSERT_GT(seed.size(), 4096u);
  for (size_t keep = 0; keep < seed.size(); keep += keep < 4096 ? 512 : 7) {
    ExpectRefused(kNative, absl::StrCat("cut after ", keep, " bytes"), seed.substr(0, keep), 0);
  }
  // Every byte outside the padding, flipped: each is refused (checksums cover the header and each frame's
  // records; the magic, version, lengths, counts and indices are checked). In the padding: read unchanged.
  for (size_t i = 0; i < seed.size(); i = (i + 1 == padding) ? 4096 : i + 1) {
    std::string text = seed;
    text[i] = static_cast<char>(text[i] ^ 0x10);
    ExpectRefused(kNative, absl::StrCat("byte ", i, " flipped"), text, 0);
  }
  for (size_t i : {padding, size_t{2048}, size_t{4095}}) {
    std::string text = seed;
    text[i] = static_cast<char>(text[i] ^ 0x10);
    ExpectReadAs(kNative, absl::StrCat("padding byte ", i, " flipped"), text, kMooncakeReading);
  }
}

// ---------------------------------------------------------------------------------------------------------
// An experiment config (text proto), loaded as `kvsim config` and `replay` load it.

const Format kConfig{"config", ".textproto", [](const std::string& path) -> absl::StatusOr<std::string> {
                       absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig(path);
                       if (!config.ok()) return config.status();
                       return absl::StrCat("block_tokens=", config->cache().block_tokens(),
                                           " gpu_capacity_blocks=", config->cache().gpu_capacity_blocks(),
                                           " tiers=", config->cache().lower_tiers_size(),
                                           " max_num_seqs=", config->scheduler().max_num_seqs(),
                                           " max_num_batched_tokens=", config->scheduler().max_num_batched_tokens(),
                                           " max_requests=", config->workload().max_requests(),
                                           " seed=", config->seed(), " name=", config->name(), "\n");
                     }};

constexpr char kConfigSeed[] =
    "name: \"mutant\"\n"                      // 1
    "cache {\n"                               // 2
    "  block_tokens: 16\n"                    // 3
    "  gpu_capacity_blocks: 4096\n"           // 4
    "  lower_tiers {\n"                       // 5
    "    kind: TIER_KIND_HOST\n"              // 6
    "    capacity_bytes: 1000000000\n"        // 7
    "  }\n"                                   // 8
    "}\n"                                     // 9
    "scheduler {\n"                           // 10
    "  max_num_batched_tokens: 2048\n"        // 11
    "  max_num_seqs: 64\n"                    // 12
    "}\n"                                     // 13
    "workload { max_requests: 100 }  # a comment\n"  // 14
    "seed: 3\n";                              // 15
constexpr char kConfigReading[] =
    "block_tokens=16 gpu_capacity_blocks=4096 tiers=1 max_num_seqs=64 max_num_batched_tokens=2048 "
    "max_requests=100 seed=3 name=mutant\n";

TEST(InputMutationTest, ConfigSeedAndTruncation) {
  const std::string seed = kConfigSeed;
  ExpectReadAs(kConfig, "seed", seed, kConfigReading);
  // At the end of a top-level message: the fields before it, the rest at their documented defaults
  // (max_num_seqs 256, max_num_batched_tokens 8192, seed 0; the name defaults to the file's).
  const std::string cut = FirstLines(seed, 9);
  const std::string path = WriteMutant(kConfig, cut);
  absl::StatusOr<std::string> read = kConfig.read(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read,
            "block_tokens=16 gpu_capacity_blocks=4096 tiers=1 max_num_seqs=256 max_num_batched_tokens=8192 "
            "max_requests=0 seed=0 name=mutant\n");
  // Inside a message or a field: refused at the line where the text ends.
  for (int lines : {2, 5, 7, 11}) {
    ExpectRefused(kConfig, absl::StrCat("cut after line ", lines), FirstLines(seed, lines), lines + 1);
  }
  const size_t line3 = LineStart(seed, 3);
  ExpectRefused(kConfig, "cut after 'block_tokens:'", seed.substr(0, line3 + 15), 3);
}

TEST(InputMutationTest, ConfigByteFlips) {
  // A flipped top bit in a field name, an enum name or a number is no text-proto token: refused at its
  // line. (In the quoted name it is a string that is not UTF-8.)
  ExpectTopBitFlipsRefused(kConfig, kConfigSeed, {1, 3, 6, 11});
}

TEST(InputMutationTest, ConfigBadNumbersTypesAndFields) {
  for (const auto& [name, bad] : BadNumbers()) {
    if (bad.empty()) continue;
    ExpectRefused(kConfig, "block_tokens: " + name, ReplaceOnLine(kConfigSeed, 3, "16", bad), 3);
    ExpectRefused(kConfig, "capacity_bytes: " + name, ReplaceOnLine(kConfigSeed, 7, "1000000000", bad), 7);
  }
  ExpectRefused(kConfig, "block_tokens past int32", ReplaceOnLine(kConfigSeed, 3, "16", "2147483648"), 3);
  ExpectRefused(kConfig, "block_tokens fractional", ReplaceOnLine(kConfigSeed, 3, "16", "1.5"), 3);
  ExpectRefused(kConfig, "block_tokens a string", ReplaceOnLine(kConfigSeed, 3, "16", "\"16\""), 3);
  ExpectRefused(kConfig, "cache a number", ReplaceOnLine(kConfigSeed, 2, "cache {", "cache: 5 cache {"), 2);
  ExpectRefused(kConfig, "kind an undefined number", ReplaceOnLine(kConfigSeed, 6, "TIER_KIND_HOST", "7"), 6);
  // protobuf's parser reports an unknown enum name at the token after it: the next line's field here.
  ExpectRefused(kConfig, "kind an unknown name", ReplaceOnLine(kConfigSeed, 6, "TIER_KIND_HOST", "TIER_KIND_DISK"), 7,
                "TIER_KIND_DISK");
  ExpectRefused(kConfig, "unknown field", ReplaceOnLine(kConfigSeed, 12, "max_num_seqs", "max_num_seq"), 12);
  ExpectRefused(kConfig, "duplicated block_tokens",
                ReplaceOnLine(kConfigSeed, 3, "block_tokens: 16", "block_tokens: 16 block_tokens: 16"), 3);
  ExpectRefused(kConfig, "invalid UTF-8 in the name", ReplaceOnLine(kConfigSeed, 1, "mutant", "mu\xc3\x28nt"), 1);
  // Values that parse but that the checks refuse: the message names the file and the field.
  ExpectRefused(kConfig, "block_tokens negative", ReplaceOnLine(kConfigSeed, 3, "16", "-16"), 0, "block_tokens");
  // 0 is proto3's "not set": the documented default, 16.
  ExpectReadAs(kConfig, "block_tokens zero", ReplaceOnLine(kConfigSeed, 3, "16", "0"), kConfigReading);
  ExpectRefused(kConfig, "max_num_seqs negative", ReplaceOnLine(kConfigSeed, 12, "64", "-64"), 0, "max_num_seqs");
  ExpectRefused(kConfig, "capacity_bytes negative", ReplaceOnLine(kConfigSeed, 7, "1000000000", "-1"), 0,
                "capacity_bytes");
  ExpectRefused(kConfig, "missing capacity_bytes (required)", ReplaceOnLine(kConfigSeed, 7, "capacity_bytes: 1000000000", ""),
                0, "capacity_bytes");
  ExpectRefused(kConfig, "missing tier kind (required)", ReplaceOnLine(kConfigSeed, 6, "kind: TIER_KIND_HOST", ""), 0,
                "kind");
  // The comment's text is ignored, whatever it holds.
  ExpectReadAs(kConfig, "comment text", ReplaceOnLine(kConfigSeed, 14, "a comment", "\xc3\x28 cache { } }"),
               kConfigReading);
}

// ---------------------------------------------------------------------------------------------------------
// A workload spec (text proto), parsed and validated as `kvsim gen` does; the reading is the first
// requests generated.

// The first three requests of the trace `kvsim gen` writes from the spec (GenerateTraceFile), read back.
const Format kWorkload{"workload", ".textproto", [](const std::string& path) -> absl::StatusOr<std::string> {
                         proto::WorkloadSpec spec;
                         absl::Status parsed = ParseTextProtoFile(path, &spec);
                         if (!parsed.ok()) return parsed;
                         const std::string out = path + ".kvt";
                         const TraceWriterOpener open_writer = [](const std::string& file, const std::string& format,
                                                                  int32_t block_tokens) {
                           TraceWriterOptions options;
                           options.block_tokens = block_tokens;
                           return OpenTraceWriter(file, format, options);
                         };
                         absl::StatusOr<GenerateSummary> summary =
                             GenerateTraceFile(spec, spec.seed(), out, nullptr, open_writer, {}, path);
                         if (!summary.ok()) return summary.status();
                         absl::StatusOr<std::vector<Request>> requests = ReadAll(out, {});
                         if (!requests.ok()) return requests.status();
                         return Describe(*requests);
                       }};

constexpr char kWorkloadSeed[] =
    "name: \"fixed\"\n"                                       // 1
    "seed: 1\n"                                               // 2
    "block_tokens: 16\n"                                      // 3
    "num_requests: 3\n"                                       // 4
    "arrivals {\n"                                            // 5
    "  poisson {}\n"                                          // 6
    "  rate_per_s: 10\n"                                      // 7
    "}\n"                                                     // 8
    "classes {\n"                                             // 9
    "  name: \"fixed\"\n"                                     // 10
    "  single_turn {\n"                                       // 11
    "    input_tokens { fixed { value: 64 } }\n"              // 12
    "    output_tokens { fixed { value: 8 } }\n"              // 13
    "  }\n"                                                   // 14
    "}\n";                                                    // 15

TEST(InputMutationTest, WorkloadSpecMutants) {
  const std::string seed = kWorkloadSeed;
  // The seed: three single-turn requests of 64 prompt tokens (4 distinct blocks of 16 each) and 8 output
  // tokens, ids 0, 1, 2, at Poisson arrival times.
  const std::string path = WriteMutant(kWorkload, seed);
  absl::StatusOr<std::string> read = kWorkload.read(path);
  ASSERT_TRUE(read.ok()) << read.status();
  const std::vector<std::string> lines = absl::StrSplit(*read, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << *read;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i].substr(0, 5), absl::StrCat("id=", i, " ")) << lines[i];
    EXPECT_NE(lines[i].find(" in=64 out=8 hashes=["), std::string::npos) << lines[i];
    EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), ','), 3) << lines[i];  // 4 block ids
  }
  for (int lines_kept : {5, 9, 12}) {
    ExpectRefused(kWorkload, absl::StrCat("cut after line ", lines_kept), FirstLines(seed, lines_kept),
                  lines_kept + 1);
  }
  // Both fields are doubles: the text format reads nan, inf and 1e400 (as infinity) and 1e23, which the
  // generator's checks refuse by field; a word or a string is no double, refused at its line.
  for (const std::string bad : {"NaN", "inf", "1e400", "-10"}) {
    ExpectRefused(kWorkload, "rate_per_s: " + bad, ReplaceOnLine(seed, 7, "10", bad), 0, "rate_per_s");
  }
  for (const std::string bad : {"NaN", "inf", "1e400", "-64", "99999999999999999999999"}) {
    ExpectRefused(kWorkload, "input tokens: " + bad, ReplaceOnLine(seed, 12, "64", bad), 0, "input_tokens");
  }
  for (const std::string bad : {"abc", "\"10\"", "0x", ""}) {
    // An empty value is reported at the token after it, the next line's "}".
    ExpectRefused(kWorkload, "rate_per_s: " + bad, ReplaceOnLine(seed, 7, "10", bad), bad.empty() ? 8 : 7);
    ExpectRefused(kWorkload, "input tokens: " + bad, ReplaceOnLine(seed, 12, "64", bad), 12);
  }
  ExpectRefused(kWorkload, "missing arrival process", ReplaceOnLine(seed, 6, "poisson {}", ""), 0, "arrivals");
  ExpectRefused(kWorkload, "missing output tokens", ReplaceOnLine(seed, 13, "output_tokens { fixed { value: 8 } }", ""),
                0, "output_tokens");
  ExpectRefused(kWorkload, "duplicated num_requests", ReplaceOnLine(seed, 4, "num_requests: 3", "num_requests: 3 num_requests: 3"),
                4);
  ExpectRefused(kWorkload, "invalid UTF-8 in a class name", ReplaceOnLine(seed, 10, "fixed", "fi\xc3\x28xed"), 10);
  ExpectTopBitFlipsRefused(kWorkload, seed, {3, 7, 12});
}

// ---------------------------------------------------------------------------------------------------------
// A calibration table in CSV form, read as the table cost model reads it.

const Format kCalibration{"calibration", ".csv", [](const std::string& path) -> absl::StatusOr<std::string> {
                            absl::StatusOr<proto::CalibrationTable> table = ReadCalibrationTable(path);
                            if (!table.ok()) return table.status();
                            std::string out = absl::StrCat("gpu=", table->header().gpu_name(), "\n");
                            for (const proto::CalibrationPoint& p : table->points()) {
                              absl::StrAppend(&out, KernelKindName(p.kind()), " ", p.dtype(), " batch=", p.shape().batch(),
                                              " context=", p.shape().context_tokens(), " median_ns=", p.median_ns(), "\n");
                            }
                            return out;
                          }};

constexpr char kCalibrationSeed[] =
    "# gpu_name: H200\n"                                                     // 1
    "kind,dtype,batch,context_tokens,num_heads,num_kv_heads,head_dim,median_ns,repetitions\n"  // 2
    "decode_attention,bf16,8,4096,32,8,128,51234.5,30\n"                     // 3
    "decode_attention,bf16,16,4096,32,8,128,90000,30\n"                      // 4
    "decode_attention,,32,8192,32,8,128,170000,30\n";                        // 5 (dtype defaults to bf16)
constexpr char kCalibrationReading[] =
    "gpu=H200\n"
    "decode_attention bf16 batch=8 context=4096 median_ns=51234.5\n"
    "decode_attention bf16 batch=16 context=4096 median_ns=90000\n"
    "decode_attention bf16 batch=32 context=8192 median_ns=170000\n";

TEST(InputMutationTest, CalibrationCsvMutants) {
  const std::string seed = kCalibrationSeed;
  ExpectReadAs(kCalibration, "seed", seed, kCalibrationReading);
  for (int points : {1, 2}) {
    ExpectReadAs(kCalibration, absl::StrCat("cut after point ", points), FirstLines(seed, points + 2),
                 FirstRecords(kCalibrationReading, points + 1));
  }
  const size_t start = LineStart(seed, 4);
  for (size_t keep : {size_t{3}, size_t{20}, size_t{30}}) {
    ExpectRefused(kCalibration, absl::StrCat("cut in line 4 after ", keep, " bytes"), seed.substr(0, start + keep), 4);
  }
  for (const auto& [name, bad] : BadNumbers()) {
    ExpectRefused(kCalibration, "median_ns: " + name, ReplaceOnLine(seed, 4, "90000", bad), 4, "median_ns");
    if (!bad.empty()) ExpectRefused(kCalibration, "batch: " + name, ReplaceOnLine(seed, 4, ",16,", "," + bad + ","), 4, "batch");
  }
  for (const std::string wrong : {"-90000", "0", "0x15f90", "9e4x", "1e308"}) {
    ExpectRefused(kCalibration, "median_ns " + wrong, ReplaceOnLine(seed, 4, "90000", wrong), 4, "median_ns");
  }
  ExpectRefused(kCalibration, "batch fractional", ReplaceOnLine(seed, 4, ",16,", ",1.5,"), 4, "batch");
  ExpectRefused(kCalibration, "batch negative", ReplaceOnLine(seed, 4, ",16,", ",-16,"), 4, "batch");
  ExpectRefused(kCalibration, "unknown kind", ReplaceOnLine(seed, 4, "decode_attention", "decode_atention"), 4, "kind");
  ExpectRefused(kCalibration, "unknown dtype", ReplaceOnLine(seed, 4, "bf16", "bf17"), 4, "dtype");
  std::string no_median = ReplaceOnLine(seed, 2, ",median_ns", "");
  no_median = ReplaceOnLine(no_median, 3, ",51234.5", "");
  no_median = ReplaceOnLine(no_median, 4, ",90000", "");
  no_median = ReplaceOnLine(no_median, 5, ",170000", "");
  ExpectRefused(kCalibration, "missing median_ns column (required)", no_median, 0, "median_ns");
  ExpectRefused(kCalibration, "unknown column", ReplaceOnLine(seed, 2, "median_ns", "median"), 2, "median");
  ExpectRefused(kCalibration, "duplicated batch column", ReplaceOnLine(seed, 2, "repetitions", "batch"), 2, "batch");
  ExpectRefused(kCalibration, "invalid UTF-8 in kind", ReplaceOnLine(seed, 4, "decode_attention", "decode\xc3\x28"), 4);
  ExpectRefused(kCalibration, "a field too many", ReplaceOnLine(seed, 4, ",30", ",30,1"), 4);
  const std::string line = Line(seed, 4);
  for (size_t i = 0; i < line.size(); ++i) {
    std::string mutant = seed;
    mutant[start + i] = static_cast<char>(mutant[start + i] ^ 0x80);
    ExpectRefused(kCalibration, absl::StrCat("line 4 byte ", i, " flipped"), mutant, 4);
  }
}

}  // namespace
}  // namespace kvsim
