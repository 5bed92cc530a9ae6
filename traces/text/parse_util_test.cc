#include "traces/text/parse_util.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(ParseUtilTest, ParseInt64AcceptsSignsAndSpacesAndRejectsOverflowAndJunk) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64(" 42 ", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(ParseInt64("+9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_FALSE(ParseInt64("9223372036854775808", &v));  // INT64_MAX + 1
  EXPECT_FALSE(ParseInt64("", &v));
  EXPECT_FALSE(ParseInt64("-", &v));
  EXPECT_FALSE(ParseInt64("12a", &v));
  EXPECT_FALSE(ParseInt64("1.0", &v));
  EXPECT_FALSE(ParseInt64("1 2", &v));
}

TEST(ParseUtilTest, DecimalSecondsAreExactToTheNanosecond) {
  int64_t ns = 0;
  EXPECT_TRUE(ParseDecimalToNs("1.25", 1'000'000'000, &ns));
  EXPECT_EQ(ns, 1'250'000'000);
  EXPECT_TRUE(ParseDecimalToNs("0.1", 1'000'000'000, &ns));  // a double would give 100000000.000000006
  EXPECT_EQ(ns, 100'000'000);
  EXPECT_TRUE(ParseDecimalToNs("-2.5", 1'000'000'000, &ns));
  EXPECT_EQ(ns, -2'500'000'000);
  EXPECT_TRUE(ParseDecimalToNs("3.0000000019", 1'000'000'000, &ns));  // 10th digit truncated
  EXPECT_EQ(ns, 3'000'000'001);
  EXPECT_TRUE(ParseDecimalToNs("7", 1'000'000, &ns));  // 7 ms
  EXPECT_EQ(ns, 7'000'000);
  EXPECT_TRUE(ParseDecimalToNs(".5", 1'000'000, &ns));  // 0.5 ms
  EXPECT_EQ(ns, 500'000);
  EXPECT_FALSE(ParseDecimalToNs("1e3", 1'000'000'000, &ns));
  EXPECT_FALSE(ParseDecimalToNs(".", 1'000'000'000, &ns));
  EXPECT_FALSE(ParseDecimalToNs("1.2.3", 1'000'000'000, &ns));
  EXPECT_FALSE(ParseDecimalToNs("5000000000", 1'000'000'000, &ns));  // 5e18 ns > 2^62
}

TEST(ParseUtilTest, DaysFromCivilMatchesKnownDates) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(1970, 3, 1), 59);     // 31 + 28
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);  // 30 years of 365 + 7 leap days (72..96), + 31 + 29
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
}

TEST(ParseUtilTest, AzureTimestampsBecomeEpochNanoseconds) {
  int64_t ns = 0;
  // 1,700,000,000 s = 2023-11-14 22:13:20 UTC, so 2023-11-16 00:00:00 = 1,700,092,800 s (+25h46m40s),
  // and 18:17:03 that day = 1,700,092,800 + 65,823 s.
  ASSERT_TRUE(ParseDateTimeNs("2023-11-16 18:17:03.9799600", &ns));
  EXPECT_EQ(ns, 1'700'158'623'979'960'000);
  ASSERT_TRUE(ParseDateTimeNs("2023-11-16T18:17:03Z", &ns));
  EXPECT_EQ(ns, 1'700'158'623'000'000'000);
  // A +01:00 zone is one hour ahead of UTC: the same UTC instant is written one hour later.
  ASSERT_TRUE(ParseDateTimeNs("2023-11-16 19:17:03.5+01:00", &ns));
  EXPECT_EQ(ns, 1'700'158'623'500'000'000);
  ASSERT_TRUE(ParseDateTimeNs("2024-02-29 00:00:00.123456789", &ns));  // leap day, 9 digits
  EXPECT_EQ(ns % 1'000'000'000, 123'456'789);
}

TEST(ParseUtilTest, MalformedTimestampsAreRejected) {
  int64_t ns = 0;
  EXPECT_FALSE(ParseDateTimeNs("2023-11-16", &ns));
  EXPECT_FALSE(ParseDateTimeNs("2023-13-01 00:00:00", &ns));
  EXPECT_FALSE(ParseDateTimeNs("2023-02-29 00:00:00", &ns));  // not a leap year
  EXPECT_FALSE(ParseDateTimeNs("2023-11-16 24:00:00", &ns));
  EXPECT_FALSE(ParseDateTimeNs("2023-11-16 18:17:03.", &ns));
  EXPECT_FALSE(ParseDateTimeNs("2023-11-16 18:17:03 x", &ns));
  EXPECT_FALSE(ParseDateTimeNs("16/11/2023 18:17:03", &ns));
  EXPECT_FALSE(ParseDateTimeNs("9999-01-01 00:00:00", &ns));  // beyond kMaxAbsTimestampNs
}

}  // namespace
}  // namespace kvsim
