// File: traces/native_format.h
//
// kvsim's native binary trace format ("native", files conventionally *.kvt): compact, self-describing,
// streamable. A reader holds one frame in memory at a time, so memory does not grow with the trace's
// length and a trace larger than memory replays.
//
// Layout (all integers little-endian):
//   Header, kNativeHeaderBytes = 4096 bytes:
//     [0, 8)    magic "KVSIMTRC"
//     [8, 12)   u32 version (kNativeVersion)
//     [12, 16)  u32 length L of the serialized proto::TraceHeader that follows
//     [16, 24)  u64 checksum of those L bytes
//     [24, 24+L) proto::TraceHeader: source format, block_tokens, record count, summary statistics
//     zero padding to 4096 (the writer rewrites the header in place when it closes)
//   Frames, header.num_frames of them, each independently decodable:
//     u32 magic "KVFR", u32 records in the frame, u32 encoded bytes, u32 stored bytes (= encoded, or the
//     zstd-compressed size), u64 index of the frame's first record, u64 checksum of the encoded bytes,
//     then the stored bytes. Writers store zstd literals raw (faster to decompress) unless
//     TraceWriterOptions::zstd_compress_literals; readers accept any zstd frame.
//   Records inside a frame, deltas restarting at each frame (so a frame decodes on its own):
//     varint flags (kHas* bits below)
//     zigzag varint request_id - (previous request_id + 1)
//     zigzag varint arrival_ns - previous arrival_ns
//     [session]  zigzag varint session_id - previous session_id (in the frame)
//     [parent]   zigzag varint request_id - parent_id
//     [turn]     zigzag varint turn
//     zigzag varint input_tokens, zigzag varint output_tokens
//     [type]     varint type
//     [hashes]   varint count, then runs of consecutive ids (each = the one before + 1) until count ids:
//                zigzag delta of the run's first id (against the previous record's first hash for the
//                first run, else against the id before), varint number of ids that follow in the run.
//                Sequentially numbered prefix ids (Mooncake) cost a few bytes per request.
//     [counts]   (with [hashes], only for variable blocks) one varint per hash: that block's tokens
//     [model]    varint length + bytes (only when the model differs from the previous record's)
//     [tools]    varint count, then per call: varint name length + bytes, zigzag varint duration_ns
// Every Request field round-trips exactly. Corruption (bad magic, checksum mismatch, a record running
// past its frame, a count disagreeing with the header) or truncation is a DataLoss status naming the
// file, the record index and the frame's byte offset.
//
// Example:
//   TraceWriterOptions options;
//   options.block_tokens = 512;
//   KVSIM_ASSIGN_OR_RETURN(auto writer, OpenNativeTraceWriter("t.kvt", options));
//   ... writer->Write(request) ...; KVSIM_RETURN_IF_ERROR(writer->Close());
//   KVSIM_ASSIGN_OR_RETURN(proto::TraceHeader header, ReadNativeHeader("t.kvt"));
//
// Thread-safety: readers and writers are used by one thread at a time.
#ifndef KVSIM_TRACES_NATIVE_FORMAT_H_
#define KVSIM_TRACES_NATIVE_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/trace.pb.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace kvsim {

inline constexpr char kNativeMagic[] = "KVSIMTRC";  // 8 bytes, no terminator in the file
inline constexpr uint32_t kNativeVersion = 1;
inline constexpr size_t kNativeHeaderBytes = 4096;
inline constexpr size_t kNativeFrameHeaderBytes = 32;
// Largest encoded frame a reader accepts (a corrupt length cannot make it allocate more).
inline constexpr uint32_t kNativeMaxFrameBytes = 256u << 20;
// Most block hashes one record may have (runs code many ids in few bytes, so the frame size is no
// bound; this caps what a damaged record can make a reader allocate).
inline constexpr uint64_t kNativeMaxHashesPerRecord = uint64_t{1} << 24;

// Record flag bits.
inline constexpr uint32_t kHasSession = 1u << 0;
inline constexpr uint32_t kHasParent = 1u << 1;
inline constexpr uint32_t kHasTurn = 1u << 2;
inline constexpr uint32_t kHasType = 1u << 3;
inline constexpr uint32_t kHasHashes = 1u << 4;  // block_tokens = header's; count follows
inline constexpr uint32_t kModelChanged = 1u << 5;
inline constexpr uint32_t kHasToolCalls = 1u << 6;
inline constexpr uint32_t kFailed = 1u << 7;
inline constexpr uint32_t kHasBlockTokenCounts = 1u << 8;  // with kHasHashes: one token count per hash
inline constexpr uint32_t kKnownFlags = (1u << 9) - 1;    // files written before bit 8 read unchanged

absl::StatusOr<std::unique_ptr<TraceReader>> OpenNativeTrace(const std::string& path, const TraceOptions& options);

// The header of a native trace (its summary statistics) without reading the records.
absl::StatusOr<proto::TraceHeader> ReadNativeHeader(const std::string& path);

// A writer of the native format. Write() fails (InvalidArgument) for a request whose block_tokens is
// neither 0 nor options.block_tokens, or whose block_tokens is 0 while it has hashes.
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenNativeTraceWriter(const std::string& path,
                                                                   const TraceWriterOptions& options);

bool LooksLikeNative(absl::string_view head);

// A 64-bit checksum of `data` (word-at-a-time multiply-xor; detects corruption, not an adversary).
uint64_t NativeChecksum(absl::string_view data);

}  // namespace kvsim

#endif  // KVSIM_TRACES_NATIVE_FORMAT_H_
