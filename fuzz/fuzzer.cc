// The fuzz harness of every kvsim input, one binary for all targets (one build); under libFuzzer the
// environment variable KVSIM_FUZZ_TARGET names the one to fuzz (KVSIM_FUZZ_TRACE: the engine's trace):
//   trace:FORMAT a trace in FORMAT (mooncake, bailian, hashed, chunk_hash, azure, burstgpt, vidur, jsonl,
//                native), read to the end through OpenTrace (reorder window 16, hash chaining for odd
//                input sizes) and summarised by ComputeTraceStats, which touches every field read
//   config       an experiment config (text proto) through the checks `kvsim config` runs:
//                LoadExperimentConfig, GpuCapacityBlocks, CheckServingConfig; an accepted config must
//                print as a text proto that resolves back to the same config
//   engine       the same, then a config that passes runs a serving replay of the first requests of a
//                small bundled trace (KVSIM_FUZZ_TRACE), after refusing configs whose replay could be
//                slow or large (CapForFuzzing below)
//   workload     a workload spec (text proto) through WorkloadGenerator, up to kMaxGeneratedRequests
//   kvat         an attention trace (.kvat): open, then decode every sample; with an even input size the
//                records' CRC-32 are recomputed first, so mutations reach the decoders behind the checksums
//   calibration  a calibration table in CSV form, parsed and normalised as ReadCalibrationTable does;
//                an accepted table must read back from its own CSV form
//   vidur        one text through each of the four Vidur profile importers (attention, mlp, all_reduce,
//                element-wise)
//   outcomes     an outcome table of `kvsim select` against the default candidate set
// Any crash, sanitizer report, hang or leak is a bug; errors (non-OK statuses) are expected.
// Two drivers (fuzz/fuzzer.h): libFuzzer, built and run by fuzz/run_fuzzers.sh (clang
// -fsanitize=fuzzer,address,undefined; fuzz/build_fuzzer.sh), where the environment variables below pick
// the target; and fuzz/fuzz_driver.cc, the test suite's bounded deterministic run (//fuzz:fuzz_test).
// Under libFuzzer, with KVSIM_FUZZ_MAKE_SEEDS="DIR MOONCAKE_JSONL" the binary instead writes the seeds
// MakeFuzzSeeds makes into DIR and exits.
#include "fuzz/fuzzer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/cost_model.h"
#include "cost_models/vidur_import.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/calibration.pb.h"
#include "proto/config.pb.h"
#include "proto/workload.pb.h"
#include "sim/select/candidates.h"
#include "sim/select/outcome_table.h"
#include "sim/select/synthetic_outcomes.h"
#include "sim/serving/replay.h"
#include "traces/attention/attention_trace_io.h"
#include "traces/attention/crc32.h"
#include "traces/attention/synthetic_trace.h"
#include "traces/generators/workload_generator.h"
#include "traces/request.h"
#include "traces/trace_convert.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"
#include "traces/trace_stats.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// Bounds that keep one execution in milliseconds (libFuzzer runs thousands).
constexpr int64_t kMaxGeneratedRequests = 256;
constexpr int64_t kMaxReplayRequests = 200;
constexpr int64_t kMaxReplayOutputTokens = 64;  // the bundled requests' outputs are clamped to this
constexpr int64_t kMaxFuzzGpuBlocks = int64_t{1} << 20;
constexpr int64_t kMaxFuzzTierBlocks = int64_t{1} << 22;
constexpr int kMaxFuzzReplicas = 4;
constexpr int64_t kMaxFuzzIterations = 20000;
constexpr int64_t kMaxKvatSamples = 8;

std::string* target = nullptr;
std::string* path = nullptr;                 // where inputs are written for readers that take a path
std::vector<Request>* replay_trace = nullptr;  // engine: the bundled requests
TraceInfo* replay_info = nullptr;                // and their trace's description

void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzzer: %s\n", what.c_str());
  std::abort();
}

void WriteInput(const uint8_t* data, size_t size, const std::string& file) {
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (out == nullptr) Fail("cannot write " + file);
  if (size > 0 && std::fwrite(data, 1, size, out) != size) Fail("cannot write " + file);
  std::fclose(out);
}

// The config checks of `kvsim config` (tools/config_command.cc); an accepted config's text form must
// resolve to the same config (the command documents that its output reloads unchanged).
absl::StatusOr<proto::ExperimentConfig> CheckConfig(const std::string& file) {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig(file);
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(*config, config->cache().block_tokens());
  if (!blocks.ok()) return blocks.status();
  absl::Status serving = CheckServingConfig(*config, file);
  if (!serving.ok()) return serving;
  proto::ExperimentConfig printed;
  if (!ParseTextProto(ToTextProto(*config), "printed", &printed).ok()) Fail("a resolved config does not parse");
  absl::StatusOr<proto::ExperimentConfig> again = ResolveExperimentConfig(printed, "printed");
  if (!again.ok()) Fail("a resolved config is refused when reloaded: " + std::string(again.status().message()));
  if (!google::protobuf::util::MessageDifferencer::Equals(*again, *config)) {
    Fail("a resolved config changes when reloaded:\n" + ToTextProto(*config) + "\n---\n" + ToTextProto(*again));
  }
  return config;
}

// Refuses (false) configs whose replay of the fuzz trace could take long or much memory, and points the
// rest at the fuzz trace. Iterations are bounded above by each request running alone: one per prefill
// chunk plus one per output token.
bool CapForFuzzing(proto::ExperimentConfig* config) {
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(*config, config->cache().block_tokens());
  if (!blocks.ok() || *blocks > kMaxFuzzGpuBlocks) return false;
  absl::StatusOr<double> block_bytes = KvBytesPerBlock(*config, config->cache().block_tokens());
  if (!block_bytes.ok() || *block_bytes <= 0) return false;
  for (const proto::TierConfig& tier : config->cache().lower_tiers()) {
    if (tier.capacity_bytes() / *block_bytes > kMaxFuzzTierBlocks) return false;
  }
  if (config->cluster().num_replicas() > kMaxFuzzReplicas) return false;
  const proto::SchedulerConfig& scheduler = config->scheduler();
  int64_t chunk = scheduler.max_num_batched_tokens();
  if (scheduler.chunk_tokens() > 0 && scheduler.chunk_tokens() < chunk) chunk = scheduler.chunk_tokens();
  if (chunk < 1) return false;
  int64_t requests = kMaxReplayRequests;
  if (config->workload().max_requests() > 0 && config->workload().max_requests() < requests) {
    requests = config->workload().max_requests();
  }
  int64_t iterations = 0;
  for (int64_t i = 0; i < requests && i < static_cast<int64_t>(replay_trace->size()); ++i) {
    const Request& r = (*replay_trace)[i];
    iterations += (r.input_tokens + chunk - 1) / chunk + r.output_tokens;
  }
  if (iterations > kMaxFuzzIterations) return false;
  config->mutable_workload()->set_max_requests(requests);
  config->mutable_workload()->clear_trace_path();
  return true;
}

void FuzzConfig(const uint8_t* data, size_t size, bool run_engine) {
  WriteInput(data, size, *path);
  absl::StatusOr<proto::ExperimentConfig> config = CheckConfig(*path);
  if (!config.ok() || !run_engine || !CapForFuzzing(&*config)) return;
  absl::StatusOr<std::unique_ptr<CostModel>> cost_model = CreateCostModel(*config);
  if (!cost_model.ok()) Fail("CheckServingConfig accepted a config whose cost model fails: " + cost_model.status().ToString());
  VectorTraceReader reader(*replay_trace, *replay_info);
  ReplayOptions options;
  options.timeline = (size % 2) == 1;
  options.timeline_max_events = 2000;
  absl::StatusOr<ReplayOutput> output = RunReplay(*config, **cost_model, &reader, options);
  (void)output;
}

void FuzzTrace(const uint8_t* data, size_t size, const std::string& trace_format) {
  WriteInput(data, size, *path);
  TraceOptions options;
  options.format = trace_format;
  options.reorder_window = 16;
  options.chain_hashes = (size % 2) == 1;
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(*path, options);
  if (!reader.ok()) return;
  // Statistics exercise every field the reader produced (and the stack-distance code).
  auto stats = ComputeTraceStats(**reader);
  (void)stats;
}

void FuzzWorkload(const uint8_t* data, size_t size) {
  proto::WorkloadSpec spec;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (!ParseTextProto(text, "fuzz.textproto", &spec).ok()) return;
  absl::StatusOr<std::unique_ptr<WorkloadGenerator>> generator = WorkloadGenerator::Create(spec, 1, nullptr);
  if (!generator.ok()) return;
  Request request;
  for (int64_t i = 0; i < kMaxGeneratedRequests && (*generator)->Next(&request); ++i) {
  }
  (void)(*generator)->status();
}

// Rewrites each record's CRC-32 to match its stored payload, walking the record headers as far as they
// are in bounds (the layout is in traces/attention/attention_trace_io.h).
void FixKvatChecksums(std::string* file) {
  constexpr size_t kFileHeader = 16, kRecordHeader = 32;
  size_t at = kFileHeader;
  while (at + kRecordHeader <= file->size()) {
    uint64_t stored = 0;
    std::memcpy(&stored, file->data() + at + 8, sizeof(stored));
    if (stored > file->size() - at - kRecordHeader) return;
    const uint32_t crc = Crc32(absl::string_view(file->data() + at + kRecordHeader, stored));
    std::memcpy(&(*file)[at + 24], &crc, sizeof(crc));
    at += kRecordHeader + stored;
  }
}

void FuzzKvat(const uint8_t* data, size_t size) {
  std::string file(reinterpret_cast<const char*>(data), size);
  if (size % 2 == 0) FixKvatChecksums(&file);
  WriteInput(reinterpret_cast<const uint8_t*>(file.data()), file.size(), *path);
  absl::StatusOr<std::unique_ptr<AttentionTraceReader>> reader = AttentionTraceReader::Open(*path);
  if (!reader.ok()) return;
  for (int64_t i = 0; i < (*reader)->num_samples() && i < kMaxKvatSamples; ++i) {
    absl::StatusOr<AttentionSample> sample = (*reader)->ReadSample(i);
    (void)sample;
  }
}

void FuzzCalibration(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<proto::CalibrationTable> table = ParseCalibrationCsv(text, "fuzz.csv");
  if (!table.ok()) return;
  (void)NormaliseCalibrationPoints("fuzz.csv", &*table);
  // What the CSV writer makes of an accepted table must read back.
  if (!ParseCalibrationCsv(CalibrationTableToCsv(*table), "written.csv").ok()) {
    Fail("an accepted calibration table does not read back from its own CSV form");
  }
}

void FuzzVidur(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  proto::CalibrationTable table;
  VidurImportReport report;
  (void)ImportVidurAttentionCsv(text, "attention.csv", &table, &report);
  (void)ImportVidurMlpCsv(text, "mlp.csv", &table, &report);
  (void)ImportVidurAllReduceCsv(text, "all_reduce.csv", &table, &report,
                                {.all_reduce_scope = size % 2 == 0 ? AllReduceScope::kSingleNode
                                                                   : AllReduceScope::kCrossNode});
  std::vector<VidurElementwiseRow> rows;
  (void)ImportVidurElementwiseCsv(text, "mlp.csv", &rows, &report);
}

void FuzzOutcomes(const uint8_t* data, size_t size) {
  static const proto::SelectCandidateSet* set = [] {
    absl::StatusOr<proto::SelectCandidateSet> loaded = LoadSelectCandidates("");
    if (!loaded.ok()) Fail("the default candidate set does not load");
    return new proto::SelectCandidateSet(*loaded);
  }();
  WriteInput(data, size, *path);
  absl::StatusOr<OutcomeTable> table = ReadOutcomeTable(*path, *set, {.costs_from_model = size % 2 == 1});
  (void)table;
}

// Seeds made by kvsim's writers: native traces of the Mooncake seed (both storage forms), a small
// synthetic attention trace (both storage forms) and a synthetic outcome table.
void MakeSeeds(const std::string& dir, const std::string& mooncake) {
  for (bool compress : {true, false}) {
    TraceWriterOptions options;
    options.compress = compress;
    const std::string out = dir + "/mooncake" + (compress ? ".zst.kvt" : ".raw.kvt");
    if (!ConvertTrace(mooncake, {}, out, "native", options).ok()) Fail("cannot convert " + mooncake);
  }
  SyntheticTraceOptions options;
  options.num_layers = 1;
  options.num_kv_heads = 1;
  options.group_size = 2;
  options.head_dim = 40;
  options.prompt_len = 12;
  options.decode_steps = 2;
  options.query_window = 4;
  for (int zstd_level : {0, 3}) {
    const SyntheticTrace trace = GenerateSyntheticTrace(options);
    auto writer = AttentionTraceWriter::Create(dir + "/synthetic" + std::to_string(zstd_level) + ".kvat",
                                               trace.header, {.zstd_level = zstd_level});
    if (!writer.ok()) Fail(writer.status().ToString());
    for (const AttentionSample& sample : trace.samples) {
      if (!(*writer)->Append(sample).ok()) Fail("cannot append a synthetic sample");
    }
    if (!(*writer)->Finish().ok()) Fail("cannot finish the synthetic trace");
  }
  absl::StatusOr<proto::SelectCandidateSet> set = LoadSelectCandidates("");
  // Loaded as kvsim select loads it: candidates are costed with the roofline.
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("", proto::COST_MODEL_KIND_ROOFLINE);
  if (!set.ok()) Fail("the default candidates do not load: " + set.status().ToString());
  if (!config.ok()) Fail("the default config does not resolve: " + config.status().ToString());
  absl::StatusOr<OutcomeTable> table = MakeSyntheticOutcomeTable(*set, *config, {.num_prompts = 2, .seed = 1});
  if (!table.ok()) Fail(table.status().ToString());
  const std::string csv = FormatOutcomeTableCsv(*table);
  WriteInput(reinterpret_cast<const uint8_t*>(csv.data()), csv.size(), dir + "/synthetic.csv");
}

// The first kMaxReplayRequests requests of `file`, outputs clamped to kMaxReplayOutputTokens.
void LoadReplayTrace(const std::string& file) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTrace(file, {});
  if (!reader.ok()) Fail("cannot open the fuzz trace: " + reader.status().ToString());
  replay_info = new TraceInfo((*reader)->info());
  auto* requests = new std::vector<Request>();
  Request request;
  while (static_cast<int64_t>(requests->size()) < kMaxReplayRequests && (*reader)->Next(&request)) {
    if (request.output_tokens > kMaxReplayOutputTokens) request.output_tokens = kMaxReplayOutputTokens;
    requests->push_back(request);
  }
  if (!(*reader)->status().ok()) Fail("cannot read the fuzz trace: " + (*reader)->status().ToString());
  replay_trace = requests;
}

}  // namespace

std::vector<std::string> FuzzTargetNames() {
  std::vector<std::string> names;
  for (const TraceFormat* format : TraceFormats()) names.push_back("trace:" + format->name);
  std::sort(names.begin(), names.end());
  for (const char* name : {"config", "engine", "workload", "kvat", "calibration", "vidur", "outcomes"}) {
    names.push_back(name);
  }
  return names;
}

void InitFuzzTarget(const std::string& name, const std::string& tmp_dir, const std::string& replay_trace_file) {
  if (target == nullptr) target = new std::string;
  if (path == nullptr) path = new std::string;
  *target = name;
  // The extension of the target's files (a trace's format is given, never taken from the name).
  const std::string extension = name == "config" || name == "engine" ? ".textproto"
                                : name == "kvat"                     ? ".kvat"
                                : name.rfind("trace:", 0) == 0       ? ".trace"
                                                                     : ".csv";
  *path = tmp_dir + "/fuzz_input." + std::to_string(getpid()) + extension;
  if (name == "engine" && replay_trace == nullptr) {
    if (replay_trace_file.empty()) Fail("the engine target needs a small trace to replay");
    LoadReplayTrace(replay_trace_file);
  }
}

void MakeFuzzSeeds(const std::string& dir, const std::string& mooncake_jsonl) { MakeSeeds(dir, mooncake_jsonl); }

void FuzzOneInput(const uint8_t* data, size_t size) {
  if (target == nullptr) Fail("FuzzOneInput before InitFuzzTarget");
  const std::string& t = *target;
  if (t.rfind("trace:", 0) == 0) {
    FuzzTrace(data, size, t.substr(6));
  } else if (t == "config" || t == "engine") {
    FuzzConfig(data, size, t == "engine");
  } else if (t == "workload") {
    FuzzWorkload(data, size);
  } else if (t == "kvat") {
    FuzzKvat(data, size);
  } else if (t == "calibration") {
    FuzzCalibration(data, size);
  } else if (t == "vidur") {
    FuzzVidur(data, size);
  } else if (t == "outcomes") {
    FuzzOutcomes(data, size);
  } else {
    Fail("the fuzz target must be one of " + absl::StrJoin(FuzzTargetNames(), ", ") + ", got '" + t + "'");
  }
}

}  // namespace kvsim

// libFuzzer's entry points (the clang campaign build, fuzz/build_fuzzer.sh); the Bazel suite run calls the
// functions above from fuzz/fuzz_driver.cc instead.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* make = std::getenv("KVSIM_FUZZ_MAKE_SEEDS")) {
    const std::string spec = make;
    const size_t space = spec.find(' ');
    if (space == std::string::npos) kvsim::Fail("KVSIM_FUZZ_MAKE_SEEDS must be \"DIR MOONCAKE_JSONL\"");
    kvsim::MakeFuzzSeeds(spec.substr(0, space), spec.substr(space + 1));
    std::exit(0);
  }
  if (std::getenv("KVSIM_FUZZ_LIST_TARGETS") != nullptr) {  // the campaign's default target list
    for (const std::string& name : kvsim::FuzzTargetNames()) std::printf("%s\n", name.c_str());
    std::exit(0);
  }
  const char* name = std::getenv("KVSIM_FUZZ_TARGET");
  const char* dir = std::getenv("TEST_TMPDIR");
  const char* trace = std::getenv("KVSIM_FUZZ_TRACE");
  kvsim::InitFuzzTarget(name == nullptr ? "" : name, dir == nullptr ? "/tmp" : dir, trace == nullptr ? "" : trace);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvsim::FuzzOneInput(data, size);
  return 0;
}
