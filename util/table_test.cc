#include "util/table.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(TableTest, CsvJsonAndText) {
  Table t({"name", "ratio"}, {false, true});
  t.AddRow({"lru", "0.5"});
  t.AddRow({"a,\"b\"", "1"});
  EXPECT_EQ(t.ToCsv(), "name,ratio\nlru,0.5\n\"a,\"\"b\"\"\",1\n");
  EXPECT_EQ(t.ToJson(), "[\n {\"name\": \"lru\", \"ratio\": 0.5},\n {\"name\": \"a,\\\"b\\\"\", \"ratio\": 1}\n]\n");
  // Widths: 5 (a,"b") and 5 (ratio); two spaces between columns; numbers right-aligned.
  EXPECT_EQ(t.ToText(), "name   ratio\nlru      0.5\na,\"b\"      1\n");
}

TEST(TableTest, FormatDoubleRoundTrips) {
  EXPECT_EQ(FormatDouble(0.5), "0.5");
  EXPECT_EQ(FormatDouble(0), "0");
  EXPECT_EQ(FormatDouble(1.0 / 3), "0.3333333333333333");  // Python repr(1/3)
  EXPECT_EQ(std::stod(FormatDouble(0.1 + 0.2)), 0.1 + 0.2);
}

}  // namespace
}  // namespace kvsim
