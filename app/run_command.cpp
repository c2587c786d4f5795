// `mlaplan run SCENARIO.json`: plan one scenario file, check the plan and print it.
#include <fmt/format.h>


#include "cli_common.hpp"
#include "commands.hpp"
#include "explore_options.hpp"
#include "mlaplan/explore/policy_check.hpp"
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
  PolicyOptions policy;
  ModelOptions model;
};

// A policy other than max, planned on the CPU and checked against its invariants (the expected
// block describes max's plan, so it is not compared).
void plan_with_policy(const Scenario& s, const explore::Policy& policy, bool verify, PlanReport& r, PhaseTimer& timer) {
  r.backend = "cpu";
  r.planner = "cpu-" + policy.name();
  r.device.reset();
  explore::PolicyPlan plan;
  {
    auto scope = timer.phase("plan");
    try {
      plan = explore::plan_policy(s.batch, policy);
    } catch (const InputError& e) {
      throw InputError(s.locate(e.what()));
    }
  }
  r.tables = std::move(plan.tables);
  r.shape.chunks_used = plan.outcome.chunks;
  r.shape.padded_tokens = plan.outcome.streamed_rows;
  r.shape.input_tokens = plan.outcome.payload_tokens;
  if (!verify) return;
  auto scope = timer.phase("check");
  const explore::InvariantReport inv = explore::check_policy_invariants(s.batch, policy, r.tables, plan.outcome.chunks);
  r.verification.properties = inv.ok() ? "pass" : "fail";
  r.verification.expected = s.expected ? "skipped" : "absent";
  r.verification.status = inv.ok() ? "pass" : "fail";
  if (!inv.ok()) r.verification.detail = fmt::format("{} ({} invariant violations)", inv.messages.front(), inv.violations);
}

int run(const RunOptions& opt) {
  PhaseTimer load_timer;
  std::vector<Scenario> scenarios;
  {
    auto scope = load_timer.phase("load");
    scenarios = select_scenarios(load_scenario_file(opt.path), opt.scenario, opt.path);
  }
  if (scenarios.empty())
    throw InputError(fmt::format("{}: holds no scenario (an empty \"scenarios\" list); add a scenario object to plan", opt.path));
  const explore::Policy policy = make_policy(explore::parse_policy_kind(opt.policy.policy), opt.policy);
  const bool is_max = policy.kind == explore::PolicyKind::max;
  if (!is_max && opt.backend.backend == Backend::gpu)
    note(fmt::format("policy {} is planned on the CPU; only max has a GPU planner", policy.name()));
  PlannerChoice choice = is_max ? choose(opt.backend) : PlannerChoice{make_fast_cpu_planner(), ""};
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
    r.policy = policy.name();
    r.memory = memory_figures(opt.model, s.batch.buffer_token_size);
    if (!is_max) {
      plan_with_policy(s, policy, !opt.no_verify, r, timer);
      r.timings_us = timer.phases();
      reports.push_back(std::move(r));
      continue;
    }
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
  add_policy_options(*cmd, opt->policy, false);
  add_model_options(*cmd, opt->model, false);
  cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = run(*opt); }));
}

}  // namespace mlaplan::cli
