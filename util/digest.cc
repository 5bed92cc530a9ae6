#include "util/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace kvsim {

struct Sha256::Context {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  context_->ctx = EVP_MD_CTX_new();
  KVSIM_CHECK(context_->ctx != nullptr && EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) == 1)
      << "SHA-256 unavailable in libcrypto";
}

Sha256::~Sha256() { EVP_MD_CTX_free(context_->ctx); }

void Sha256::Update(absl::string_view data) {
  KVSIM_CHECK(EVP_DigestUpdate(context_->ctx, data.data(), data.size()) == 1);
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  KVSIM_CHECK(EVP_DigestFinal_ex(context_->ctx, digest, &size) == 1);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string Sha256Hex(absl::string_view data) {
  Sha256 digest;
  digest.Update(data);
  return digest.HexDigest();
}

absl::StatusOr<std::string> FileSha256Hex(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  Sha256 digest;
  std::vector<char> buffer(1 << 20);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) digest.Update({buffer.data(), n});
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return digest.HexDigest();
}

}  // namespace kvsim
