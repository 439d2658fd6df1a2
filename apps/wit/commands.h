// The subcommands of `wit`: each adds its options to the CLI and runs when selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>

namespace wit::cli {

void add_prepare(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_sample(CLI::App& app);
void add_board(CLI::App& app);
void add_train(CLI::App& app);
void add_config(CLI::App& app);
void add_inspect(CLI::App& app);
void add_query(CLI::App& app);
void add_verify(CLI::App& app);
void add_keygen(CLI::App& app);

// What each subcommand runs when selected, filled in by the add_* functions.
std::map<CLI::App*, std::function<int()>>& actions();

// Runs whichever subcommand the parse selected; returns the exit code.
int run_selected(CLI::App& app);

}  // namespace wit::cli
