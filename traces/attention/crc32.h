// File: traces/attention/crc32.h
//
// CRC-32 as in zlib, PNG and gzip (reflected polynomial 0xEDB88320, initial value and final XOR
// 0xFFFFFFFF), so Python's zlib.crc32 gives the same checksums as this code. Attention traces store one
// per record. Table-driven, thread-safe.
//
// Example:
//   uint32_t crc = Crc32("123456789");          // 0xCBF43926, the standard check value
//   crc = Crc32Extend(Crc32("1234"), "56789");  // same value, computed in two pieces
#ifndef KVSIM_TRACES_ATTENTION_CRC32_H_
#define KVSIM_TRACES_ATTENTION_CRC32_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace kvsim {

// The CRC-32 of `data`.
uint32_t Crc32(absl::string_view data);

// The CRC-32 of the concatenation of the bytes whose CRC is `crc` and `data`.
uint32_t Crc32Extend(uint32_t crc, absl::string_view data);

}  // namespace kvsim

#endif  // KVSIM_TRACES_ATTENTION_CRC32_H_
