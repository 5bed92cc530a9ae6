#include "tools/command.h"

#include <algorithm>
#include <set>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "config/field_checks.h"
#include "proto/config.pb.h"
#include "util/registry.h"

namespace kvsim {
namespace {

Registry<Command>& CommandRegistry() {
  static auto* registry = new Registry<Command>("command");
  return *registry;
}

const Command* FindCommand(absl::string_view name) { return CommandRegistry().Find(name); }

std::string CommandNames() { return CommandRegistry().NameList(); }

// `details` with every {LIST} replaced by the registered name list (left as it is if unknown).
std::string ExpandNameLists(const std::string& details) {
  std::string text = details;
  for (const auto& [key, list] : HelpListRegistry().entries()) {
    text = absl::StrReplaceAll(text, {{absl::StrCat("{", key, "}"), list()}});
  }
  return text;
}

// `kvsim help names`: every registered list, one "KEY: a b c" line each.
void PrintNameLists(std::ostream& out) {
  for (const auto& [key, list] : HelpListRegistry().entries()) out << key << ": " << list() << "\n";
}

void PrintOverview(std::ostream& out) {
  out << "kvsim: trace-driven simulator and policy evaluator for KV caches in LLM serving.\n\n"
      << "usage: kvsim <command> [flags] [args]\n\ncommands:\n";
  size_t width = 4;
  for (const auto& [name, command] : CommandRegistry().entries()) width = std::max(width, name.size());
  out << "  " << std::string("help") << std::string(width - 4 + 2, ' ')
      << "list the commands, or describe one: kvsim help <command>; kvsim help names lists the\n"
      << std::string(width + 4, ' ') << "registered policies, formats, cost models and sweep modes\n";
  for (const auto& [name, command] : CommandRegistry().entries()) {
    out << "  " << name << std::string(width - name.size() + 2, ' ') << command.summary << "\n";
  }
  out << "\nRun 'kvsim help <command>' for its flags, with units and defaults.\n";
}

void PrintCommandHelp(const Command& command, std::ostream& out) {
  out << "usage: " << command.usage << "\n\n" << command.summary << "\n";
  if (!command.details.empty()) out << "\n" << ExpandNameLists(command.details) << "\n";
  if (command.flags.empty()) {
    out << "\nflags: none\n";
    return;
  }
  out << "\nflags:\n";
  for (const std::string& name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      out << "  --" << name << "  (not defined: a bug in this build)\n";
      continue;
    }
    const std::string def = flag->DefaultValue();
    std::string aliases;
    for (const auto& [old_name, new_name] : command.flag_aliases) {
      if (new_name == name) absl::StrAppend(&aliases, ", also --", old_name);
    }
    out << "  --" << name << "  " << flag->Help() << " (default: " << (def.empty() ? "\"\"" : def) << aliases << ")\n";
  }
}

std::set<std::string>& GivenFlags() {
  static std::set<std::string>* given = new std::set<std::string>();
  return *given;
}

// Applies the flags in `args` to the absl flags of `command`; collects positional arguments.
absl::Status ParseArgs(const Command& command, const std::vector<std::string>& args,
                       std::vector<std::string>* positional) {
  GivenFlags().clear();
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional->push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    absl::string_view body = absl::StripPrefix(absl::StripPrefix(arg, "-"), "-");
    const size_t eq = body.find('=');
    std::string name(body.substr(0, eq));
    auto resolve_alias = [&command](const std::string& n) {
      for (const auto& [old_name, new_name] : command.flag_aliases) {
        if (n == old_name) return new_name;
      }
      return n;
    };
    name = resolve_alias(name);
    bool has_value = eq != absl::string_view::npos;
    std::string value = has_value ? std::string(body.substr(eq + 1)) : "";
    auto accepts = [&](const std::string& n) {
      return std::find(command.flags.begin(), command.flags.end(), n) != command.flags.end();
    };
    absl::CommandLineFlag* flag = accepts(name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no") && accepts(resolve_alias(name.substr(2)))) {
      flag = absl::FindCommandLineFlag(resolve_alias(name.substr(2)));
      if (flag != nullptr && flag->IsOfType<bool>()) {
        name = resolve_alias(name.substr(2));
        value = "false";
        has_value = true;
      } else {
        flag = nullptr;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " for 'kvsim ", command.name, "'",
                       command.flags.empty() ? "; it takes no flags"
                                             : absl::StrCat("; it accepts --", absl::StrJoin(command.flags, ", --")),
                       " (see 'kvsim help ", command.name, "')"));
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("bad value '", value, "' for flag --", name, ": ", error));
    }
    GivenFlags().insert(name);
  }
  return absl::OkStatus();
}

constexpr char kExitCodePayload[] = "kvsim.exit_code";

int ExitCode(const absl::Status& status) {
  if (status.ok()) return 0;
  if (const auto code = status.GetPayload(kExitCodePayload)) {
    int value;
    if (absl::SimpleAtoi(std::string(*code), &value)) return value;
  }
  return status.code() == absl::StatusCode::kInternal || status.code() == absl::StatusCode::kUnknown ? 1 : 2;
}

}  // namespace

bool FlagGiven(absl::string_view name) { return GivenFlags().count(std::string(name)) > 0; }

absl::Status WithExitCode(absl::Status status, int exit_code) {
  status.SetPayload(kExitCodePayload, absl::Cord(absl::StrCat(exit_code)));
  return status;
}

Registry<std::function<std::string()>>& HelpListRegistry() {
  static auto* registry = new Registry<std::function<std::string()>>("help name list");
  return *registry;
}

bool RegisterCommand(Command command) {
  const std::string name = command.name;
  return CommandRegistry().Register(name, std::move(command));
}

int RunKvsim(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.empty()) {
    PrintOverview(err);
    return 2;
  }
  const std::string name = args[0] == "--version" ? "version" : args[0];  // the convention of other tools
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.size() < 2) {
      PrintOverview(out);
      return 0;
    }
    if (args[1] == "names") {
      PrintNameLists(out);
      return 0;
    }
    const Command* command = FindCommand(args[1]);
    if (command == nullptr) {
      err << "kvsim help: unknown command '" << args[1] << "'; commands: " << CommandNames() << "\n";
      return 2;
    }
    PrintCommandHelp(*command, out);
    return 0;
  }
  const Command* command = FindCommand(name);
  if (command == nullptr) {
    err << "kvsim: unknown command '" << name << "'; commands: help, " << CommandNames() << "\n";
    return 2;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
    PrintCommandHelp(*command, out);
    return 0;
  }
  std::vector<std::string> positional;
  absl::Status status = ParseArgs(*command, rest, &positional);
  if (status.ok()) status = command->run(positional, out);
  // A config field refused after loading (the serving checks) is named with its line, as loading does.
  status = WithFieldPositionFromFile(std::move(status), proto::ExperimentConfig::default_instance());
  if (!status.ok()) {
    std::string message(status.message());
    std::replace(message.begin(), message.end(), '\n', ' ');
    err << "kvsim " << name << ": " << message << "\n";
  }
  return ExitCode(status);
}

}  // namespace kvsim
