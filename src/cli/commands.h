// The subcommands of the gossamer binary. Each add_<name>_command registers its flags on the
// application (the flags are the interface scripts rely on; tests/e2e/test_cli.sh checks them)
// and returns what to run when the user chose it. Arguments live in the returned closure, so
// a subcommand's flags and its action are written side by side.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace gossamer::cli {

struct Subcommand {
  CLI::App* app;                        // the parsed subcommand; run() when it was given
  std::function<int()> run;             // returns the exit status
  std::function<void()> check = [] {};  // after parsing, before run: CLI usage errors
};

// Every subcommand, in help order.
std::vector<Subcommand> add_subcommands(CLI::App& app);

}  // namespace gossamer::cli
