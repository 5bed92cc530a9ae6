#include "util/progress.h"

#include <sstream>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(FormatProgressLineTest, BarPercentRateEta) {
  // 450 of 1000 in 2 s: 9 of 20 cells, 45%, 225 rec/s, 550 left at 225/s = 2.44 s -> 0:02.
  EXPECT_EQ(FormatProgressLine("gen", 450, 1000, 2'000'000'000, "rec"),
            "gen [#########...........]  45% 225.0 rec/s ETA 0:02");
  // 1.2M/s with 14.4M left: 12 s.
  EXPECT_EQ(FormatProgressLine("replay", 1'200'000, 15'600'000, 1'000'000'000, "req"),
            "replay [#...................]   7% 1.2M req/s ETA 0:12");
  // Hours: 1 per second, 3723 left -> 1:02:03.
  EXPECT_EQ(FormatProgressLine("x", 1, 3724, 1'000'000'000, "t"), "x [....................]   0% 1.0 t/s ETA 1:02:03");
  EXPECT_EQ(FormatProgressLine("x", 0, 10, 0, "t"), "x [....................]   0% 0.0 t/s ETA ?");
  EXPECT_EQ(FormatProgressLine("x", 10, 10, 1'000'000'000, "t"), "x [####################] 100% 10.0 t/s ETA 0:00");
  // Unknown total: count and rate only.
  EXPECT_EQ(FormatProgressLine("mrc", 3000, 0, 1'000'000'000, "acc"), "mrc 3000 acc 3.0k acc/s");
}

TEST(ProgressTest, NothingWhenNotATerminal) {
  std::ostringstream out;
  int64_t now = 0;
  {
    Progress p("gen", 100, "rec", {.enabled = false, .out = &out, .now_ns = [&] { return now; }});
    for (int i = 0; i <= 100; ++i) {
      now += 1'000'000'000;
      p.Update(i);
    }
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressTest, RedrawsAreRateLimited) {
  std::ostringstream out;
  int64_t now = 0;
  Progress p("gen", 1000, "rec",
             {.enabled = true, .out = &out, .now_ns = [&] { return now; }, .min_redraw_ns = 100'000'000});
  // 1000 updates 1 ms apart = 1 s: the first draws, then one per 100 ms.
  for (int i = 1; i <= 1000; ++i) {
    now += 1'000'000;
    p.Update(i);
  }
  EXPECT_EQ(p.redraws(), 10);
  p.Finish();
  EXPECT_EQ(p.redraws(), 11);
  p.Finish();  // once only
  EXPECT_EQ(p.redraws(), 11);
  const std::string s = out.str();
  EXPECT_EQ(s.back(), '\n');
  EXPECT_NE(s.find("\rgen [####################] 100% 1.0k rec/s ETA 0:00\n"), std::string::npos) << s;
}

TEST(ProgressTest, CallbackTakesTheTotalWhenKnown) {
  std::ostringstream out;
  int64_t now = 0;
  Progress p("cache", 0, "req", {.enabled = true, .out = &out, .now_ns = [&] { return now; }, .min_redraw_ns = 0});
  auto callback = p.Callback();
  now = 1'000'000'000;
  callback(5, 0);  // total not known yet: count and rate
  now = 2'000'000'000;
  callback(10, 40);  // 10 of 40 at 5/s: 30 left, 6 s
  EXPECT_EQ(out.str(), "\rcache 5 req 5.0 req/s\rcache [#####...............]  25% 5.0 req/s ETA 0:06");
}

}  // namespace
}  // namespace kvsim
