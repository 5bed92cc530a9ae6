// The fuzz targets of fuzz/fuzzer.cc as functions, for the two drivers that run them: libFuzzer (the
// coverage-guided campaign, built by clang: fuzz/build_fuzzer.sh, tools/fuzz_campaign.sh) through
// LLVMFuzzerInitialize and LLVMFuzzerTestOneInput, and the test suite's deterministic driver
// (fuzz/fuzz_driver.cc, built by Bazel under ASan and UBSan). FuzzTargetNames lists the targets; both
// drivers take that list (the suite's refuses a target list that differs from it, the campaign asks the
// built fuzzer for it: KVSIM_FUZZ_LIST_TARGETS).
#ifndef KVSIM_FUZZ_FUZZER_H_
#define KVSIM_FUZZ_FUZZER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

// Every target, in a fixed order: trace:FORMAT for each registered trace format (by name), then config,
// engine, workload, kvat, calibration, vidur, outcomes.
std::vector<std::string> FuzzTargetNames();

// Makes `name` (one of FuzzTargetNames) the target of FuzzOneInput. Readers that take a path read inputs written to a file under `tmp_dir`. The engine
// target replays the first requests of `replay_trace_file` (read once, at the first engine selection).
// May be called again to switch targets. Aborts on an unknown target at the first input.
void InitFuzzTarget(const std::string& name, const std::string& tmp_dir, const std::string& replay_trace_file);

// Runs one input through the selected target. Returns when the input was read or refused; aborts (or a
// sanitizer reports) on a bug: a crash, a broken round trip, an accepted value refused later.
void FuzzOneInput(const uint8_t* data, size_t size);

// Writes seeds made by kvsim's own writers into `dir`: native traces converted from `mooncake_jsonl`
// (mooncake.zst.kvt, mooncake.raw.kvt), synthetic attention traces (synthetic0.kvat raw, synthetic3.kvat
// zstd) and an outcome table (synthetic.csv). Aborts on failure.
void MakeFuzzSeeds(const std::string& dir, const std::string& mooncake_jsonl);

}  // namespace kvsim

#endif  // KVSIM_FUZZ_FUZZER_H_
