// `mlaplan run SCENARIO.json`: plan one scenario file, check the plan and print it.
#include <fmt/format.h>

#include <algorithm>


#include "cli_common.hpp"
#include "commands.hpp"
#include "explore_options.hpp"
#include "gpu_options.hpp"
#include "mlaplan/policies/policy_check.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/policies/policy_report.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/check/plan_check.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/render/plan_html.hpp"
#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::cli {

namespace {

enum class RunFormat { table, json, csv };

struct RunOptions {
  std::string path;
  std::string scenario;  // pick one scenario of a list file, by name or index
  BackendOptions backend;
  RunFormat format = RunFormat::table;
  std::string output;
  bool no_verify = false;
  size_t max_sequences = 8;
  PolicyOptions policy;
  ModelOptions model;
  std::vector<std::string> costs;  // --cost FILE (one)
  GpuOptions gpu;                  // --gpu, --attention
  std::string timing = "graph";    // --timing
  bool tp_given = false;
  bool timing_given = false;  // --timing on the line
  std::string svg;   // --svg FILE
  std::string html;  // --html FILE
  bool kernel_given = false;         // --kernel on the line
  bool max_sequences_given = false;  // --max-sequences on the line
  MemoryLimit memory_limit;
};

// A policy other than max, planned on the CPU and checked against its invariants (the expected
// block describes max's plan, so it is not compared).
void plan_with_policy(const check::Scenario& s, const policies::Policy& policy, bool verify, io::PlanReport& r, profile::PhaseTimer& timer) {
  r.device.reset();
  {
    auto scope = timer.phase("plan");
    try {
      io::PlanReport planned = policies::policy_report(s, policy);
      r.backend = planned.backend;
      r.planner = planned.planner;
      r.tables = std::move(planned.tables);
      r.shape = planned.shape;
    } catch (const InputError& e) {
      r.backend = "cpu";
      r.planner = "cpu-" + policy.name();
      throw InputError(s.locate(e.what()));
    }
  }
  if (!verify) return;
  auto scope = timer.phase("check");
  const policies::InvariantReport inv = policies::check_policy_invariants(s.batch, policy, r.tables, r.shape.chunks_used);
  r.verification.properties = inv.ok() ? "pass" : "fail";
  r.verification.expected = s.expected ? "skipped" : "absent";
  r.verification.status = inv.ok() ? "pass" : "fail";
  if (!inv.ok()) r.verification.detail = fmt::format("{} ({} invariant violations)", inv.messages.front(), inv.violations);
}

// Plans one scenario under one policy. With `compare` (several policies), a refusal is reported in
// the report instead of stopping the run, since it is one of the outcomes being compared.
io::PlanReport plan_scenario(const check::Scenario& s, const policies::Policy& policy, profile::Planner& planner,
                             const RunOptions& opt, const profile::PhaseTimer& load_timer, bool compare) {
  profile::PhaseTimer timer = load_timer;
  io::PlanReport r;
  r.scenario = &s;
  r.backend = planner.backend();
  r.planner = planner.name();
  r.device = planner.device();
  r.policy = policy.name();
  if (policy.kind == policies::PolicyKind::guided && policy.guide_path.empty() && policy.guide)
    r.guide_cost_file = policy.guide->path;  // --cost's: verify --plan chooses again by it
  r.memory = memory_figures(opt.model, s.batch.buffer_token_size);
  if (policy.kind != policies::PolicyKind::max) {
    try {
      plan_with_policy(s, policy, !opt.no_verify, r, timer);
    } catch (const InputError& e) {
      if (!compare) throw;
      r.refused = e.what();
      r.tables = {};
    }
    r.timings_us = timer.phases();
    return r;
  }
  try {
    r.shape = require_feasible(s.batch);
    r.tables = planner.plan(s.batch, timer);
  } catch (const InfeasibleBatch& e) {
    if (compare) {
      r.refused = e.what();
      r.timings_us = timer.phases();
      return r;
    }
    // A refusal the scenario expects (a reproducer of a port that planned an infeasible batch) is
    // the right answer: shown as a refusal, exit 0, with a note.
    if (s.expected && s.expected->infeasible) {
      r.refused = std::string(e.what()) + " (as the scenario's expected block says)";
      note(s.locate("refused, as the scenario's expected block says (infeasible): this is the right answer"));
      r.timings_us = timer.phases();
      return r;
    }
    throw InputError(s.locate(e.what()));
  }
  if (!opt.no_verify) r.verification = check::verify_plan(s, r.tables, planner.is_reference(), timer);
  r.timings_us = timer.phases();
  return r;
}

// What a run predicts times with: the cost model and the model it is for.
struct RunCost {
  cost::CostModel model;
  models::ModelDims dims;
  bool eager = false;  // --timing eager: the two clocks' times (the model has a host section)
};

// The plan's predicted time under the cost model (a refused plan has none).
void predict(io::PlanReport& r, const policies::Policy& policy, const RunCost& c) {
  if (!r.refused.empty()) return;
  const Batch& b = r.scenario->batch;
  const cost::Geometry& g = c.model.geometry;
  const uint32_t sm = c.model.sm;  // the cost file's GPU: the path each engine runs there
  policies::EnginePath path = policies::EnginePath::chunked;
  cost::Features f;
  std::optional<policies::EagerTime> eager;
  if (c.eager) eager.emplace(c.model);
  policies::EagerTime* clocks = eager ? &*eager : nullptr;
  // Graph timing prices each chunk of the loop too (the same terms, chunk by chunk), for the pictures.
  std::vector<double> chunk_us;
  const policies::ChunkSink sink = [&](const cost::Features& chunk, uint64_t times) {
    chunk_us.insert(chunk_us.end(), times, c.model.predict_us(chunk));
  };
  if (policy.kind == policies::PolicyKind::max) {
    f = clocks ? policies::max_features(b, policies::max_tables_view(r.tables), g, clocks)
               : policies::max_features_by_chunk(b, policies::max_tables_view(r.tables), g, sink);
  } else {
    path = policies::engine_path(b, policy, sm);
    f = path == policies::EnginePath::chunked && !clocks ? policies::policy_features_by_chunk(b, policy, g, sink)
                                                          : policies::dispatched_features(b, policy, g, sm, &path, nullptr, clocks);
  }
  io::TimeFigures t;
  t.chunk_us = std::move(chunk_us);
  t.cost_file = c.model.path;
  t.holds_for = c.model.describe(eager.has_value());
  t.gpu = c.model.gpu;
  t.model = c.dims.name;
  t.tp = c.model.tp;
  t.layers = c.dims.num_layers;
  t.iterations = static_cast<uint64_t>(f[cost::Term::iteration]);
  t.layer_us = eager ? eager->clock.dev : c.model.predict_us(f);
  if (eager) {
    t.host_bound_share = t.layer_us > 0 ? eager->clock.waited() / t.layer_us : 0.0;
    t.host_holds_for = c.model.host->holds_for;
    t.host_probe = c.model.host->probe;
    t.host_probe_ms = c.model.host->probe_ms;
    t.host_date = c.model.host->date;
  }
  t.iteration_us = c.model.coefficient(cost::Term::iteration) * f[cost::Term::iteration];
  // The bound: the least the model predicts for the batch under the policy, of a buffer that holds it
  // whole and this one (the sweep's, over its grid): chunks can fill the GPU's slots better than one
  // long launch, so a buffer holding it whole is not always the cheaper.
  // Under eager timing, priced eagerly too.
  const cost::Features whole = policies::dispatched_unbounded_features(b, policy, g, sm, nullptr, clocks);
  t.lower_bound_us = std::min(t.layer_us, eager ? eager->clock.dev : c.model.predict_us(whole));
  t.path = policies::path_name(path);
  t.path_reason = policies::path_reason(b, policy, sm);
  r.time = t;
}

// plan_scenario, then the plan's predicted time where a cost model is given.
io::PlanReport plan_one(const check::Scenario& s, const policies::Policy& policy, profile::Planner& planner, const RunOptions& opt,
                    const profile::PhaseTimer& load_timer, bool compare, const std::optional<RunCost>& cost) {
  io::PlanReport r = plan_scenario(s, policy, planner, opt, load_timer, compare);
  if (cost) predict(r, policy, *cost);
  if (cost && cost->model.up_projection == "fused" && r.memory) {
    // Priced as mlaplan's fused loop, which holds K and V alone: its buffer's bytes, no K concat, no latent.
    const models::BufferMemory m = models::buffer_memory(cost->dims, r.memory->tp, models::parse_dtype(r.memory->dtype));
    r.memory->bytes_per_row = m.fused_loop_bytes(1);
    r.memory->buffer_bytes = m.fused_loop_bytes(s.batch.buffer_token_size);
    r.memory->k_concat_bytes = r.memory->latent_bytes = 0;
    r.memory->fused_loop = true;
  }
  if (r.refused.empty()) {  // on the path the cost file's GPU dispatches the batch to, as predict prices it
    const policies::MaxTablesView view = policies::max_tables_view(r.tables);
    policies::QueryMerges q = policies::dispatched_query_merges(s.batch, policy, cost ? cost->model.sm : 0, &view);
    r.merges_per_query = std::make_pair(q.max(), q.quantile(0.99));
  }
  return r;
}

// Checks, before anything is planned, that the tables of every scenario under every policy, with the
// text and pictures made from them, fit in --memory-limit: run holds them all until it prints.
void require_run_fits(const std::vector<check::Scenario>& scenarios, const std::vector<policies::Policy>& policies,
                      const RunOptions& opt) {
  const bool pictures = !opt.svg.empty() || !opt.html.empty();
  std::string extra_what = opt.format == RunFormat::json ? "--format json text" : opt.format == RunFormat::csv ? "--format csv text" : "";
  if (pictures) extra_what += std::string(extra_what.empty() ? "" : " and ") + "the pictures";
  uint64_t total = 0;
  size_t checked = 0;
  for (const check::Scenario& s : scenarios) {
    const uint64_t B = s.batch.batch_size();
    const uint64_t extra = (opt.format == RunFormat::table ? 0 : io::plan_text_bytes_per_row(B, opt.format == RunFormat::csv)) +
                           (pictures ? sizeof(render::ChunkPicture) : 0) +
                           (opt.gpu.gpu.empty() && opt.costs.empty() ? 0 : sizeof(double));  // a chunk's predicted time
    for (const policies::Policy& p : policies) {
      uint64_t rows = s.batch.max_chunks;
      if (p.kind != policies::PolicyKind::max) {  // its tables hold max(max_chunks, chunks) rows
        const policies::PolicyOutcome o = policies::policy_outcome(s.batch, p);
        if (o.refused) continue;  // refused: no tables
        rows = std::max<uint64_t>(rows, o.chunks);
      }
      io::require_tables_fit(s, opt.memory_limit.bytes, opt.memory_limit.given, rows, extra, extra_what);
      total += rows * (table_bytes(B, 1) + extra);  // each term within the limit: no overflow
      ++checked;
      if (total > opt.memory_limit.bytes)
        throw InputError(fmt::format("{}: the tables of its first {} plans take {} together, above {}; plan fewer at "
                                     "once (--scenario NAME, fewer policies) or raise --memory-limit",
                                     opt.path, checked, io::format_bytes(total),
                                     io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given)));
    }
  }
}

// Before the plans of a scenario under several policies, the answer: one line per policy, side by side. A policy
// the cost file's GPU runs on a whole-context path shows no chunks or fill: its plan is not what runs.
std::string comparison_table(const std::vector<io::PlanReport>& reports, size_t first, size_t count) {
  const auto begin = reports.begin() + static_cast<std::ptrdiff_t>(first), end = begin + static_cast<std::ptrdiff_t>(count);
  const bool timed = std::any_of(begin, end, [](const io::PlanReport& r) { return r.time.has_value(); });
  const bool eager = std::any_of(begin, end, [](const io::PlanReport& r) { return r.time && r.time->host_bound_share; });
  // The policy column as wide as its longest name (an engine's reads "trtllm (packed/trtllm)"), at least 20.
  size_t width = 20;
  for (auto r = begin; r != end; ++r) width = std::max(width, io::printable(r->policy).size());
  std::string out = fmt::format("policies compared on {}:\n{:<{}} {:>8} {:>7} {:>14} {:>13} {:>9}{}{}\n",
                                io::printable(reports[first].scenario->name), "policy", width, "chunks", "fill", "rows streamed",
                                "page padding", "q merges", timed ? fmt::format(" {:>9} {:>9}", "ms/step", "per-iter") : "",
                                timed ? fmt::format("{}  {}", eager ? fmt::format(" {:>10}", "host-bound") : "", "path") : "");
  bool whole = false;
  for (size_t i = first; i < first + count; ++i) {
    const io::PlanReport& r = reports[i];
    if (!r.refused.empty()) {
      out += fmt::format("{:<{}} refused: {}\n", io::printable(r.policy), width, io::printable(r.refused));
      continue;
    }
    const uint64_t n = r.scenario->batch.buffer_token_size, used = r.shape.chunks_used, rows = r.shape.padded_tokens;
    const double fill = used ? 100.0 * static_cast<double>(rows) / static_cast<double>(used * n) : 0.0;
    const bool loop = !r.time || r.time->path == "chunked";
    whole = whole || !loop;
    std::string time;
    if (r.time) {
      const io::TimeFigures& t = *r.time;
      time = fmt::format(" {:>9.3f} {:>8.1f}%", t.step_ms(t.layer_us), 100.0 * t.iteration_share());
      if (eager) time += fmt::format(" {:>9.1f}%", 100.0 * t.host_bound_share.value_or(0.0));
      time += "  " + io::printable(t.path);
    }
    const std::string merges =  // a query row's merges: the most / p99 over the rows
        r.merges_per_query ? fmt::format("{}/{}", r.merges_per_query->first, r.merges_per_query->second) : "-";
    out += fmt::format("{:<{}} {:>8} {:>7} {:>14} {:>13} {:>9}{}\n", io::printable(r.policy), width, loop ? std::to_string(used) : "-",
                       loop ? fmt::format("{:.1f}%", fill) : "-", rows, rows - r.shape.input_tokens, merges, time);
  }
  if (whole) out += "(-: the path runs the whole context at once on the cost file's GPU, not the plan's chunks)\n";
  return out;
}

int run(const RunOptions& opt) {
  // Before any work: no output may be an input or another output, and each folder must take a file.
  outputs().claim_input(opt.path, "the scenario file");
  outputs().claim_input(opt.model.config, "the --model-config file");
  outputs().claim_output(opt.output, "-o");
  outputs().claim_output(opt.svg, "--svg");
  outputs().claim_output(opt.html, "--html");
  std::optional<RunCost> cost;
  const std::vector<std::string> cost_files = gpu_cost_files(opt.gpu, opt.model, opt.costs);  // --gpu's, or --cost's
  if (!cost_files.empty()) {
    if (cost_files.size() > 1)
      throw InputError("--cost: run takes one cost file (for its one model and TP); sweep takes one per model and TP");
    std::vector<cost::CostModel> costs = load_costs(cost_files);
    check_gpu_costs(opt.gpu, costs);
    std::vector<models::ModelDims> models = make_models(opt.model);
    std::vector<uint32_t> tps = make_tps(opt.model);
    const bool eager = eager_timing(opt.timing, true, opt.timing_given);
    resolve_cost_models(costs, opt.model, opt.tp_given, models, tps, "run", eager);
    cost = RunCost{costs.front(), models.front(), eager};
  } else {
    eager_timing(opt.timing, false, opt.timing_given);
  }
  // Ctrl-C: reading, planning and the outputs' pieces stop; nothing is written (exit 130).
  InterruptScope interrupt_scope;
  profile::PhaseTimer load_timer;
  std::vector<check::Scenario> scenarios;
  {
    auto scope = load_timer.phase("load");
    scenarios = select_scenarios(io::load_scenario_file(opt.path), opt.scenario, opt.path);
  }
  if (scenarios.empty())
    throw InputError(fmt::format("{}: holds no scenario (an empty \"scenarios\" list); add a scenario object to plan", opt.path));
  std::vector<policies::Policy> policies = make_policies(opt.policy);
  check_guide_gpus(opt.gpu, policies);
  policies::attach_guide(policies, cost ? std::vector<cost::CostModel>{cost->model} : std::vector<cost::CostModel>{},
                        cost && cost->eager);
  const bool compare = policies.size() > 1;
  if (opt.max_sequences_given && opt.format != RunFormat::table && opt.html.empty())
    throw InputError(fmt::format("--max-sequences: it shortens the table output (and --html's tables), and --format {} "
                                 "lists every sequence; drop --max-sequences or use --format table",
                                 opt.format == RunFormat::json ? "json" : "csv"));
  if (compare && opt.format == RunFormat::csv)
    throw InputError("--format csv: the cells of one plan; with several policies use --format json (each plan names its "
                     "policy) or --svg/--html to see them side by side");
  bool any_max = false;
  for (const policies::Policy& p : policies) {
    any_max = any_max || p.kind == policies::PolicyKind::max;
    if (p.kind != policies::PolicyKind::max && opt.backend.backend == profile::Backend::gpu)
      note(fmt::format("policy {} is planned on the CPU; only max has a GPU planner", p.name()));
  }
  if (!any_max && opt.kernel_given)  // harmless, but the user asked for a planner that plans nothing here
    note(fmt::format("--kernel picks max's planner, and --policy {} has no max; its policies have one CPU planner each",
                     opt.policy.policy));
  require_run_fits(scenarios, policies, opt);
  profile::PlannerChoice choice = any_max ? choose(opt.backend) : profile::PlannerChoice{profile::make_fast_cpu_planner(), ""};

  std::vector<io::PlanReport> reports;
  auto stop_if_asked = [&](const char* doing) {
    if (profile::stop_requested())
      throw Interrupted(fmt::format("run: interrupted while {} ({} of {} plans made)", doing, reports.size(),
                                    scenarios.size() * policies.size()));
  };
  reports.reserve(scenarios.size() * policies.size());
  for (const check::Scenario& s : scenarios)
    for (const policies::Policy& p : policies) {
      stop_if_asked("planning");
      reports.push_back(plan_one(s, p, *choice.planner, opt, load_timer, compare, cost));
    }

  profile::PhaseTimer output_timer;  // phases after timings_us was filled in: NVTX and --trace only
  // The text of 100,000 plans takes a while: look for Ctrl-C every 256 of them.
  auto poll = [&](size_t i) {
    if ((i & 255) == 0) stop_if_asked("formatting the output");
  };
  std::string text, svg, html;
  {
    auto format_scope = output_timer.phase("format");
    if (opt.format == RunFormat::json) {
      if (reports.size() == 1) {
        text = io::format_plan_json(reports[0]);
      } else {  // still one object on stdout: a list under "scenarios"
        text = "{\"scenarios\": [\n";
        for (size_t i = 0; i < reports.size(); ++i) {
          poll(i);
          text += (i ? ",\n" : "") + io::format_plan_json(reports[i]);
        }
        text += "]}\n";
      }
    } else if (opt.format == RunFormat::csv) {
      for (size_t i = 0; i < reports.size(); ++i) {
        poll(i);
        text += io::format_plan_csv(reports[i], i == 0);
      }
    } else {
      if (cost) text = gpu_header(opt.gpu, {cost->model});  // --gpu: the GPU and its file first
      // Several policies: the comparison, the answer, comes first for each scenario, then each plan.
      for (size_t i = 0; i < reports.size(); ++i) {
        poll(i);
        if (i) text += "\n";
        if (compare && i % policies.size() == 0) text += comparison_table(reports, i, policies.size()) + "\n";
        // A plan's prose (time, cost file, path) wrapped within 120 columns under its labels' column.
        text += io::wrap_lines(io::format_plan_table(reports[i], opt.max_sequences), 120, 0, 10);
      }
    }
    if (!opt.svg.empty()) svg = render::plans_svg(reports);
    if (!opt.html.empty()) html = render::plan_html(reports, command_line(), opt.max_sequences);
  }
  stop_if_asked("formatting the output");  // the last chance before anything is written
  {
    auto write_scope = output_timer.phase("write");
    // Staged, all renamed into place together when the command has succeeded (OutputSet).
    if (!opt.svg.empty()) write_output(opt.svg, svg);
    if (!opt.html.empty()) write_output(opt.html, html);
    write_output(opt.output, text);
  }

  int status = kOk;
  for (const io::PlanReport& r : reports) {
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
  cmd->footer(help_footer(
      "  mlaplan run scenarios/worked-example.json\n"
      "  mlaplan run scenarios/worked-example.json --policy engines --model deepseek-v3 --tp 8 --svg plans.svg\n"
      "  mlaplan run scenarios/worked-example.json --policy all --gpu h100 --model deepseek-v3 --tp 8\n"
      "  mlaplan run scenarios/worked-example.json --format json -o plan.json"));
  cmd->add_option("--scenario", opt->scenario, "In a file holding several scenarios, plan only this one (name or index)")
      ->type_name("NAME")
      ->check(scenario_name());
  add_backend_options(*cmd, opt->backend);
  cmd->add_option_function<std::string>(
         "--format", [opt](const std::string& v) { opt->format = v == "json" ? RunFormat::json : v == "csv" ? RunFormat::csv : RunFormat::table; },
         "Output: table (for people), json (the contract of interface.md) or csv (one row per table cell)")
      ->transform(one_of({"table", "json", "csv"}))
      ->default_str("table");
  cmd->add_option("-o,--output", opt->output, "Write the output to FILE instead of stdout (atomically)")->type_name("FILE");
  cmd->add_flag("--no-verify", opt->no_verify, "Skip checking the plan against the reference, the properties and `expected`");
  cmd->add_option("--max-sequences", opt->max_sequences, "Table format: sequences spelled out per chunk")
      ->default_str("8")
      ->transform(whole_number(1, UINT32_MAX));
  add_policy_options(*cmd, opt->policy, false);
  add_model_options(*cmd, opt->model, false);
  add_cost_option(*cmd, opt->costs, false);
  add_gpu_options(*cmd, opt->gpu);
  add_timing_option(*cmd, opt->timing);
  add_memory_limit_option(*cmd, opt->memory_limit);
  cmd->add_option("--svg", opt->svg,
                  "Also draw the plans as a picture (SVG): a bar per chunk, a coloured segment per sequence, page "
                  "padding hatched; one panel per scenario and policy")
      ->type_name("FILE");
  cmd->add_option("--html", opt->html,
                  "Also write one self-contained page (opens from disk, fetches nothing) with the pictures, a summary "
                  "per scenario and the chunk tables")
      ->type_name("FILE");
  cmd->callback(traced(*cmd, [opt, cmd, &exit_code] {
    opt->kernel_given = given(*cmd, "--kernel");
    opt->max_sequences_given = given(*cmd, "--max-sequences");
    opt->tp_given = given(*cmd, "--tp");
    opt->timing_given = given(*cmd, "--timing");
    exit_code = run(*opt);
  }));
}

}  // namespace mlaplan::cli
