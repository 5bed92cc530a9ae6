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

TEST(JsonTextTest, NumbersWithSixDecimalsAndNullForNonFinite) {
  EXPECT_EQ(JsonNumber(0.5), "0.500000");
  EXPECT_EQ(JsonNumber(-2), "-2.000000");
  EXPECT_EQ(JsonNumber(std::nan("")), "null");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
}

}  // namespace
}  // namespace kvsim
