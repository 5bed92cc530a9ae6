// File: traces/test_util.h
//
// Test helpers for trace readers: write a small hand-written trace to a fresh temporary file, read a
// whole trace into memory, read back an exported oracleGeneral file. testonly.
//
// Example:
//   const std::string path = WriteTempFile("a.jsonl", "{\"timestamp\": 0, ...}\n");
//   absl::StatusOr<std::vector<Request>> requests = ReadAll(path, {});
#ifndef KVSIM_TRACES_TEST_UTIL_H_
#define KVSIM_TRACES_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/request.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Writes `contents` to a new file named `name` under the test's temporary directory; returns its path.
// Aborts the test binary (KVSIM_CHECK) if the file cannot be written.
std::string WriteTempFile(const std::string& name, const std::string& contents);

// Every request of the trace at `path` (OpenTrace with `options`), or the first error.
absl::StatusOr<std::vector<Request>> ReadAll(const std::string& path, const TraceOptions& options);

// Every request `reader` yields, or its error.
absl::StatusOr<std::vector<Request>> ReadAll(TraceReader& reader);

// "" if `a` and `b` agree in every field, else the first difference ("block_hashes[3]: 7 vs 8").
std::string RequestDifference(const Request& a, const Request& b);

// One record of libCacheSim's oracleGeneral binary, read back from its published description
// (oracleGeneralBin.h): packed 24-byte records, uint32 clock_time at offset 0, uint64 obj_id at 4, uint32
// obj_size at 12, int64 next_access_vtime at 16, little endian.
struct OracleRecord {
  uint32_t clock_time;
  uint64_t obj_id;
  uint32_t obj_size;
  int64_t next_access_vtime;
};

// The whole records of `bytes` (a trailing partial record is ignored), independently of kvsim's writer.
std::vector<OracleRecord> ReadOracleGeneral(const std::string& bytes);

// The runfiles path of a bundled trace, e.g. DataPath("mooncake_synthetic.jsonl").
std::string DataPath(const std::string& file);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TEST_UTIL_H_
