// File: tools/command.h
//
// The `kvsim` sub-command registry and dispatcher.
//
// Each sub-command lives in its own tools/<name>_command.cc, defines the absl flags it reads there, and
// registers itself with one line:
//
//   KVSIM_REGISTER_COMMAND(version, {
//       .name = "version", .summary = "print the version", .usage = "kvsim version",
//       .flags = {}, .run = RunVersion});
//
// The dispatcher parses `--flag=value` itself against the command's own flag list, so a flag that
// belongs to another sub-command (or to none) is an error naming the accepted ones. Flags may be given
// as --name=value, --name value, or for booleans --name / --noname; "--" ends the flags.
// Exit codes: 0 success, 2 bad usage or bad input (any error status but kInternal/kUnknown), 1 internal;
// a command may choose another for a negative verdict (WithExitCode).
#ifndef KVSIM_TOOLS_COMMAND_H_
#define KVSIM_TOOLS_COMMAND_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "util/registry.h"

namespace kvsim {

struct Command {
  std::string name;                // as typed: `kvsim <name>`
  std::string summary;             // one line for `kvsim help`
  std::string usage;               // synopsis, e.g. "kvsim inspect TRACE [--json]"
  std::string details;             // paragraphs for `kvsim help <name>`; may be empty
  std::vector<std::string> flags;  // names of the absl flags this command accepts
  // Former flag names still accepted: {old name, the name in `flags` it now stands for}. Help lists
  // each beside its flag; FlagGiven() answers for the new name.
  std::vector<std::pair<std::string, std::string>> flag_aliases = {};
  // Runs with the positional arguments; writes its report to `out`. Errors are returned, not printed.
  std::function<absl::Status(const std::vector<std::string>& args, std::ostream& out)> run;
};

// Adds `command` to the registry (at static initialisation). Returns true so it can initialise a bool.
bool RegisterCommand(Command command);

// Name lists that help texts cite as {KEY} (e.g. {eviction_policies}), each computed from its registry
// when help is printed; `kvsim help names` prints them all (tools/help_lists.cc registers them).
Registry<std::function<std::string()>>& HelpListRegistry();

// True if the command line of the sub-command being run set flag `name` (by name or as --noNAME), so a
// flag's default can mean "the component's own default".
bool FlagGiven(absl::string_view name);

// `status` (not OK) marked to end the process with `exit_code` instead of 1 or 2: for a command that ran
// correctly but whose verdict is negative (`kvsim compare` exits 3 on a regression). The message is
// printed as any error's.
absl::Status WithExitCode(absl::Status status, int exit_code);

// Runs `kvsim` with argv[1..]: dispatches to the named sub-command, or prints help. Errors go to `err`
// as one line "kvsim <cmd>: <message>". Returns the process exit code.
int RunKvsim(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace kvsim

#define KVSIM_REGISTER_COMMAND(id, ...) \
  static const bool kvsim_command_registered_##id = ::kvsim::RegisterCommand(__VA_ARGS__)

#endif  // KVSIM_TOOLS_COMMAND_H_
