// Speed of trace ingestion (issue 3 targets: JSONL import >= 200 MB/s on one core, native reading
// >= 20 M requests/s, memory flat with trace length).
//
//   bazel run -c opt //traces:trace_io_benchmark
//
// Inputs are built in a private temporary directory (removed at exit) from the bundled Mooncake trace,
// replicated N times with timestamps shifted so that every copy follows the previous one (N = the
// benchmark's argument; N = 1 includes opening the file in every 4k requests, N = 10 shows the
// streaming rate). Counters: MB/s of input (bytes_per_second), requests/s (items_per_second; both per
// CPU second of the one thread that reads: readers start no threads), and rss_growth_MB: the largest
// growth of the resident set while reading over the resident set before opening, which must not grow
// with N. The native-read target is items_per_second of BM_ReadNativeZstd (the writer's default) and
// BM_ReadNativeUncompressed; BM_ReadNativeZstdHuffmanLiterals reads files compressed as before
// zstd_compress_literals existed.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "traces/trace_convert.h"
#include "traces/trace_io.h"
#include "util/check.h"
#include "util/file.h"

namespace kvsim {
namespace {

constexpr char kMooncake[] = "traces/data/mooncake_synthetic.jsonl";
constexpr int64_t kCopyShiftMs = 1'100'000;  // the trace lasts 1,022,025 ms

// A directory of this process's own under $TEST_TMPDIR (or /tmp), removed with the files the benchmark
// wrote there when the process exits.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp", "/kvsim_bench_XXXXXX");
    KVSIM_CHECK(mkdtemp(pattern.data()) != nullptr) << pattern << ": " << std::strerror(errno);
    dir_ = pattern;
  }
  ~ScratchDir() {
    for (const std::string& path : files_) std::remove(path.c_str());
    rmdir(dir_.c_str());
  }
  // A path in the directory, removed at exit.
  std::string File(const std::string& name) {
    files_.push_back(absl::StrCat(dir_, "/", name));
    return files_.back();
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

ScratchDir& Scratch() {
  static ScratchDir dir;  // destroyed at exit, after the benchmarks ran
  return dir;
}

// The Mooncake trace `copies` times, each copy's timestamps shifted after the previous copy.
const std::string& ReplicatedJsonl(int copies) {
  static std::map<int, std::string> paths;
  auto it = paths.find(copies);
  if (it != paths.end()) return it->second;
  auto text = ReadFile(kMooncake);
  KVSIM_CHECK(text.ok()) << "run from the runfiles root (bazel run): " << text.status();
  const std::string path = Scratch().File(absl::StrCat("x", copies, ".jsonl"));
  std::ofstream out(path);
  std::istringstream lines(*text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  const std::string prefix = "{\"timestamp\": ";
  for (int c = 0; c < copies; ++c) {
    for (const std::string& l : all) {
      KVSIM_CHECK(l.compare(0, prefix.size(), prefix) == 0);
      const size_t comma = l.find(',');
      const int64_t ts = std::stoll(l.substr(prefix.size(), comma - prefix.size()));
      out << prefix << ts + c * kCopyShiftMs << l.substr(comma) << "\n";
    }
  }
  out.close();
  return paths[copies] = path;
}

enum class Compression { kNone, kZstd, kZstdHuffmanLiterals };

// The replicated Mooncake trace converted to the native format; kZstdHuffmanLiterals is how writers
// before zstd_compress_literals (default off) compressed frames.
const std::string& NativeOf(int copies, Compression compression) {
  static std::map<std::pair<int, Compression>, std::string> paths;
  auto key = std::make_pair(copies, compression);
  auto it = paths.find(key);
  if (it != paths.end()) return it->second;
  const char* suffix[] = {".kvt", ".zst.kvt", ".zst_huf.kvt"};
  const std::string path = Scratch().File(absl::StrCat("x", copies, suffix[static_cast<int>(compression)]));
  TraceWriterOptions options;
  options.compress = compression != Compression::kNone;
  options.zstd_compress_literals = compression == Compression::kZstdHuffmanLiterals;
  auto summary = ConvertTrace(ReplicatedJsonl(copies), {}, path, "native", options);
  KVSIM_CHECK(summary.ok()) << summary.status();
  return paths[key] = path;
}

// The resident set size, from /proc/self/statm kept open (one pread per call: cheap enough not to
// weigh on the per-open cost of the small traces).
int64_t ResidentBytes() {
  static const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  KVSIM_CHECK(fd >= 0) << "/proc/self/statm: " << std::strerror(errno);
  char text[128];
  const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  KVSIM_CHECK(n > 0) << "/proc/self/statm: " << std::strerror(errno);
  text[n] = '\0';
  char* end = nullptr;
  std::strtoll(text, &end, 10);  // total program size; the resident pages follow
  const int64_t resident_pages = std::strtoll(end, nullptr, 10);
  return resident_pages * sysconf(_SC_PAGESIZE);
}

int64_t FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return static_cast<int64_t>(in.tellg());
}

// Reads `path` to the end once per iteration; reports requests/s, bytes/s of the file, RSS growth.
void ReadTrace(benchmark::State& state, const std::string& path) {
  int64_t requests = 0, max_growth = 0;
  for (auto _ : state) {
    const int64_t before = ResidentBytes();
    auto reader = OpenTrace(path, {});
    KVSIM_CHECK(reader.ok()) << reader.status();
    Request request;
    int64_t n = 0;
    while ((*reader)->Next(&request)) {
      if ((++n & 0x3fff) == 0) max_growth = std::max(max_growth, ResidentBytes() - before);
    }
    KVSIM_CHECK((*reader)->status().ok()) << (*reader)->status();
    max_growth = std::max(max_growth, ResidentBytes() - before);
    requests += n;
    benchmark::DoNotOptimize(request.input_tokens);
  }
  state.SetItemsProcessed(requests);
  state.SetBytesProcessed(state.iterations() * FileBytes(path));
  state.counters["rss_growth_MB"] = static_cast<double>(max_growth) / (1 << 20);
  state.counters["requests"] = static_cast<double>(requests) / state.iterations();
}

void BM_ImportMooncakeJsonl(benchmark::State& state) {
  ReadTrace(state, ReplicatedJsonl(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_ImportMooncakeJsonl)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond);

void BM_ReadNativeZstd(benchmark::State& state) {
  ReadTrace(state, NativeOf(static_cast<int>(state.range(0)), Compression::kZstd));
}
BENCHMARK(BM_ReadNativeZstd)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond);

// Files written with Huffman-coded literals (zstd_compress_literals, the only way before it existed).
void BM_ReadNativeZstdHuffmanLiterals(benchmark::State& state) {
  ReadTrace(state, NativeOf(static_cast<int>(state.range(0)), Compression::kZstdHuffmanLiterals));
}
BENCHMARK(BM_ReadNativeZstdHuffmanLiterals)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond);

void BM_ReadNativeUncompressed(benchmark::State& state) {
  ReadTrace(state, NativeOf(static_cast<int>(state.range(0)), Compression::kNone));
}
BENCHMARK(BM_ReadNativeUncompressed)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond);

void BM_ImportAzureCsv(benchmark::State& state) { ReadTrace(state, "traces/data/azure_code_2023.csv"); }
BENCHMARK(BM_ImportAzureCsv)->Unit(benchmark::kMillisecond);

// Native reading of requests without block hashes (the Azure trace, 20 copies): the per-record cost.
void BM_ReadNativeNoHashes(benchmark::State& state) {
  static const std::string path = [] {
    const std::string one = Scratch().File("azure.kvt");
    KVSIM_CHECK(ConvertTrace("traces/data/azure_code_2023.csv", {}, one, "native", {}).ok());
    // 20 copies, each shifted after the previous one, through a writer.
    const std::string many = Scratch().File("azure20.kvt");
    auto writer = OpenTraceWriter(many, "native", 0);
    KVSIM_CHECK(writer.ok());
    for (int c = 0; c < 20; ++c) {
      auto reader = OpenTrace(one, {});
      KVSIM_CHECK(reader.ok());
      Request r;
      while ((*reader)->Next(&r)) {
        r.arrival_ns += c * int64_t{4'000'000'000'000};
        r.request_id += c * 8819;
        KVSIM_CHECK((*writer)->Write(r).ok());
      }
    }
    KVSIM_CHECK((*writer)->Close().ok());
    return many;
  }();
  ReadTrace(state, path);
}
BENCHMARK(BM_ReadNativeNoHashes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvsim
