// End to end: `kvsim synth_attention` writes a trace, `kvsim quality` evaluates it, through the same
// dispatcher the binary uses.
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/quality/quality_evaluator.h"
#include "sim/quality/quality_run.h"
#include "tools/command.h"
#include "util/file.h"

namespace kvsim {

namespace {

// absl flags keep their values from one dispatch to the next in a process: every call states the flags
// it relies on, with the defaults spelled out.
int RunCommand(std::vector<std::string> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "kvsim");
  if (args[1] == "quality") {
    for (const char* flag : {"--trace=", "--out=", "--json=false"}) {
      bool given = false;
      for (const std::string& a : args) given = given || a.rfind(std::string(flag).substr(0, 6), 0) == 0;
      if (!given) args.push_back(flag);
    }
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream o, e;
  const int code = RunKvsim(static_cast<int>(argv.size()), argv.data(), o, e);
  *out = o.str();
  *err = e.str();
  return code;
}

std::string Dir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp ? tmp : "/tmp", "/quality_command_", getpid());
}

TEST(QualityBudgetsTest, TokensRatiosAndPercentages) {
  QualityOptions o;
  ASSERT_TRUE(ParseQualityBudgets("64, 256,0.25,10%", &o).ok());
  EXPECT_EQ(o.budget_tokens, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(o.budget_ratios, (std::vector<double>{0.25, 0.1}));
  QualityOptions bad;
  absl::Status s = ParseQualityBudgets("64,abc", &bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'abc'"), std::string::npos);
  QualityOptions fresh;
  EXPECT_NE(ParseQualityBudgets("0", &fresh).message().find("0 tokens: must be in [1, 2147483647]"), std::string::npos);
  // Beyond int32 positions, and beyond int64: a token count out of range, not a ratio.
  EXPECT_NE(ParseQualityBudgets("2147483648", &fresh).message().find("2147483648 tokens: must be in"),
            std::string::npos);
  EXPECT_NE(ParseQualityBudgets("99999999999999999999", &fresh).message().find("tokens: must be in"),
            std::string::npos);
  EXPECT_NE(ParseQualityBudgets("150%", &fresh).message().find("(0, 1]"), std::string::npos);
  EXPECT_NE(ParseQualityBudgets("32,", &fresh).message().find("empty entry in '32,'"), std::string::npos);
  QualityOptions empty;
  EXPECT_NE(ParseQualityBudgets(" ", &empty).message().find("required"), std::string::npos);
  EXPECT_TRUE(fresh.budget_tokens.empty() && fresh.budget_ratios.empty());
}

TEST(QualityCommandTest, SynthesiseThenEvaluate) {
  const std::string dir = Dir();
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string trace = dir + "/t.kvat";
  std::string out, err;
  ASSERT_EQ(RunCommand({"synth_attention", "--out=" + trace, "--synth_prompt_len=256", "--synth_decode_steps=4",
                        "--synth_layers=1", "--synth_kv_heads=2", "--synth_zstd_level=3"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("wrote synthetic attention trace"), std::string::npos);
  ASSERT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=h2o,snapkv,kivi4+h2o", "--budgets=32,0.5",
                        "--out=" + dir + "/results"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("SYNTHETIC"), std::string::npos);
  EXPECT_NE(out.find("kivi4+h2o"), std::string::npos);
  EXPECT_NE(out.find("oracle_select"), std::string::npos);
  for (const char* name : {"summary.csv", "per_layer.csv", "per_head.csv", "areas.csv", "results.json", "curves.svg"}) {
    EXPECT_TRUE(ReadFile(dir + "/results/" + name).ok()) << name;
  }
  // --json prints the JSON document instead of the table.
  ASSERT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=tova", "--budgets=16", "--json"}, &out, &err), 0);
  EXPECT_EQ(out.rfind("{", 0), 0u);
  EXPECT_NE(out.find("\"synthetic\": true"), std::string::npos);
}

TEST(QualityCommandTest, ErrorsAreUsageErrors) {
  const std::string dir = Dir() + "_err";
  ASSERT_TRUE(MakeDirectories(dir).ok());
  std::string out, err;
  EXPECT_EQ(RunCommand({"quality", "--policies=h2o", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("--trace"), std::string::npos) << err;
  const std::string trace = dir + "/t.kvat";
  ASSERT_EQ(RunCommand({"synth_attention", "--out=" + trace, "--synth_prompt_len=64", "--synth_decode_steps=2",
                        "--synth_layers=1", "--synth_kv_heads=1"},
                       &out, &err),
            0);
  EXPECT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=nope", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("unknown token policy 'nope'"), std::string::npos) << err;
  EXPECT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=h2o,,snapkv", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("--policies: empty entry in 'h2o,,snapkv'"), std::string::npos) << err;
  EXPECT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=h2o,h2o", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("policy 'h2o' is given twice"), std::string::npos) << err;
  // A results file that cannot be written (a directory in its place): no results file is left at all.
  ASSERT_TRUE(MakeDirectories(dir + "/blocked/curves.svg").ok());
  EXPECT_NE(RunCommand({"quality", "--trace=" + trace, "--policies=h2o", "--budgets=8", "--out=" + dir + "/blocked"},
                       &out, &err),
            0);
  EXPECT_NE(err.find("curves.svg: it exists and is not a file"), std::string::npos) << err;
  EXPECT_FALSE(ReadFile(dir + "/blocked/summary.csv").ok());
  // A trace without decode steps has nothing to measure.
  const std::string no_steps = dir + "/no_steps.kvat";
  ASSERT_EQ(RunCommand({"synth_attention", "--out=" + no_steps, "--synth_prompt_len=64", "--synth_decode_steps=0",
                        "--synth_layers=1", "--synth_kv_heads=1"},
                       &out, &err),
            0)
      << err;
  EXPECT_EQ(RunCommand({"quality", "--trace=" + no_steps, "--policies=h2o", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("have no decode steps: nothing to measure"), std::string::npos) << err;
  // Sizes that cannot be generated in memory are refused up front.
  EXPECT_EQ(RunCommand({"synth_attention", "--out=" + dir + "/huge.kvat", "--synth_prompt_len=4611686018427387904"},
                       &out, &err),
            2);
  EXPECT_NE(err.find("tokens: at most 16777216 per sample"), std::string::npos) << err;
  EXPECT_EQ(RunCommand({"synth_attention", "--out=" + dir + "/huge.kvat", "--synth_prompt_len=64",
                        "--synth_layers=2147483647"},
                       &out, &err),
            2);
  EXPECT_NE(err.find("GiB of memory to generate"), std::string::npos) << err;
  EXPECT_FALSE(ReadFile(dir + "/huge.kvat").ok());
  // A truncated trace is refused with the record that is cut.
  std::string bytes = *ReadFile(trace);
  ASSERT_TRUE(WriteFileAtomically(trace, bytes.substr(0, bytes.size() - 10)).ok());
  EXPECT_EQ(RunCommand({"quality", "--trace=" + trace, "--policies=h2o", "--budgets=8"}, &out, &err), 2);
  EXPECT_NE(err.find("record"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

}  // namespace
}  // namespace kvsim
