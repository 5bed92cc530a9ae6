#include "traces/attention/crc32.h"

#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Bit-at-a-time reference straight from the definition (reflected polynomial 0xEDB88320).
uint32_t ReferenceCrc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

TEST(Crc32Test, StandardCheckValue) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // the catalogued check value of CRC-32/ISO-HDLC
  EXPECT_EQ(Crc32(""), 0u);
  EXPECT_EQ(Crc32("a"), 0xE8B7BE43u);  // zlib.crc32(b"a")
}

TEST(Crc32Test, MatchesBitwiseReferenceAtEveryLength) {
  std::string data;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(Crc32(data), ReferenceCrc32(data)) << "length " << i;
    data.push_back(static_cast<char>((i * 131 + 7) & 0xFF));
  }
}

TEST(Crc32Test, ExtendEqualsWhole) {
  const std::string data = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    EXPECT_EQ(Crc32Extend(Crc32(data.substr(0, cut)), data.substr(cut)), Crc32(data));
  }
  EXPECT_EQ(Crc32(data), 0x414FA339u);  // published CRC-32 of this pangram
}

}  // namespace
}  // namespace kvsim
