#include "util/digest.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Published SHA-256 test vectors (FIPS 180-2 appendix B.1 and the empty string).
TEST(DigestTest, MatchesPublishedVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;
  pieces.Update("a");
  pieces.Update("bc");
  EXPECT_EQ(pieces.HexDigest(), Sha256Hex("abc"));
}

TEST(DigestTest, FileDigestIsTheDigestOfItsBytes) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/digest_test.txt";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("abc", f);
  std::fclose(f);
  auto hex = FileSha256Hex(path);
  ASSERT_TRUE(hex.ok()) << hex.status();
  EXPECT_EQ(*hex, Sha256Hex("abc"));
  EXPECT_EQ(FileSha256Hex(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvsim
