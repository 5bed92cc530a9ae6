// The test suite's run of the fuzz targets (fuzz/fuzzer.h): every seed of each target and a fixed number of
// deterministic mutants of each seed go through the target once, under the ASan and UBSan build Bazel makes
// (//fuzz:fuzz_test). Bounded in inputs, not in time, and reproducible: mutant K of seed S of target T is
// the same bytes on every run and machine (SplitMix64 keyed by T, S and K), so a finding names an input
// that can be made again. Coverage-guided fuzzing is tools/fuzz_campaign.sh (libFuzzer, clang).
//
// Usage: fuzz_driver [--mutants=N] [--input_seconds=S] --mooncake_seed=JSONL --replay_trace=TRACE
//                    TARGET|MAX_LEN|DICT SEED... [TARGET|MAX_LEN|DICT SEED...]...
//   TARGET        a target of fuzz/fuzzer.h; MAX_LEN the largest input it gets (seeds are cut to MAX_LEN, at
//                 the last line end before it where there is one, and so are mutants); DICT a libFuzzer
//                 dictionary (may be empty)
//   SEED          the target's seeds: files, or made/NAME for a file fuzz/fuzzer.h's MakeFuzzSeeds writes
//                 (made from JSONL)
//   --mutants     mutants per seed (default 100)
//   --input_seconds  the longest one input may take before it counts as a hang (default 20)
// Under Bazel's test sharding, shard I of N runs the specs I, I + N, ...
// Exit status 0 when every input was read or refused; a crash, a sanitizer report, an abort of the harness
// or a hang stops the run with the target, the seed and the mutant on stderr and the input written to
// TEST_UNDECLARED_OUTPUTS_DIR (or TEST_TMPDIR) as crash-TARGET-SEED-MUTANT. Status 2 for a bad spec or a
// missing seed.
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzzer.h"
#include "util/stream_sketch.h"

namespace kvsim {
namespace {

// The input being run, for the reports written when the process dies (signal-safe: plain buffers).
const uint8_t* current_data = nullptr;
size_t current_size = 0;
char current_name[512] = "";
char crash_path[1024] = "";

void WriteAll(int fd, const char* text, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}

void WriteText(int fd, const char* text) { WriteAll(fd, text, std::strlen(text)); }

// Writes the current input to crash_path and names it on stderr. Runs in a dying process: only
// async-signal-safe calls.
void ReportCurrentInput() {
  if (current_data == nullptr) return;
  WriteText(2, "\nfuzz_driver: the input that failed: ");
  WriteText(2, current_name);
  const int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    WriteAll(fd, reinterpret_cast<const char*>(current_data), current_size);
    close(fd);
    WriteText(2, ", written to ");
    WriteText(2, crash_path);
  }
  WriteText(2, "\n");
}

void OnDeath() { ReportCurrentInput(); }

void OnSignal(int signal) {
  if (signal == SIGALRM) WriteText(2, "\nfuzz_driver: an input ran past --input_seconds (a hang)");
  ReportCurrentInput();
  if (signal == SIGALRM) _exit(1);
  ::signal(signal, SIG_DFL);
  raise(signal);
}

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t value = Mix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return value;
  }
  // Uniform enough in [0, n) for n > 0 (the modulo bias is irrelevant here).
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

// FNV-1a: a fixed hash of a target's name (std::hash may differ between standard libraries).
uint64_t NameHash(absl::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return hash;
}

// Values that sit at the edges of what readers accept, written into numbers and fields.
constexpr const char* kInterestingValues[] = {
    "0", "-1", "1", "2147483647", "2147483648", "-2147483649", "4294967296", "9223372036854775807",
    "18446744073709551616", "1e308", "-1e308", "1e-320", "nan", "inf", "-inf", "0x10", "1.5", "", "\"",
    "\xff\xfe", "\xc3\x28",
};
constexpr char kInterestingBytes[] = {0, '\n', '\r', ',', '"', '{', '}', '[', ']', ':', '-', '.', '9', '\\', '\x7f',
                                      '\x80', '\xff'};

// One mutation of `input` (kept within max_len).
void MutateOnce(const std::vector<std::string>& dict, size_t max_len, Rng* rng, std::string* input) {
  const size_t size = input->size();
  switch (rng->Below(9)) {
    case 0:  // flip one bit
      if (size > 0) (*input)[rng->Below(size)] ^= static_cast<char>(1u << rng->Below(8));
      break;
    case 1:  // set one byte to a structural or edge value
      if (size > 0) (*input)[rng->Below(size)] = kInterestingBytes[rng->Below(sizeof(kInterestingBytes))];
      break;
    case 2:  // truncate
      input->resize(size == 0 ? 0 : rng->Below(size));
      break;
    case 3: {  // insert 1-8 random bytes
      std::string bytes(1 + rng->Below(8), '\0');
      for (char& c : bytes) c = static_cast<char>(rng->Next());
      input->insert(rng->Below(size + 1), bytes);
      break;
    }
    case 4:  // delete a range
      if (size > 0) {
        const size_t at = rng->Below(size);
        input->erase(at, 1 + rng->Below(std::min<size_t>(size - at, 64)));
      }
      break;
    case 5:  // insert a dictionary token
    case 6:  // overwrite with a dictionary token
      if (!dict.empty()) {
        const std::string& token = dict[rng->Below(dict.size())];
        const size_t at = rng->Below(size + 1);
        if (rng->Below(2) == 0 || at == size) {
          input->insert(at, token);
        } else {
          input->replace(at, std::min(token.size(), size - at), token);
        }
      }
      break;
    case 7:  // duplicate a range elsewhere (repeated fields, lines, records)
      if (size > 0) {
        const size_t from = rng->Below(size);
        const size_t length = 1 + rng->Below(std::min<size_t>(size - from, 256));
        input->insert(rng->Below(size + 1), input->substr(from, length));
      }
      break;
    case 8: {  // replace a run of digits (a number) with an edge value
      std::vector<size_t> starts;
      for (size_t i = 0; i < size; ++i) {
        const bool digit = (*input)[i] >= '0' && (*input)[i] <= '9';
        const bool after_digit = i > 0 && (*input)[i - 1] >= '0' && (*input)[i - 1] <= '9';
        if (digit && !after_digit) starts.push_back(i);
      }
      if (starts.empty()) break;
      const size_t at = starts[rng->Below(starts.size())];
      size_t end = at;
      while (end < size && (((*input)[end] >= '0' && (*input)[end] <= '9') || (*input)[end] == '.')) ++end;
      constexpr size_t kCount = sizeof(kInterestingValues) / sizeof(kInterestingValues[0]);
      input->replace(at, end - at, kInterestingValues[rng->Below(kCount)]);
      break;
    }
  }
  if (input->size() > max_len) input->resize(max_len);
}

// Mutant `index` of `seed`: one to four mutations stacked, from a generator keyed by all three names.
std::string Mutant(const std::string& seed, const std::vector<std::string>& dict, size_t max_len, uint64_t key) {
  Rng rng(key);
  std::string input = seed;
  const size_t count = 1 + rng.Below(4);
  for (size_t i = 0; i < count; ++i) MutateOnce(dict, max_len, &rng, &input);
  return input;
}

[[noreturn]] void Refuse(const std::string& what) {
  std::fprintf(stderr, "fuzz_driver: %s\n", what.c_str());
  std::exit(2);
}

bool ReadFile(const std::string& file, std::string* contents) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return !in.bad();
}

// The tokens of a libFuzzer dictionary: one quoted value per line (NAME="VALUE" or "VALUE"), with \\, \"
// and \xNN escapes; '#' starts a comment line.
std::vector<std::string> ReadDictionary(const std::string& file) {
  std::string text;
  if (!ReadFile(file, &text)) Refuse("cannot read the dictionary " + file);
  std::vector<std::string> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const size_t open = line.find('"');
    const size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == absl::string_view::npos) continue;
    if (close == open) Refuse(file + ":" + std::to_string(line_number) + ": expected a quoted value");
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] != '\\' || i + 1 >= close) {
        token.push_back(line[i]);
      } else if (line[i + 1] == 'x' && i + 3 < close) {
        int value = 0;
        if (!absl::SimpleHexAtoi(line.substr(i + 2, 2), &value)) {
          Refuse(file + ":" + std::to_string(line_number) + ": expected two hex digits after \\x");
        }
        token.push_back(static_cast<char>(value));
        i += 3;
      } else {
        token.push_back(line[++i]);
      }
    }
    tokens.push_back(token);
  }
  if (tokens.empty()) Refuse("the dictionary " + file + " has no tokens");
  return tokens;
}

struct TargetSpec {
  std::string name;
  size_t max_len = 0;
  std::string dict;
  std::vector<std::string> seeds;
};

TargetSpec ParseSpec(absl::string_view text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '|');
  TargetSpec spec;
  if (parts.size() != 3 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &spec.max_len) || spec.max_len == 0) {
    Refuse("expected TARGET|MAX_LEN|DICT (MAX_LEN a positive integer, DICT a file or empty), got '" +
           std::string(text) + "'");
  }
  spec.name = parts[0];
  spec.dict = parts[2];
  return spec;
}

// A seed cut to max_len, at the last line end before it where there is one.
std::string CutSeed(std::string seed, size_t max_len) {
  if (seed.size() <= max_len) return seed;
  const size_t line_end = seed.rfind('\n', max_len - 1);
  seed.resize(line_end == std::string::npos ? max_len : line_end + 1);
  return seed;
}

struct Totals {
  int64_t inputs = 0;
  int64_t unchanged = 0;  // mutants equal to their seed (a check that the mutator mutates)
};

void RunInput(const std::string& input, const std::string& name, const std::string& crash_file, int input_seconds) {
  std::snprintf(current_name, sizeof(current_name), "%s", name.c_str());
  std::snprintf(crash_path, sizeof(crash_path), "%s", crash_file.c_str());
  current_data = reinterpret_cast<const uint8_t*>(input.data());
  current_size = input.size();
  alarm(static_cast<unsigned>(input_seconds));
  FuzzOneInput(current_data, current_size);
  alarm(0);
  current_data = nullptr;
}

Totals RunTarget(const TargetSpec& spec, const std::string& made_dir, const std::string& tmp_dir,
                 const std::string& out_dir, const std::string& replay_trace, int mutants, int input_seconds) {
  InitFuzzTarget(spec.name, tmp_dir, replay_trace);
  const std::vector<std::string> dict =
      spec.dict.empty() ? std::vector<std::string>() : ReadDictionary(spec.dict);
  std::string file_name = spec.name;
  for (char& c : file_name) {
    if (c == ':' || c == '/') c = '_';
  }
  Totals totals;
  for (size_t s = 0; s < spec.seeds.size(); ++s) {
    const std::string& seed_name = spec.seeds[s];
    const std::string file = seed_name.rfind("made/", 0) == 0 ? made_dir + "/" + seed_name.substr(5) : seed_name;
    std::string seed;
    if (!ReadFile(file, &seed) || seed.empty()) Refuse(spec.name + ": the seed " + file + " is missing or empty");
    seed = CutSeed(std::move(seed), spec.max_len);
    const std::string where = spec.name + " seed " + std::to_string(s) + " (" + seed_name + ")";
    const std::string crash = out_dir + "/crash-" + file_name + "-" + std::to_string(s);
    RunInput(seed, where, crash + "-seed", input_seconds);
    ++totals.inputs;
    const uint64_t seed_key = Mix64(NameHash(spec.name) ^ Mix64(s));
    for (int k = 0; k < mutants; ++k) {
      const std::string input = Mutant(seed, dict, spec.max_len, Mix64(seed_key + static_cast<uint64_t>(k)));
      if (input == seed) ++totals.unchanged;
      RunInput(input, where + " mutant " + std::to_string(k), crash + "-" + std::to_string(k), input_seconds);
      ++totals.inputs;
    }
  }
  return totals;
}

int Main(int argc, char** argv) {
  int mutants = 100;
  int input_seconds = 20;
  std::string mooncake_seed, replay_trace;
  std::vector<TargetSpec> specs;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg.rfind("--mutants=", 0) == 0) {
      if (!absl::SimpleAtoi(arg.substr(10), &mutants) || mutants < 0) Refuse("--mutants must be a count");
    } else if (arg.rfind("--input_seconds=", 0) == 0) {
      if (!absl::SimpleAtoi(arg.substr(16), &input_seconds) || input_seconds < 1) {
        Refuse("--input_seconds must be a positive integer");
      }
    } else if (arg.rfind("--mooncake_seed=", 0) == 0) {
      mooncake_seed = std::string(arg.substr(16));
    } else if (arg.rfind("--replay_trace=", 0) == 0) {
      replay_trace = std::string(arg.substr(15));
    } else if (arg.rfind("--", 0) == 0) {
      Refuse("unknown flag " + std::string(arg));
    } else if (arg.find('|') != absl::string_view::npos) {
      specs.push_back(ParseSpec(arg));
    } else if (specs.empty()) {
      Refuse("a seed before the first TARGET|MAX_LEN|DICT: " + std::string(arg));
    } else {
      specs.back().seeds.push_back(std::string(arg));
    }
  }
  if (specs.empty()) Refuse("no TARGET|MAX_LEN|DICT given");
  for (const TargetSpec& spec : specs) {
    if (spec.seeds.empty()) Refuse(spec.name + ": no seeds given");
  }
  if (mooncake_seed.empty()) Refuse("--mooncake_seed is required (the JSONL the made seeds are converted from)");
  // The targets given are exactly the harness's (fuzz/BUILD's _TARGETS against FuzzTargetNames), in any
  // order: a target added to the harness without seeds here, or a name it does not know, is refused.
  std::vector<std::string> given, known = FuzzTargetNames();
  for (const TargetSpec& spec : specs) given.push_back(spec.name);
  std::sort(given.begin(), given.end());
  std::sort(known.begin(), known.end());
  if (given != known) {
    Refuse("the targets given (" + absl::StrJoin(given, ", ") + ") are not the harness's (" +
           absl::StrJoin(known, ", ") + "): fuzz/BUILD's _TARGETS must list each target of FuzzTargetNames once");
  }

  const char* tmp = std::getenv("TEST_TMPDIR");
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  const std::string tmp_dir = tmp != nullptr ? tmp : "/tmp";
  const std::string out_dir = outputs != nullptr ? outputs : tmp_dir;
  const std::string made_dir = tmp_dir + "/made_seeds." + std::to_string(getpid());
  if (mkdir(made_dir.c_str(), 0755) != 0) Refuse("cannot create " + made_dir);
  MakeFuzzSeeds(made_dir, mooncake_seed);

  __sanitizer_set_death_callback(OnDeath);
  ::signal(SIGABRT, OnSignal);
  ::signal(SIGALRM, OnSignal);

  // Bazel's test sharding: this shard's specs.
  int shards = 1, shard = 0;
  if (const char* total = std::getenv("TEST_TOTAL_SHARDS")) {
    const char* index = std::getenv("TEST_SHARD_INDEX");
    if (!absl::SimpleAtoi(total, &shards) || index == nullptr || !absl::SimpleAtoi(index, &shard) || shards < 1) {
      Refuse("bad TEST_TOTAL_SHARDS / TEST_SHARD_INDEX");
    }
    if (const char* status = std::getenv("TEST_SHARD_STATUS_FILE")) std::ofstream touch(status);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (static_cast<int>(i % shards) != shard) continue;
    const auto start = std::chrono::steady_clock::now();
    const Totals totals = RunTarget(specs[i], made_dir, tmp_dir, out_dir, replay_trace, mutants, input_seconds);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %lld inputs (%zu seeds, %d mutants each) in %.1f s, no finding\n", specs[i].name.c_str(),
                static_cast<long long>(totals.inputs), specs[i].seeds.size(), mutants, seconds);
    std::fflush(stdout);
    // A mutator that mostly returns its seed would make this run a seed replay; refuse that.
    const int64_t mutated = totals.inputs - static_cast<int64_t>(specs[i].seeds.size());
    if (mutated > 0 && totals.unchanged * 10 > mutated) {
      std::fprintf(stderr, "fuzz_driver: %s: %lld of %lld mutants equal their seed\n", specs[i].name.c_str(),
                   static_cast<long long>(totals.unchanged), static_cast<long long>(mutated));
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) { return kvsim::Main(argc, argv); }
