// libFuzzer harness for the trace parsers: each input is written to a file and read to the end with
// the importer named by the environment variable KVSIM_FUZZ_FORMAT ("mooncake", "azure", "native",
// ...). Any crash, sanitizer report, hang or leak is a bug; errors (non-OK statuses) are expected.
// Built and run by traces/fuzz/fuzz_test.sh with clang's -fsanitize=fuzzer,address.
// With KVSIM_FUZZ_MAKE_NATIVE="IN OUT_PREFIX" it instead converts IN into native seeds
// OUT_PREFIX.zst.kvt and OUT_PREFIX.raw.kvt and exits (the native parser's seed corpus).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "traces/trace_convert.h"
#include "traces/trace_reader.h"
#include "traces/trace_stats.h"

namespace {

std::string* format = nullptr;
std::string* path = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* make = std::getenv("KVSIM_FUZZ_MAKE_NATIVE")) {
    const std::string spec = make;
    const size_t space = spec.find(' ');
    const std::string in = spec.substr(0, space), prefix = spec.substr(space + 1);
    for (bool compress : {true, false}) {
      kvsim::TraceWriterOptions options;
      options.compress = compress;
      const std::string out = prefix + (compress ? ".zst.kvt" : ".raw.kvt");
      if (!kvsim::ConvertTrace(in, {}, out, "native", options).ok()) std::exit(1);
    }
    std::exit(0);
  }
  const char* name = std::getenv("KVSIM_FUZZ_FORMAT");
  format = new std::string(name == nullptr ? "" : name);
  const char* dir = std::getenv("TEST_TMPDIR");
  path = new std::string(std::string(dir == nullptr ? "/tmp" : dir) + "/fuzz_input." + std::to_string(getpid()));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::FILE* file = std::fopen(path->c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  kvsim::TraceOptions options;
  options.format = *format;
  options.reorder_window = 16;
  options.chain_hashes = (size % 2) == 1;
  auto reader = kvsim::OpenTrace(*path, options);
  if (!reader.ok()) return 0;
  // Statistics exercise every field the reader produced (and the stack-distance code).
  auto stats = kvsim::ComputeTraceStats(**reader);
  (void)stats;
  return 0;
}
