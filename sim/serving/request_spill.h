// File: sim/serving/request_spill.h
//
// RequestSpill: requests written once to an anonymous temporary file (std::tmpfile: removed by the system
// when closed, so no error path or crash leaves it behind) and read back, in any order and any number of
// times, by the offset Append returned. A closed-loop replay (sim/serving/engine.h) keeps its whole checked
// trace here instead of in memory: each request with its RequestState::unique_blocks and RequestState::kv.
//
// Encoding: per record its length, unique_blocks, RequestKv as its bytes (RequestKv::format kept as the
// pointer it is, valid while the assigner that made it lives, as in memory), then the request as
// AppendRequestBytes writes it (traces/request.h: every field, in the host's byte order). Memory: a 1 MiB write buffer. Disk: about 8 bytes per
// block hash plus 100 bytes per request.
//
// Example:
//   RequestSpill spill;
//   const int64_t at = spill.Append(request, unique, kv);
//   ...
//   KVSIM_RETURN_IF_ERROR(spill.Read(at, &state.request, &unique, &state.kv));
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_REQUEST_SPILL_H_
#define KVSIM_SIM_SERVING_REQUEST_SPILL_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "sim/serving/request_kv.h"
#include "traces/request.h"

namespace kvsim {

class RequestSpill {
 public:
  RequestSpill() = default;
  ~RequestSpill();
  RequestSpill(const RequestSpill&) = delete;
  RequestSpill& operator=(const RequestSpill&) = delete;

  // Appends a record; returns its offset. A failure to write is remembered and returned by Read.
  int64_t Append(const Request& request, bool unique_blocks, const RequestKv& kv);

  // The record at `offset` (as Append returned) into the outputs (their vectors' capacity reused).
  // Internal if the temporary file could not be created, written or read; InvalidArgument for an offset
  // Append did not return (past the end).
  absl::Status Read(int64_t offset, Request* request, bool* unique_blocks, RequestKv* kv);

  // Bytes appended so far.
  int64_t size() const { return size_; }

 private:
  // Writes the buffer to the file; sets failed_ on an error.
  void Flush();

  std::FILE* file_ = nullptr;
  std::string buffer_;       // appended, not yet written; starts at file offset size_ - buffer_.size()
  std::string read_buffer_;  // scratch for Read
  int64_t size_ = 0;
  bool failed_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_REQUEST_SPILL_H_
