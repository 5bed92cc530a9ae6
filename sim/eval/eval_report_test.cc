#include "sim/eval/eval_report.h"

#include "gtest/gtest.h"
#include "simdjson.h"

namespace kvsim {
namespace {

// Two policies at one budget over one family and a perplexity task, written by hand.
EvalResults Results() {
  EvalResults r;
  r.model = "m";
  r.num_tasks = 2;
  r.seed = 7;
  r.points = {{"full", "full", false, 64}, {"h2o", "evict", true, 0.25}};
  EvalGroup g;
  g.point = 1;
  g.task = "niah_single";
  g.context_tokens = 128;
  g.num_tasks = 4;
  g.num_correct = 3;
  g.accuracy = 0.75;
  g.needle_tasks = 4;
  g.needle_covered = 1;
  g.mean_tokens_read = 32;
  g.mean_budget_tokens = 32;
  r.groups.push_back(g);
  g.task = "perplexity";
  g.context_tokens = 100;
  g.nll_tokens = 10;
  g.mean_nll = 0.5;
  g.perplexity = 1.648721;
  r.groups.push_back(g);
  g.point = 0;
  g.task = "all";
  g.context_tokens = 0;
  g.accuracy = 1.0;
  r.groups.push_back(g);
  EvalRun run;
  run.task = 0;
  run.point = 1;
  run.budget_tokens = 32;
  run.correct = true;
  run.generated = {5, 6};
  run.scored_tokens = 2;
  r.runs.push_back(run);
  r.prefill_seconds = {0.5};
  return r;
}

TEST(EvalReportTest, CsvRows) {
  const std::string csv = EvalResultsCsv(Results());
  EXPECT_NE(csv.find("h2o,evict,0.25x,niah_single,128,4,3,0.750000,4,1,0,,,32.000000,32.000000\n"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("h2o,evict,0.25x,perplexity,100,4,3,,4,1,10,0.500000,1.648721,32.000000,32.000000\n"),
            std::string::npos)
      << csv;
  EvalTask task;
  task.id = "t,1";  // quoted
  task.task = "niah_single";
  task.context_tokens = 128;
  const std::string tasks = EvalTasksCsv(Results(), {task});
  EXPECT_NE(tasks.find("\"t,1\",niah_single,128,h2o,0.25x,32,1,,2,0,0.000000,5 6\n"), std::string::npos) << tasks;
  EXPECT_NE(EvalTimingCsv(Results()).find("(prefill),,1,0.500000,0.500000"), std::string::npos);
}

TEST(EvalReportTest, JsonParsesAndSvgHasEveryPanel) {
  const std::string json = EvalJson(Results());
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(json)).get(root), simdjson::SUCCESS) << json;
  EXPECT_EQ(int64_t(root["num_tasks"]), 2);
  EXPECT_EQ(int64_t(root["seed"]), 7);
  simdjson::dom::array points = root["points"];
  EXPECT_EQ(points.size(), 2u);
  simdjson::dom::array groups = points.at(1)["groups"];
  EXPECT_EQ(groups.size(), 2u);
  EXPECT_EQ(double(groups.at(0)["accuracy"]), 0.75);
  EXPECT_TRUE(groups.at(1)["accuracy"].is_null());
  const std::string svg = EvalSvg(Results());
  EXPECT_NE(svg.find("all exact-match tasks: accuracy"), std::string::npos);
  EXPECT_NE(svg.find("niah_single @ 128 tokens: accuracy"), std::string::npos);
  EXPECT_NE(svg.find("perplexity @ 100 tokens: mean NLL"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_NE(FormatEvalTable(Results()).find("(perplexity)"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
