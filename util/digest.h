// File: util/digest.h
//
// Content digests (SHA-256 from OpenSSL's libcrypto, Debian's libssl-dev) for keying results by what
// determines them: a sweep point by its trace's bytes, resolved config, grid point and kvsim version.
// Stable across runs, machines and builds, unlike absl::Hash.
//
// Example:
//   Sha256 digest;
//   digest.Update("config ...");
//   std::string hex = digest.HexDigest();   // 64 lowercase hex digits
//   KVSIM_ASSIGN_OR_RETURN(std::string trace_hex, FileSha256Hex("trace.jsonl"));
//
// Thread-safety: a Sha256 is not shared; the functions are thread-safe.
#ifndef KVSIM_UTIL_DIGEST_H_
#define KVSIM_UTIL_DIGEST_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvsim {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view data);
  // The digest of everything updated so far; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// SHA-256 of `data`, as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

// SHA-256 of the bytes of the file at `path`, read in chunks (memory stays flat). NotFound or
// DataLoss naming the file when it cannot be read.
absl::StatusOr<std::string> FileSha256Hex(const std::string& path);

}  // namespace kvsim

#endif  // KVSIM_UTIL_DIGEST_H_
