// File: traces/peer_export.h
//
// Writers of the trace formats other simulators read, so a kvsim trace (any importable format) can be
// cross-checked in them. `kvsim import IN OUT --out_format=NAME` reaches them through
// OpenTraceWriter (traces/trace_io.h). Each file appears only when Close() succeeds (temporary file +
// rename).
//
//   vidur           Vidur's request-trace CSV (its trace-replay request generator; the same columns kvsim's
//                   "vidur" importer reads): a header `arrived_at,num_prefill_tokens,num_decode_tokens`,
//                   then one row per request; arrived_at in seconds with 9 decimals (exact to the ns).
//   mooncake        Mooncake JSONL: {"timestamp": ms, "input_length": N, "output_length": M, "hash_ids": [...]}
//                   with one id per 512-token block (ceil(N / 512)). timestamp = floor(arrival_ns / 1e6).
//                   Ids are re-blocked from the trace's own: with block size b (512 % b == 0, k = 512 / b),
//                   Mooncake block j covers the trace's blocks [j k, (j + 1) k) (fewer for the last), and
//                   its id is a function of exactly those ids: the trace's id itself when b = 512, else
//                   a sequential id (0, 1, ...) in order of the covered id sequence's first appearance, so
//                   two requests share Mooncake block j iff they share all the trace blocks it covers.
//                   A block size that does not divide 512 (or exceeds it) is refused at Open. A request
//                   without hashes (traces like Azure's) gets fresh sequential ids shared with no other.
//   oracle_general  libCacheSim's oracleGeneral binary: the accesses of kvsim's cache replay
//                   (sim/cache/cache_simulator.h: requests in trace order, each request's blocks one
//                   after another; requests without hashes get AssignFreshBlockHashes(
//                   fresh_block_tokens)), one 24-byte little-endian record each, packed:
//                     uint32 clock_time         arrival of the access's request, whole seconds
//                     uint64 obj_id             the block's id
//                     uint32 obj_size           the block size in tokens (uniform, as cache replay counts)
//                     int64  next_access_vtime  1-based index of the next access to the same block, or -1
//                   (libCacheSim's traceConv writes next_access_vtime the same way, counting from 1; its
//                   reader takes -1 as "never"). Run libCacheSim's cachesim with --ignore-obj-size 1 and
//                   the capacity in blocks. The accesses are held in memory (24 bytes each) until Close.
//
// Thread-safety: a writer is used by one thread at a time.
#ifndef KVSIM_TRACES_PEER_EXPORT_H_
#define KVSIM_TRACES_PEER_EXPORT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "traces/trace_writer.h"

namespace kvsim {

// Size of one oracleGeneral record in bytes.
inline constexpr int64_t kOracleGeneralRecordBytes = 24;
// Block size of Mooncake's hash ids in tokens.
inline constexpr int32_t kMooncakeExportBlockTokens = 512;

// `options.block_tokens`: the block size of the requests written (0 = no hashes). The mooncake writer
// refuses (InvalidArgument, with the reason) a block size that 512 is not a multiple of.
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenVidurTraceWriter(const std::string& path,
                                                                  const TraceWriterOptions& options);
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenMooncakeTraceWriter(const std::string& path,
                                                                     const TraceWriterOptions& options);
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenOracleGeneralTraceWriter(const std::string& path,
                                                                          const TraceWriterOptions& options);

}  // namespace kvsim

#endif  // KVSIM_TRACES_PEER_EXPORT_H_
