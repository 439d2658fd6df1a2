// wit: the command-line entry point. Parses arguments, dispatches to a subcommand, and turns
// every error into one line on stderr and an exit code: 1 for an error, 2 for a command line it
// cannot take (a subcommand's own codes, e.g. verify's 3 and 4, pass through). No logic lives here.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "apps/wit/commands.h"
#include "core/error.h"
#include "trainer/cpu_numerics.h"

int main(int argc, char** argv) {
  wit::pin_cpu_numerics(argv);  // first: the libraries must load with it
  CLI::App app{
      "wit: a GPT trainer whose every step leaves a witness.\n"
      "Prepare a corpus, train on it; each step is a pure function of committed inputs, so any\n"
      "step can be replayed bit for bit.",
      "wit"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.footer("Run `wit SUBCOMMAND --help` for a subcommand's options.");

  wit::cli::Commands commands;
  wit::cli::add_prepare(app, commands);
  wit::cli::add_tokenize(app, commands);
  wit::cli::add_train(app, commands);
  wit::cli::add_sample(app, commands);
  wit::cli::add_config(app, commands);
  wit::cli::add_keygen(app, commands);
  wit::cli::add_inspect(app, commands);
  wit::cli::add_query(app, commands);
  wit::cli::add_verify(app, commands);
  wit::cli::add_board(app, commands);

  try {
    app.parse(argc, argv);
    return commands.run_selected(app);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all
    // A command line wit cannot take: usage, exit 2, with where to read about it.
    std::string command = "wit";
    for (const CLI::App* a = &app; !a->get_subcommands().empty();) {
      a = a->get_subcommands().front();
      command += " " + a->get_name();
    }
    fmt::print(stderr, "wit: error: {} (see `{} --help`)\n", e.what(), command);
    return 2;
  } catch (const wit::SharedError& e) {
    if (e.report()) fmt::print(stderr, "wit: error: {}\n", e.what());
    return 1;
  } catch (const wit::Error& e) {
    fmt::print(stderr, "wit: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Library errors (torch, HDF5, filesystem): first line only, no stack traces.
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    fmt::print(stderr, "wit: error: {}\n", msg);
    return 1;
  }
}
