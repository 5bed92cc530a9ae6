#include "sim/quality/quality_report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "traces/attention/synthetic_trace.h"
#include "util/file.h"

namespace kvsim {
namespace {

QualityResults Results() {
  SyntheticTraceOptions o;
  o.num_layers = 2;
  o.num_kv_heads = 2;
  o.group_size = 2;
  o.head_dim = 40;
  o.prompt_len = 128;
  o.decode_steps = 4;
  SyntheticTrace t = GenerateSyntheticTrace(o);
  QualityOptions options;
  options.policies = {"h2o", "streaming_llm"};
  options.budget_tokens = {16, 64};
  options.budget_ratios = {0.5};
  auto evaluator = QualityEvaluator::Create(t.header, options);
  EXPECT_TRUE(evaluator.ok());
  EXPECT_TRUE((*evaluator)->AddSample(t.samples[0]).ok());
  return (*evaluator)->Finish();
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t count = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++count;
  return count;
}

TEST(QualityReportTest, TableLabelsSyntheticAndListsEveryPoint) {
  QualityResults r = Results();
  const std::string table = FormatQualityTable(r);
  EXPECT_NE(table.find("SYNTHETIC"), std::string::npos);
  // 3 policies (oracle_select added) x 3 budgets.
  EXPECT_EQ(r.points.size(), 9u);
  EXPECT_EQ(Count(table, "\nh2o "), 3u + 2u);  // 3 points + 2 area lines
  EXPECT_NE(table.find("0.5x"), std::string::npos);
}

TEST(QualityReportTest, CsvHasOneRowPerPointAndConsistentColumns) {
  QualityResults r = Results();
  for (const std::string& csv : {QualitySummaryCsv(r), QualityLayerCsv(r), QualityHeadCsv(r), QualityAreaCsv(r)}) {
    std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
    const size_t columns = Count(lines[0], ",");
    for (const std::string& line : lines) EXPECT_EQ(Count(line, ","), columns) << line;
  }
  EXPECT_EQ(Count(QualitySummaryCsv(r), "\n"), 1u + 9u);
  EXPECT_EQ(Count(QualityLayerCsv(r), "\n"), 1u + 9u * 2);     // 2 kept layers
  EXPECT_EQ(Count(QualityHeadCsv(r), "\n"), 1u + 9u * 2 * 2);  // 2 layers x 2 KV heads
  EXPECT_EQ(Count(QualitySummaryCsv(r), "\nsynthetic,"), 9u);
}

TEST(QualityReportTest, JsonParsesAndMatchesResults) {
  QualityResults r = Results();
  r.areas[0].error_vs_oracle = std::numeric_limits<double>::quiet_NaN();  // written as null
  const std::string json = QualityJson(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(simdjson::padded_string(json)).get(doc), simdjson::SUCCESS) << json;
  bool synthetic = false;
  ASSERT_EQ(doc["synthetic"].get(synthetic), simdjson::SUCCESS);
  EXPECT_TRUE(synthetic);
  simdjson::dom::array points;
  ASSERT_EQ(doc["points"].get(points), simdjson::SUCCESS);
  EXPECT_EQ(points.size(), 9u);
  double recall = -1;
  ASSERT_EQ(points.at(0)["recall"]["mean"].get(recall), simdjson::SUCCESS);
  EXPECT_NEAR(recall, r.points[0].recall.mean, 1e-6);
  EXPECT_TRUE(doc["areas"].at(0)["error_vs_oracle"].is_null());
}

// The CSV's error_p90 (the error's bad tail is high) is the JSON's error.p90, not error.p10.
TEST(QualityReportTest, JsonErrorTailKeyMatchesTheCsvColumn) {
  QualityResults r = Results();
  r.points[0].error.p10 = 0.375;  // the bad-tail value of the error
  r.points[0].recall.p10 = 0.625;
  const std::string json = QualityJson(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(simdjson::padded_string(json)).get(doc), simdjson::SUCCESS) << json;
  double error_p90 = -1, recall_p10 = -1;
  ASSERT_EQ(doc["points"].at(0)["error"]["p90"].get(error_p90), simdjson::SUCCESS) << json;
  EXPECT_EQ(error_p90, 0.375);
  EXPECT_EQ(doc["points"].at(0)["error"]["p10"].error(), simdjson::NO_SUCH_FIELD);
  ASSERT_EQ(doc["points"].at(0)["recall"]["p10"].get(recall_p10), simdjson::SUCCESS);
  EXPECT_EQ(recall_p10, 0.625);
  const std::string csv = QualitySummaryCsv(r);
  EXPECT_NE(csv.find(",error_p90,"), std::string::npos);
  EXPECT_NE(csv.find(",0.375000,"), std::string::npos) << csv;
}

TEST(QualityReportTest, SvgHasTwoPanelsPerAxisAndALinePerPolicy) {
  QualityResults r = Results();
  const std::string svg = QualitySvg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Axes: tokens and ratio; per axis a recall and an error panel; per panel one line per policy (3).
  EXPECT_EQ(Count(svg, "<g class=\"series\">"), 2u * 2u * 3u);
  EXPECT_EQ(Count(svg, "[synthetic]"), 4u);
  EXPECT_EQ(Count(svg, "<g"), Count(svg, "</g>"));
  EXPECT_EQ(Count(svg, "<svg"), 1u + 4u);  // the page and its four panels (util/svg_plot.h)
}

TEST(QualityReportTest, WritesEveryFileDeterministically) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/quality_report_", getpid());
  ASSERT_TRUE(WriteQualityReports(Results(), dir + "/a").ok());
  ASSERT_TRUE(WriteQualityReports(Results(), dir + "/b").ok());
  for (const char* name : {"summary.csv", "per_layer.csv", "per_head.csv", "areas.csv", "results.json", "curves.svg"}) {
    auto a = ReadFile(dir + "/a/" + name);
    auto b = ReadFile(dir + "/b/" + name);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_FALSE(a->empty()) << name;
    EXPECT_EQ(*a, *b) << name;
  }
}

}  // namespace
}  // namespace kvsim
