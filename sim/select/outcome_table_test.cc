#include "sim/select/outcome_table.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "sim/select/candidates.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

proto::SelectCandidateSet TwoCandidates() {
  proto::SelectCandidateSet set;
  EXPECT_TRUE(ParseTextProto("candidate { name: 'fp16' } "
                             "candidate { name: 'h2o-50%' token { policy: 'h2o' budget_ratio: 0.5 } }",
                             "test", &set)
                  .ok());
  return set;
}

std::string Write(const std::string& text) {
  static int count = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/t" + std::to_string(++count) + ".csv";
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

constexpr char kHeader[] = "prompt_id,config,correct,latency_ms,peak_memory_mb,input_tokens,output_tokens,entropy\n";

TEST(OutcomeTableTest, ReadsRowsInAnyOrderIntoPromptMajorCells) {
  const std::string path = Write(std::string(kHeader) +
                                 "p1,h2o-50%,0,10,100,500,20,0.5\n"
                                 "p1,fp16,1,12,110,500,20,0.5\n"
                                 "\"p,2\",fp16,1,30,200,2000,40,0.25\n"
                                 "\"p,2\",h2o-50%,1,20.5,150,2000,40,0.25\n");
  absl::StatusOr<OutcomeTable> table = ReadOutcomeTable(path, TwoCandidates());
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->num_prompts(), 2);
  EXPECT_EQ(table->prompt_ids[1], "p,2");
  EXPECT_EQ(table->feature_names, (std::vector<std::string>{"input_tokens", "output_tokens", "entropy"}));
  EXPECT_TRUE(table->at(0, 0).correct);
  EXPECT_FALSE(table->at(0, 1).correct);
  EXPECT_EQ(table->at(1, 1).latency_ms, 20.5);
  EXPECT_EQ(table->at(1, 1).peak_memory_mb, 150);
  EXPECT_EQ(table->at(1, 1).features, (std::vector<double>{2000, 40, 0.25}));
  // Written and read back: the same cells.
  const std::string again = Write(FormatOutcomeTableCsv(*table));
  absl::StatusOr<OutcomeTable> back = ReadOutcomeTable(again, TwoCandidates());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->prompt_ids, table->prompt_ids);
  for (size_t i = 0; i < table->cells.size(); ++i) {
    EXPECT_EQ(back->cells[i].correct, table->cells[i].correct);
    EXPECT_EQ(back->cells[i].latency_ms, table->cells[i].latency_ms);
    EXPECT_EQ(back->cells[i].features, table->cells[i].features);
  }
}

void ExpectRefused(const std::string& text, const std::string& what, OutcomeReadOptions options = {}) {
  const std::string path = Write(text);
  absl::StatusOr<OutcomeTable> table = ReadOutcomeTable(path, TwoCandidates(), options);
  ASSERT_FALSE(table.ok()) << text;
  EXPECT_NE(table.status().message().find(path + what), std::string::npos)
      << "want '" << path << what << "' in: " << table.status();
}

TEST(OutcomeTableTest, BadTablesAreRefusedNamingFileLineAndColumn) {
  const std::string ok_row = "p1,fp16,1,12,110,500,20,0.5\n";
  ExpectRefused(std::string(kHeader) + ok_row + "p1,h2o-25%,1,12,110,500,20,0.5\n",
                ":3:2 (config): unknown configuration 'h2o-25%'");
  ExpectRefused(std::string(kHeader) + ok_row + "p1,h2o-50%,1,1,1,500,20,0.5\n" + ok_row,
                ":4:2 (config): duplicated row for prompt 'p1' and configuration 'fp16' (first at line 2)");
  ExpectRefused("prompt_id,config,correct,peak_memory_mb,input_tokens,output_tokens\n" + ok_row,
                ":1: missing column 'latency_ms'");
  ExpectRefused("prompt_id,config,correct,latency_ms,peak_memory_mb,output_tokens\n",
                ":1: missing column 'input_tokens'");
  ExpectRefused(std::string(kHeader) + "p1,fp16,1,fast,110,500,20,0.5\n",
                ":2:4 (latency_ms): 'fast' is not a finite number");
  ExpectRefused(std::string(kHeader) + "p1,fp16,1,12,110,500,20,nan\n", ":2:8 (entropy): 'nan' is not a finite number");
  ExpectRefused(std::string(kHeader) + "p1,fp16,0.5,12,110,500,20,0.5\n", ":2:3 (correct): must be 0 or 1");
  ExpectRefused(std::string(kHeader) + "p1,fp16,1,-2,110,500,20,0.5\n", ":2:4 (latency_ms): must be >= 0");
  ExpectRefused(std::string(kHeader) + "p1,fp16,1,12,110,50.5,20,0.5\n", ":2:6 (input_tokens): must be an integer");
  ExpectRefused(std::string(kHeader) + ok_row, ": prompt 'p1' (line 2) has no row for configuration 'h2o-50%'");
  ExpectRefused(kHeader, ": no rows");
  ExpectRefused("prompt_id,config,correct,latency_ms,peak_memory_mb,input_tokens,output_tokens,config\n",
                ":1:8: duplicated column 'config' (first in column 2)");
  ExpectRefused(std::string(kHeader) + "p1,fp16,1,12\n", ":2");  // too few fields (the CSV reader's error)
}

TEST(OutcomeTableTest, CostColumnsAreOptionalWhenCostsComeFromTheModel) {
  const std::string text = "prompt_id,config,correct,input_tokens,output_tokens\np,fp16,1,10,2\np,h2o-50%,0,10,2\n";
  ExpectRefused(text, ":1: missing column 'latency_ms'");
  absl::StatusOr<OutcomeTable> table = ReadOutcomeTable(Write(text), TwoCandidates(), {.costs_from_model = true});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->feature_names.size(), 2);
}

}  // namespace
}  // namespace kvsim
