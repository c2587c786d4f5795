// Each subcommand adds itself to the app; its callback stores the exit status in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace mlaplan::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_verify_command(CLI::App& app, int& exit_code);
void add_gen_command(CLI::App& app, int& exit_code);
void add_sweep_command(CLI::App& app, int& exit_code);

}  // namespace mlaplan::cli
