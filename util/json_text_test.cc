#include "util/json_text.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(JsonTextTest, QuotesAndEscapesByHand) {
  EXPECT_EQ(JsonQuote("snapkv"), "\"snapkv\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote(std::string("x\ny\x01", 4)), "\"x\\u000ay\\u0001\"");
}

TEST(JsonTextTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // Latin-1 "caf\xe9" (not UTF-8), a lone continuation byte, an overlong '/', a surrogate, and a
  // truncated 3-byte sequence each become \ufffd per byte; valid UTF-8 ("é", "€", U+1F600) is kept.
  EXPECT_EQ(JsonQuote("caf\xe9"), "\"caf\\ufffd\"");
  EXPECT_EQ(JsonQuote("a\x80"
                      "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xe2\x82"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

TEST(JsonTextTest, NumbersWithSixDecimalsAndNullForNonFinite) {
  EXPECT_EQ(JsonNumber(0.5), "0.500000");
  EXPECT_EQ(JsonNumber(-2), "-2.000000");
  EXPECT_EQ(JsonNumber(std::nan("")), "null");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
}

}  // namespace
}  // namespace kvsim
