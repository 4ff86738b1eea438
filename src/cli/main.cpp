// main() of the gossamer binary: one subcommand per job (src/cli/commands.cpp). Parses the
// command line, runs the chosen subcommand and turns errors into one line and an exit status:
// CLI11 usage errors exit with CLI11's codes (105-109), a gossamer::Error with 1, anything
// else with 2. Before anything allocates, malloc is told to keep what is freed (see below).
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

namespace {
// Buffers freed stay with malloc for the next allocation instead of going back to the system
// and being faulted in again, which is slow on VMs (a 4-rank checkpoint of GASLoC's per-rank
// state took 2.5x as long): no trimming, and blocks up to malloc's largest mmap threshold
// (32 MiB; glibc refuses more) from the heap rather than their own mmap. Close to what
// scripts/launch-common.sh's GLIBC_TUNABLES ask for, under any launcher (their huge pages only
// the environment can ask for); malloc settings the user gives in GLIBC_TUNABLES win.
void keep_freed_memory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}
}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
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
