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
