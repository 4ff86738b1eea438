// main() of the gossamer binary: one subcommand per job (src/cli/commands.cpp). Parses the
// command line, runs the chosen subcommand and turns errors into one line and an exit status:
// CLI11 usage errors exit with CLI11's codes (105-109), a gossamer::Error with 1, anything
// else with 2.
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

int main(int argc, char** argv) {
  CLI::App app{"gossamer: pre-training GPT-2 and Llama with hand-written kernels"};
  app.set_version_flag("--version", GOSSAMER_VERSION);
  app.require_subcommand(1);
  const std::vector<gossamer::cli::Subcommand> subcommands = gossamer::cli::add_subcommands(app);
  try {
    app.parse(argc, argv);
    for (const auto& s : subcommands)
      if (*s.app) s.check();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& s : subcommands)
      if (*s.app) return s.run();
  } catch (const gossamer::Error& e) {
    gossamer::log_error("%s", e.what());
    return 1;
  } catch (const std::exception& e) {
    gossamer::log_error("internal error: %s", e.what());
    return 2;
  }
  return 0;
}
