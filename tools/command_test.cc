#include "tools/command.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gtest/gtest.h"

ABSL_FLAG(int64_t, test_capacity_blocks, 100, "cache capacity in blocks");
ABSL_FLAG(bool, test_json, false, "print JSON");
ABSL_FLAG(std::string, test_other, "", "a flag no test command accepts");

namespace kvsim {
namespace {

struct Seen {
  std::vector<std::string> args;
  int64_t capacity_blocks = 0;
  bool json = false;
};
Seen seen;

absl::Status RunEcho(const std::vector<std::string>& args, std::ostream& out) {
  seen.args = args;
  seen.capacity_blocks = absl::GetFlag(FLAGS_test_capacity_blocks);
  seen.json = absl::GetFlag(FLAGS_test_json);
  out << "ran";
  return absl::OkStatus();
}

absl::Status RunFail(const std::vector<std::string>&, std::ostream&) {
  return absl::InvalidArgumentError("trace.jsonl:3: field input_length:\nexpected an integer");
}

absl::Status RunBug(const std::vector<std::string>&, std::ostream&) { return absl::InternalError("invariant broken"); }

KVSIM_REGISTER_COMMAND(echo, {.name = "echo",
                              .summary = "test command",
                              .usage = "kvsim echo ARGS",
                              .details = "",
                              .flags = {"test_capacity_blocks", "test_json"},
                              .flag_aliases = {{"old_capacity", "test_capacity_blocks"}, {"old_json", "test_json"}},
                              .run = RunEcho});
KVSIM_REGISTER_COMMAND(
    fail, {.name = "fail", .summary = "fails", .usage = "kvsim fail", .details = "", .flags = {}, .run = RunFail});
KVSIM_REGISTER_COMMAND(
    bug, {.name = "bug", .summary = "internal error", .usage = "kvsim bug", .details = "", .flags = {}, .run = RunBug});

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "kvsim");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  absl::SetFlag(&FLAGS_test_capacity_blocks, 100);
  absl::SetFlag(&FLAGS_test_json, false);
  seen = Seen();
  const int code = RunKvsim(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

TEST(CommandTest, DispatchesWithFlagsInEveryForm) {
  Outcome o = RunCli({"echo", "a", "--test_capacity_blocks=7", "b", "--test_json"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, "ran");
  EXPECT_EQ(seen.args, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(seen.capacity_blocks, 7);
  EXPECT_TRUE(seen.json);

  o = RunCli({"echo", "--test_capacity_blocks", "9", "--notest_json", "--", "--literal"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(seen.capacity_blocks, 9);
  EXPECT_FALSE(seen.json);
  EXPECT_EQ(seen.args, (std::vector<std::string>{"--literal"}));
}

TEST(CommandTest, FormerNamesStandForTheirFlagsInEveryForm) {
  Outcome o = RunCli({"echo", "--old_capacity=11", "--old_json"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(seen.capacity_blocks, 11);
  EXPECT_TRUE(seen.json);
  o = RunCli({"echo", "--old_capacity", "12", "--noold_json"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(seen.capacity_blocks, 12);
  EXPECT_FALSE(seen.json);
  o = RunCli({"help", "echo"});
  EXPECT_NE(o.out.find("(default: 100, also --old_capacity)"), std::string::npos) << o.out;
  // An alias of another command is no alias here.
  EXPECT_EQ(RunCli({"fail", "--old_json"}).code, 2);
}

TEST(CommandTest, UnknownCommandIsExit2AndListsCommands) {
  Outcome o = RunCli({"replai"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("unknown command 'replai'"), std::string::npos);
  EXPECT_NE(o.err.find("echo"), std::string::npos);
}

TEST(CommandTest, FlagOfAnotherCommandIsRejected) {
  Outcome o = RunCli({"echo", "--test_other=x"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("unknown flag --test_other for 'kvsim echo'"), std::string::npos);
  EXPECT_NE(o.err.find("--test_capacity_blocks"), std::string::npos);
  o = RunCli({"fail", "--test_json"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("takes no flags"), std::string::npos);
}

TEST(CommandTest, BadFlagValueIsExit2) {
  Outcome o = RunCli({"echo", "--test_capacity_blocks=lots"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("bad value 'lots' for flag --test_capacity_blocks"), std::string::npos);
  o = RunCli({"echo", "--test_capacity_blocks"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("needs a value"), std::string::npos);
}

TEST(CommandTest, ErrorsAreOneLineAndInputErrorsExit2) {
  Outcome o = RunCli({"fail"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kvsim fail: trace.jsonl:3: field input_length: expected an integer\n");
  EXPECT_EQ(RunCli({"bug"}).code, 1);
}

TEST(CommandTest, HelpListsCommandsAndFlagsWithDefaults) {
  Outcome o = RunCli({"help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("echo"), std::string::npos);
  EXPECT_NE(o.out.find("test command"), std::string::npos);
  o = RunCli({"help", "echo"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("--test_capacity_blocks  cache capacity in blocks (default: 100"), std::string::npos) << o.out;
  EXPECT_EQ(RunCli({"help", "nope"}).code, 2);
  EXPECT_EQ(RunCli({"echo", "--help"}).code, 0);
  EXPECT_EQ(RunCli({}).code, 2);
}

}  // namespace
}  // namespace kvsim
