// `mlaplan gen`: scenario files from a workload, batches formed like a scheduler's prefill steps.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "explore_options.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/scenario_io.hpp"

namespace mlaplan::cli {

namespace {

struct GenOptions {
  WorkloadOptions workload;
  size_t batches = 1;
  explore::BatchSettings settings;
  std::string name;
  std::string output;
};

int gen(const GenOptions& opt) {
  outputs().claim_input(opt.workload.lengths, "the --lengths file");  // before any work
  outputs().claim_output(opt.output, "-o");
  std::unique_ptr<explore::RequestSource> source = make_source(opt.workload);
  const explore::BatchFormation formation = make_formation(opt.workload);
  std::vector<Batch> batches;
  {
    PhaseTimer timer;
    auto scope = timer.phase("form batches");
    batches = explore::form_batches(*source, formation, opt.settings, opt.batches, opt.workload.seed);
  }
  if (batches.empty()) throw InputError(fmt::format("--lengths {}: no requests, so no batch to write", opt.workload.lengths));

  const std::string base = !opt.name.empty() ? opt.name : !opt.workload.workload.empty() ? opt.workload.workload : "trace";
  const std::string description = fmt::format("{}; {}; mlaplan gen", source->describe(), formation.describe());
  // The shape --batches asks for, even when a trace runs out first: a script asking for a list gets one.
  const bool list = opt.batches > 1;
  std::string text = list ? "{\"scenarios\": [\n" : "";
  size_t refused = 0, sequences = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    Scenario s;
    s.name = list ? fmt::format("{}-{}", base, i) : base;
    s.description = description;
    s.batch = batches[i];
    refused += !plan_shape(s.batch).feasible;
    sequences += s.batch.batch_size();
    std::string one = scenario_to_json(s);
    if (list) one.pop_back();  // its newline: the list puts ",\n" between scenarios
    text += (i ? ",\n" : "") + one;
  }
  text += list ? "\n]}\n" : "";
  write_output(opt.output, text);
  note(fmt::format("{}{} batch{} of {:.1f} sequences on average from {}{}",
                   batches.size() < opt.batches
                       ? fmt::format("--batches {}: the trace ran out after ", opt.batches)
                       : "",
                   batches.size(), batches.size() == 1 ? "" : "es",
                   static_cast<double>(sequences) / static_cast<double>(batches.size()), source->describe(),
                   refused ? fmt::format("; {} need more than max_chunks {} under max (run refuses them; "
                                         "try --buffer-tokens or --max-chunks, or mlaplan sweep)",
                                         refused, opt.settings.max_chunks)
                           : ""));
  return kOk;
}

}  // namespace

void add_gen_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<GenOptions>();
  CLI::App* cmd = app.add_subcommand("gen", "Write scenario files from a workload (a preset or your trace), batches formed like a scheduler's steps");
  add_workload_options(*cmd, opt->workload);
  cmd->add_option("--batches", opt->batches, "Batches to write: one scenario, or a {\"scenarios\": [...]} list")
      ->default_str("1")
      ->check(whole_number(1, 1000000));
  cmd->add_option("--page-size", opt->settings.page_size, "page_size of every scenario")
      ->default_str("128")
      ->check(whole_number(1, 1u << 30));
  cmd->add_option("--buffer-tokens", opt->settings.buffer_token_size, "buffer_token_size of every scenario")
      ->default_str("16384")
      ->check(whole_number(1, 0x7fffffffu));
  cmd->add_option("--max-chunks", opt->settings.max_chunks, "max_chunks of every scenario")
      ->default_str("16")
      ->check(whole_number(1, 1u << 20));
  cmd->add_option("--name", opt->name, "Scenario name (with -0, -1, ... for several); default: the workload's")->type_name("NAME");
  cmd->add_option("-o,--output", opt->output, "Write the scenarios to FILE (atomically) instead of stdout")->type_name("FILE");
  cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = gen(*opt); }));
}

}  // namespace mlaplan::cli
