#include "util/table.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(TableTest, CsvJsonAndText) {
  Table t({"name", "ratio"}, {false, true});
  t.AddRow({"lru", "0.5"});
  t.AddRow({"a,\"b\"", "1"});
  EXPECT_EQ(t.ToCsv(), "name,ratio\nlru,0.5\n\"a,\"\"b\"\"\",1\n");
  EXPECT_EQ(t.ToJson(),
            "[\n  {\n    \"name\": \"lru\",\n    \"ratio\": 0.5\n  },\n  {\n    \"name\": \"a,\\\"b\\\"\",\n"
            "    \"ratio\": 1\n  }\n]\n");
  // Widths: 5 (a,"b") and 5 (ratio); two spaces between columns; numbers right-aligned.
  EXPECT_EQ(t.ToText(), "name   ratio\nlru      0.5\na,\"b\"      1\n");
}

TEST(TableTest, TextRoundsNumbersToSignificantDigitsCsvKeepsThem) {
  Table t({"policy", "hits", "hit_ratio", "note"}, {false, true, true, false});
  t.AddRow({"lru", "123456", "0.3784512345", "0.123456"});
  t.AddRow({"fifo", "7", "1.23456e-05", "x"});
  t.AddRow({"sieve", "", "12345.678", "y"});
  // Numeric non-integers only: 0.37845 -> 0.3785, 1.23456e-05 -> 1.235e-05, >= 10^4 without a fraction;
  // the integer 123456, the empty cell and the text column stay as they are.
  EXPECT_EQ(t.ToText(4),
            "policy    hits  hit_ratio  note\n"
            "lru     123456     0.3785  0.123456\n"
            "fifo         7  1.235e-05  x\n"
            "sieve               12346  y\n");
  EXPECT_EQ(t.ToCsv(),
            "policy,hits,hit_ratio,note\nlru,123456,0.3784512345,0.123456\nfifo,7,1.23456e-05,x\n"
            "sieve,,12345.678,y\n");
  EXPECT_EQ(RoundForReading("0.99996", 4), "1");
  EXPECT_EQ(RoundForReading("0.5", 4), "0.5");
  EXPECT_EQ(RoundForReading("nan", 4), "nan");
}

TEST(TableTest, MissingNumbersAreNullInJson) {
  Table t({"policy", "capacity_blocks", "heldout_error"}, {false, true, true});
  t.AddRow({"lru", "100", ""});
  t.AddRow({"fifo", "200", "nan"});
  // An empty numeric cell is a value that does not exist: null, not the string "".
  EXPECT_EQ(t.ToJson(),
            "[\n  {\n    \"policy\": \"lru\",\n    \"capacity_blocks\": 100,\n    \"heldout_error\": null\n  },\n"
            "  {\n    \"policy\": \"fifo\",\n    \"capacity_blocks\": 200,\n    \"heldout_error\": null\n  }\n]\n");
}

TEST(TableDeathTest, ColumnNamedTwiceIsRefused) {
  EXPECT_DEATH(Table({"policy", "hits", "policy"}, {false, true, false}), "column 'policy' twice");
}

TEST(TableTest, FormatDoubleRoundTrips) {
  EXPECT_EQ(FormatDouble(0.5), "0.5");
  EXPECT_EQ(FormatDouble(0), "0");
  EXPECT_EQ(FormatDouble(1.0 / 3), "0.3333333333333333");  // Python repr(1/3)
  EXPECT_EQ(std::stod(FormatDouble(0.1 + 0.2)), 0.1 + 0.2);
}

}  // namespace
}  // namespace kvsim
