#include "util/svg_plot.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Hand-computed from Heckbert's rules: fraction f = x / 10^floor(log10 x); round: f < 1.5 -> 1, < 3 -> 2,
// < 7 -> 5, else 10; ceiling: f <= 1 -> 1, <= 2 -> 2, <= 5 -> 5, else 10.
TEST(NiceNumberTest, RoundsAndCeilsToOneTwoFive) {
  EXPECT_DOUBLE_EQ(NiceNumber(0.25, true), 0.2);    // f = 2.5 -> 2
  EXPECT_DOUBLE_EQ(NiceNumber(25, true), 20);       // f = 2.5 -> 2
  EXPECT_DOUBLE_EQ(NiceNumber(3.2, true), 5);       // f = 3.2 -> 5
  EXPECT_DOUBLE_EQ(NiceNumber(7.5, true), 10);      // f = 7.5 -> 10
  EXPECT_DOUBLE_EQ(NiceNumber(1.4, true), 1);       // f = 1.4 -> 1
  EXPECT_DOUBLE_EQ(NiceNumber(94, false), 100);     // f = 9.4 -> 10
  EXPECT_DOUBLE_EQ(NiceNumber(1.7, false), 2);      // f = 1.7 -> 2
  EXPECT_DOUBLE_EQ(NiceNumber(3000, false), 5000);  // f = 3 -> 5
}

TEST(LinearTicksTest, UnitInterval) {
  // range = nice(1) = 1; step = round(1 / 4 = 0.25) = 0.2; [0, 1] in steps of 0.2.
  const Ticks t = LinearTicks(0, 1, 5);
  EXPECT_DOUBLE_EQ(t.step, 0.2);
  EXPECT_DOUBLE_EQ(t.lo, 0);
  EXPECT_DOUBLE_EQ(t.hi, 1);
  ASSERT_EQ(t.values.size(), 6u);
  EXPECT_NEAR(t.values[3], 0.6, 1e-12);
}

TEST(LinearTicksTest, WidensToWholeSteps) {
  // range = nice(94) = 100; step = round(25) = 20; floor(3/20)*20 = 0, ceil(97/20)*20 = 100.
  const Ticks t = LinearTicks(3, 97, 5);
  EXPECT_DOUBLE_EQ(t.step, 20);
  EXPECT_THAT(t.values, ElementsAre(0, 20, 40, 60, 80, 100));
  // range = nice(9098800) = 1e7; step = round(2.5e6) = 2e6; [0, 1e7].
  const Ticks big = LinearTicks(1200, 9.1e6, 5);
  EXPECT_DOUBLE_EQ(big.step, 2e6);
  EXPECT_THAT(big.values, ElementsAre(0, 2e6, 4e6, 6e6, 8e6, 1e7));
  // Negative to positive: range = nice(3.5) = 5, step = round(1.25) = 1; [-2, 2].
  EXPECT_THAT(LinearTicks(-1.5, 2, 5).values, ElementsAre(-2, -1, 0, 1, 2));
}

TEST(LinearTicksTest, DegenerateRanges) {
  // One value: widened by 10% of it (4.5 .. 5.5): range = nice(1) = 1, step 0.2, [4.4, 5.6].
  const Ticks one = LinearTicks(5, 5, 5);
  EXPECT_DOUBLE_EQ(one.step, 0.2);
  EXPECT_NEAR(one.lo, 4.4, 1e-12);
  EXPECT_NEAR(one.hi, 5.6, 1e-12);
  // Zero: widened by 1 on each side: range = nice(2) = 2, step = round(0.5) = 0.5, [-1, 1].
  EXPECT_THAT(LinearTicks(0, 0, 5).values, ElementsAre(-1, -0.5, 0, 0.5, 1));
  // Non-finite bounds: the ticks of [0, 1].
  EXPECT_DOUBLE_EQ(LinearTicks(NAN, 3).hi, 1);
}

TEST(LogTicksTest, DecadesAndOneTwoFive) {
  // 3 .. 4000: decades 10^0 .. 10^4 (4 of them), powers of ten only.
  EXPECT_THAT(LogTicks(3, 4000).values, ElementsAre(1, 10, 100, 1000, 10000));
  // 3 .. 40: 10^0 .. 10^2 (2 decades): 1, 2, 5 per decade.
  EXPECT_THAT(LogTicks(3, 40).values, ElementsAre(1, 2, 5, 10, 20, 50, 100));
  // Exact powers stay the bounds; one value still spans a decade.
  const Ticks t = LogTicks(100, 100);
  EXPECT_DOUBLE_EQ(t.lo, 100);
  EXPECT_DOUBLE_EQ(t.hi, 1000);
}

TEST(FormatTickTest, DecimalsFromStepAndUnits) {
  EXPECT_EQ(FormatTick(0.4, 0.2), "0.4");
  EXPECT_EQ(FormatTick(0, 0.2), "0.0");
  EXPECT_EQ(FormatTick(40, 20), "40");
  EXPECT_EQ(FormatTick(0.05, 0.05), "0.05");
  EXPECT_EQ(FormatTick(1500, 500), "1500");
  EXPECT_EQ(FormatTick(4000, 2000), "4k");
  EXPECT_EQ(FormatTick(2500, 500 * 1), "2500");
  EXPECT_EQ(FormatTick(1.5e6, 5e5), "1500k");
  EXPECT_EQ(FormatTick(6e6, 2e6), "6M");
  EXPECT_EQ(FormatTick(3e9, 1e9), "3G");
  EXPECT_EQ(FormatTick(-1, 1), "-1");
  EXPECT_EQ(FormatTick(-1e-17, 0.5), "0.0");
  // Log ticks (step 0): the value's own magnitude picks the unit.
  EXPECT_EQ(FormatTick(5000, 0), "5k");
  EXPECT_EQ(FormatTick(0.02, 0), "0.02");
  EXPECT_EQ(FormatTick(1e7, 0), "10M");
}

TEST(ScaleTest, LinearAndLog) {
  const Scale lin{0, 10, 100, 200, false};
  EXPECT_DOUBLE_EQ(lin(0), 100);
  EXPECT_DOUBLE_EQ(lin(2.5), 125);
  const Scale up{0, 1, 300, 50, false};  // a y axis: larger values higher up
  EXPECT_DOUBLE_EQ(up(0.2), 250);
  const Scale log{1, 1000, 0, 300, true};
  EXPECT_DOUBLE_EQ(log(10), 100);
  EXPECT_DOUBLE_EQ(log(100), 200);
  EXPECT_DOUBLE_EQ(log(0), 0);  // non-positive values sit at the axis start
}

TEST(StyleTest, FirstFortySeriesAreDistinct) {
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < i; ++j) {
      const SeriesStyle a = StyleOf(i), b = StyleOf(j);
      EXPECT_FALSE(std::string(a.colour) == b.colour && std::string(a.dash) == b.dash) << i << " vs " << j;
    }
  }
  // Neighbours differ in both colour and dash.
  for (int i = 1; i < 40; ++i) {
    EXPECT_STRNE(StyleOf(i).colour, StyleOf(i - 1).colour);
    EXPECT_STRNE(StyleOf(i).dash, StyleOf(i - 1).dash);
  }
}

TEST(RenderLinePlotTest, HasIdLabelsTicksAndLegend) {
  LinePlotSpec spec;
  spec.id = "ttft-cdf";
  spec.title = "TTFT <CDF>";
  spec.x_label = "TTFT (ms)";
  spec.y_label = "fraction of requests";
  const std::string svg =
      RenderLinePlot(spec, {{.name = "a", .x = {0, 50, 100}, .y = {0, 0.5, 1}}, {.name = "b", .x = {NAN}, .y = {1}}});
  EXPECT_THAT(svg, HasSubstr("id=\"ttft-cdf\""));
  EXPECT_THAT(svg, HasSubstr("TTFT &lt;CDF&gt;"));
  EXPECT_THAT(svg, HasSubstr(">TTFT (ms)</text>"));
  EXPECT_THAT(svg, HasSubstr(">fraction of requests</text>"));
  EXPECT_THAT(svg, HasSubstr(">100</text>"));  // x ticks 0..100 step 20
  EXPECT_THAT(svg, HasSubstr(">0.8</text>"));  // y ticks 0..1 step 0.2
  EXPECT_THAT(svg, HasSubstr(">b (no data)</text>"));
  EXPECT_THAT(svg, HasSubstr("stroke-dasharray=\"6 3\""));  // the second series' legend stroke
}

TEST(RenderHeatMapTest, CellsAndMissingValues) {
  HeatMapSpec spec;
  spec.id = "h";
  spec.x_categories = {"1000", "2000"};
  spec.y_categories = {"lru"};
  spec.values = {{0.25, NAN}};
  const std::string svg = RenderHeatMap(spec);
  EXPECT_THAT(svg, HasSubstr(">0.25</text>"));
  EXPECT_THAT(svg, HasSubstr(">n/a</text>"));
  EXPECT_THAT(svg, HasSubstr(">lru</text>"));
}

}  // namespace
}  // namespace kvsim
