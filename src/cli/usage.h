// How the voxrt command reports a command line it cannot run. One style for every mistake:
//   voxrt: error: --delay-ms 500: expected 80 to 1200 in steps of 80, or 2400
//   voxrt: see `voxrt transcribe --help`
// with exit status 2 for usage errors (the command line itself: unknown options, bad values, options
// that do not go together) and 1 for failures (a file that does not exist, a model that does not
// load, a write that failed). Status 0 only when everything asked for was done.
#pragma once

#include <CLI/CLI.hpp>

#include "voxrt/error.h"

namespace voxrt::cli {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// A value or combination of options that cannot mean anything: reported with exit status 2 and a
// hint to the subcommand's --help. Thrown by the commands' checks, before anything loads.
class UsageError : public Error {
 public:
  using Error::Error;
};

// `voxrt help [COMMAND]`: the help of voxrt or of one command. Added after the other commands.
void add_help_command(CLI::App& app);

// Parses argv with `app` (whose subcommands run in their callbacks) and turns every outcome into
// the exit status above, printing the message in the one style.
int run_command_line(CLI::App& app, int argc, char** argv);

}  // namespace voxrt::cli
