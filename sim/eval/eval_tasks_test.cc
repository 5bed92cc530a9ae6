#include "sim/eval/eval_tasks.h"

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(EvalTasksTest, ParsesLines) {
  const std::string text =
      "{\"id\": \"a\", \"task\": \"niah_single\", \"context_tokens\": 4, \"prompt_ids\": [256, 1, 2, 3], "
      "\"answer_ids\": [51, 55], \"max_new_tokens\": 8, \"answer_position\": 2}\n"
      "\n"
      "{\"id\": \"b\", \"task\": \"perplexity\", \"context_tokens\": 2, \"prompt_ids\": [256, 9], "
      "\"answer_ids\": [7, 8, 9], \"extra\": 1}\n";
  auto tasks = ParseEvalTasks(text, "t.jsonl");
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 2u);
  EXPECT_EQ((*tasks)[0].prompt_ids, (std::vector<int32_t>{256, 1, 2, 3}));
  EXPECT_EQ((*tasks)[0].answer_position, 2);
  EXPECT_EQ((*tasks)[0].source, "t.jsonl:1");
  EXPECT_TRUE((*tasks)[1].is_perplexity());
  EXPECT_EQ((*tasks)[1].answer_position, -1);
  EXPECT_EQ((*tasks)[1].source, "t.jsonl:3");
  EXPECT_TRUE(ValidateTaskIds((*tasks)[0], 259).ok());
  EXPECT_NE(ValidateTaskIds((*tasks)[0], 256)
                .message()
                .find("t.jsonl:1: task 'a': prompt_ids[0] = 256 is outside the model's vocabulary [0, 256)"),
            std::string::npos);
}

TEST(EvalTasksTest, RefusesBadLines) {
  auto error = [](const std::string& text) { return std::string(ParseEvalTasks(text, "t.jsonl").status().message()); };
  const std::string good =
      "{\"id\": \"a\", \"task\": \"x\", \"context_tokens\": 1, \"prompt_ids\": [1], \"answer_ids\": [2], "
      "\"max_new_tokens\": 1}";
  EXPECT_TRUE(ParseEvalTasks(good, "t.jsonl").ok());
  EXPECT_NE(error(good + "\n{oops").find("t.jsonl:2: not valid JSON"), std::string::npos);
  EXPECT_NE(error(good + "\n" + good).find("t.jsonl:2: task id 'a' appears twice"), std::string::npos);
  EXPECT_NE(error("[1]").find("t.jsonl:1: expected a JSON object"), std::string::npos);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return error(s);
  };
  EXPECT_NE(with("\"prompt_ids\": [1]", "\"prompt_ids\": []").find("t.jsonl:1: \"prompt_ids\": empty"),
            std::string::npos);
  EXPECT_NE(with("[2]", "[2, -3]").find("\"answer_ids\"[1]: expected a token id"), std::string::npos);
  EXPECT_NE(with("\"max_new_tokens\": 1", "\"max_new_tokens\": 0").find("shorter than the 1 answer tokens"),
            std::string::npos);
  EXPECT_NE(with(", \"max_new_tokens\": 1", "").find("\"max_new_tokens\": missing"), std::string::npos);
  EXPECT_NE(with("\"id\": \"a\", ", "").find("\"id\": missing"), std::string::npos);
  EXPECT_NE(with("\"context_tokens\": 1", "\"context_tokens\": \"1\"").find("\"context_tokens\": expected"),
            std::string::npos);
  EXPECT_NE(error("\n\n").find("t.jsonl: no tasks"), std::string::npos);
  EXPECT_FALSE(ReadEvalTasks("/nonexistent/tasks.jsonl").ok());
}

TEST(EvalTasksTest, ExactMatch) {
  const std::vector<int32_t> eos = {257};
  EXPECT_TRUE(ExactMatch({51, 55}, {51, 55}, eos));
  EXPECT_TRUE(ExactMatch({51, 55, 9, 9}, {51, 55}, eos));  // anything after the answer
  EXPECT_TRUE(ExactMatch({51, 55, 257, 3}, {51, 55}, eos));
  EXPECT_FALSE(ExactMatch({9, 51, 55}, {51, 55}, eos));    // something before it
  EXPECT_FALSE(ExactMatch({51}, {51, 55}, eos));           // cut short
  EXPECT_FALSE(ExactMatch({51, 257, 55}, {51, 55}, eos));  // cut at EOS
  EXPECT_TRUE(ExactMatch({51, 257, 55}, {51, 257}, {}));   // no EOS id: nothing cut
}

}  // namespace
}  // namespace kvsim
