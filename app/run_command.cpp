// `mlaplan run SCENARIO.json`: plan one scenario file, check the plan and print it.
#include <fmt/format.h>


#include "cli_common.hpp"
#include "commands.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_check.hpp"
#include "mlaplan/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/scenario_io.hpp"

namespace mlaplan::cli {

namespace {

enum class Format { table, json, csv };

struct RunOptions {
  std::string path;
  std::string scenario;  // pick one scenario of a list file, by name or index
  BackendOptions backend;
  Format format = Format::table;
  std::string output;
  bool no_verify = false;
  size_t max_sequences = 8;
};

int run(const RunOptions& opt) {
  PhaseTimer load_timer;
  std::vector<Scenario> scenarios;
  {
    auto scope = load_timer.phase("load");
    scenarios = select_scenarios(load_scenario_file(opt.path), opt.scenario, opt.path);
  }
  PlannerChoice choice = choose(opt.backend);
  Planner& planner = *choice.planner;
  const bool from_reference = planner.is_reference();

  std::vector<PlanReport> reports;
  reports.reserve(scenarios.size());
  for (const Scenario& s : scenarios) {
    PhaseTimer timer = load_timer;
    PlanReport r;
    r.scenario = &s;
    r.backend = planner.backend();
    r.planner = planner.name();
    r.device = planner.device();
    try {
      r.shape = require_feasible(s.batch);
      r.tables = planner.plan(s.batch, timer);
    } catch (const InfeasibleBatch& e) {
      const bool expected = s.expected && s.expected->infeasible;
      throw InputError(s.locate(e.what()) + (expected ? " (the scenario's expected block marks it infeasible)" : ""));
    }
    if (!opt.no_verify) r.verification = verify_plan(s, r.tables, from_reference, timer);
    r.timings_us = timer.phases();
    reports.push_back(std::move(r));
  }

  PhaseTimer output_timer;  // phases after timings_us was filled in: NVTX and --trace only
  std::string text;
  {
    auto format_scope = output_timer.phase("format");
    if (opt.format == Format::json) {
      if (reports.size() == 1) {
        text = format_plan_json(reports[0]);
      } else {  // still one object on stdout: a list under "scenarios"
        text = "{\"scenarios\": [\n";
        for (size_t i = 0; i < reports.size(); ++i) text += (i ? ",\n" : "") + format_plan_json(reports[i]);
        text += "]}\n";
      }
    } else if (opt.format == Format::csv) {
      for (size_t i = 0; i < reports.size(); ++i) text += format_plan_csv(reports[i], i == 0);
    } else {
      for (size_t i = 0; i < reports.size(); ++i) text += (i ? "\n" : "") + format_plan_table(reports[i], opt.max_sequences);
    }
  }
  {
    auto write_scope = output_timer.phase("write");
    write_output(opt.output, text);
  }

  int status = kOk;
  for (const PlanReport& r : reports) {
    if (r.verification.status == "fail") {
      error(r.scenario->locate(fmt::format("the {} plan is wrong: {}", r.planner, r.verification.detail)));
      status = kWrongPlan;
    }
  }
  return status;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Plan the scenarios of one file, check the plans and print them");
  cmd->add_option("scenario", opt->path, "Scenario file (.json): one scenario, or {\"scenarios\": [...]}")->required()->type_name("FILE");
  cmd->add_option("--scenario", opt->scenario, "In a file holding several scenarios, plan only this one (name or index)")
      ->type_name("NAME");
  add_backend_options(*cmd, opt->backend);
  cmd->add_option_function<std::string>(
         "--format", [opt](const std::string& v) { opt->format = v == "json" ? Format::json : v == "csv" ? Format::csv : Format::table; },
         "Output: table (for people), json (the contract of interface.md) or csv (one row per table cell)")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->default_str("table");
  cmd->add_option("-o,--output", opt->output, "Write the output to FILE instead of stdout (atomically)")->type_name("FILE");
  cmd->add_flag("--no-verify", opt->no_verify, "Skip checking the plan against the reference, the properties and `expected`");
  cmd->add_option("--max-sequences", opt->max_sequences, "Table format: sequences spelled out per chunk")
      ->default_str("8")
      ->check(CLI::PositiveNumber);
  cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = run(*opt); }));
}

}  // namespace mlaplan::cli
