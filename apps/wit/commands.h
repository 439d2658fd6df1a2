// The subcommands of `wit`: each add_* adds one (or a family) to the CLI with its options and
// registers with `commands` what runs when it is selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>

namespace wit::cli {

// What each subcommand runs. main owns the one instance; nothing is global.
class Commands {
 public:
  // `action` runs when `sub` is the innermost registered subcommand the parse selected.
  void on_run(const CLI::App* sub, std::function<int()> action);
  // Runs it; returns the exit code (2 when nothing registered was selected).
  int run_selected(const CLI::App& app) const;

 private:
  std::map<const CLI::App*, std::function<int()>> actions_;
};

void add_prepare(CLI::App& app, Commands& commands);
void add_tokenize(CLI::App& app, Commands& commands);
void add_sample(CLI::App& app, Commands& commands);
void add_board(CLI::App& app, Commands& commands);
void add_train(CLI::App& app, Commands& commands);
void add_config(CLI::App& app, Commands& commands);
void add_inspect(CLI::App& app, Commands& commands);
void add_query(CLI::App& app, Commands& commands);
void add_verify(CLI::App& app, Commands& commands);
void add_keygen(CLI::App& app, Commands& commands);

}  // namespace wit::cli
