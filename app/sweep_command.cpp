// `mlaplan sweep`: a workload's batches under grids of buffer sizes, chunk counts, policies, models
// and TP degrees; with --cost, their predicted step times; with --recommend, the smallest buffer that
// meets an iteration or a time target.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <thread>

#include "cli_common.hpp"
#include "commands.hpp"
#include "explore_options.hpp"
#include "gpu_options.hpp"
#include "mlaplan/bench/size_list.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_footprint.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/render/sweep_html.hpp"
#include "mlaplan/render/sweep_svg.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/policies/engines.hpp"

namespace mlaplan::cli {

namespace {

enum class SweepFormat { table, wide, md, csv, json };

struct SweepOptions {
  std::vector<std::string> paths;  // scenario files instead of a workload
  WorkloadOptions workload;
  size_t batches = 10000;
  uint32_t page_size = 128;
  std::string buffer_tokens = "4096:262144:x2";
  std::string max_chunks = "16";
  PolicyOptions policy;
  ModelOptions model;
  std::string backend = "cpu";
  std::vector<std::string> costs;  // --cost FILE...
  GpuOptions gpu;                  // --gpu, --attention
  std::string timing = "graph";    // --timing
  bool recommend = false;
  std::string objective = "iterations";
  std::string within = "5%";
  uint32_t max_iterations = 0;
  std::string quantile = "p99";
  std::string memory_budget;
  SweepFormat format = SweepFormat::table;
  std::string output;
  std::string json;
  std::string svg;   // --svg FILE: the plot
  std::string html;  // --html FILE: the page
  bool no_progress = false;
  std::vector<std::string> formation_given;  // options forming batches from a workload, given on the line
  bool timing_given = false;  // --timing on the line
  bool quantile_given = false, max_chunks_given = false, backend_given = false, tp_given = false, objective_given = false,
       within_given = false;
  MemoryLimit memory_limit;
};

// The batches to sweep and where they came from.
struct Batches {
  std::vector<Batch> batches;
  std::string source, formation;
};

// `bytes_per_batch`: what the sweep keeps per batch besides the batch, counted while forming.
Batches load_batches(const SweepOptions& opt, uint64_t bytes_per_batch) {
  Batches out;
  if (!opt.paths.empty()) {
    if (has_workload(opt.workload))
      throw InputError("--workload: give scenario files or a workload (--workload / --lengths), not both");
    if (!opt.formation_given.empty())
      throw InputError(fmt::format("{}: it forms batches from a workload, and scenario files give their batches as they "
                                   "are; drop {}",
                                   opt.formation_given.front(), opt.formation_given.front()));
    for (const std::string& f : scenario_files(opt.paths)) {
      std::vector<check::Scenario> scenarios = io::load_scenario_file(f);
      if (scenarios.empty())
        throw InputError(fmt::format("{}: holds no scenario (an empty \"scenarios\" list); add scenarios or leave the file out", f));
      for (check::Scenario& s : scenarios) out.batches.push_back(std::move(s.batch));
    }
    out.source = opt.paths.size() == 1 ? opt.paths.front() : fmt::format("{} paths", opt.paths.size());
    out.formation = "batches as the scenario files give them";
    return out;
  }
  std::unique_ptr<workloads::RequestSource> source = make_source(opt.workload);
  workloads::BatchFormation formation = make_formation(opt.workload);
  formation.memory_limit = opt.memory_limit.bytes;
  formation.bytes_per_batch = bytes_per_batch;
  // A preset never runs dry, so its default count is formed too; a trace's may never be reached.
  formation.batches_given = !opt.workload.workload.empty() ||
                            std::find(opt.formation_given.begin(), opt.formation_given.end(), "--batches") !=
                                opt.formation_given.end();
  formation.memory_limit_text = io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given);
  workloads::BatchSettings settings;
  settings.page_size = opt.page_size;
  out.batches = workloads::form_batches(*source, formation, settings, opt.batches, opt.workload.seed);
  if (out.batches.empty())
    throw InputError(opt.workload.replay.empty()
                         ? fmt::format("--lengths {}: no requests, so no batch to sweep", opt.workload.lengths)
                         : fmt::format("--replay {}: no request within --max-model-len, so no batch to sweep",
                                       opt.workload.replay));
  out.source = source->describe();
  const std::string replayed = replay_summary(*source);
  if (!replayed.empty()) out.source += "; " + replayed;
  out.formation = fmt::format("{}, page {}", formation.describe(), opt.page_size);
  return out;
}

// The sweep's memory check (sweeps/sweep_footprint.hpp) in the CLI's words.
void require_sweep_fits(const SweepOptions& opt, const sweeps::SweepGrid& grid, const sweeps::SweepFootprint& f) {
  sweeps::require_sweep_fits(sweeps::sweep_shape(grid, opt.backend == "gpu"), grid, f, opt.memory_limit.bytes,
                              {opt.paths.empty() ? fmt::format("--batches {}", opt.batches) : opt.paths.front(),
                               "--max-chunks", " ", io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given),
                               "--memory-limit"});
}

int sweep(SweepOptions opt) {  // by value: --model's context may set --max-model-len
  // Before any work: no output may be an input or another output, and each folder must take a file.
  if (!opt.paths.empty())
    for (const std::string& f : scenario_files(opt.paths)) outputs().claim_input(f, "a scenario file swept");
  outputs().claim_input(opt.workload.lengths, "the --lengths file");
  outputs().claim_input(opt.workload.replay, "the --replay trace");
  outputs().claim_input(opt.model.config, "the --model-config file");
  outputs().claim_output(opt.output, "-o");
  outputs().claim_output(opt.json, "--json");
  outputs().claim_output(opt.svg, "--svg");
  outputs().claim_output(opt.html, "--html");
  // Every option is checked before the batches are formed, so a typo fails at once.
  sweeps::SweepGrid grid;
  grid.buffer_tokens = bench::parse_sizes(opt.buffer_tokens, "--buffer-tokens", 0x7fffffffu);
  grid.max_chunks = bench::parse_sizes(opt.max_chunks, "--max-chunks", 1u << 20);
  grid.policies = make_policies(opt.policy);
  const bool any_max = std::any_of(grid.policies.begin(), grid.policies.end(),
                                   [](const policies::Policy& p) { return p.kind == policies::PolicyKind::max; });
  if (!any_max && (opt.max_chunks_given || opt.backend_given))
    throw InputError(fmt::format("{}: it applies to the max policy only, and --policy {} has none; add max to --policy "
                                 "or drop {}",
                                 opt.max_chunks_given ? "--max-chunks" : "--backend", opt.policy.policy,
                                 opt.max_chunks_given ? "--max-chunks" : "--backend"));
  grid.models = make_models(opt.model);
  grid.tps = make_tps(opt.model);
  grid.dtype = models::parse_dtype(opt.model.dtype);
  grid.costs = load_costs(gpu_cost_files(opt.gpu, opt.model, opt.costs));  // --gpu's files, or --cost's
  check_gpu_costs(opt.gpu, grid.costs);
  check_guide_gpus(opt.gpu, grid.policies);
  if (grid.models.empty() && grid.costs.empty() && (opt.model.tps != "1" || opt.model.dtype != "bf16"))
    throw InputError("--tp/--dtype: they size a model's buffer; add --model (e.g. deepseek-v3)");
  grid.eager = eager_timing(opt.timing, !grid.costs.empty(), opt.timing_given);
  policies::attach_guide(grid.policies, grid.costs, grid.eager);
  resolve_cost_models(grid.costs, opt.model, opt.tp_given, grid.models, grid.tps, "sweep", grid.eager);
  for (const models::ModelDims& m : grid.models)
    for (uint32_t tp : grid.tps) models::buffer_memory(m, tp, grid.dtype);  // a TP that does not divide the heads
  // Engines by name say what they run on the cost files' GPU (where the files share one).
  uint32_t sm = grid.costs.empty() ? 0 : grid.costs.front().sm;
  for (const cost::CostModel& c : grid.costs) sm = c.sm == sm ? sm : 0;
  policies::name_engines_for(grid.policies, sm);
  // --model's context as --max-model-len where that is not given (the smallest of the models named):
  // requests longer than the model serves are dropped, and the source line says how many.
  std::string context_note;
  const bool model_named = !opt.model.models.empty() || !opt.model.config.empty();  // not a cost file's model
  if (!opt.workload.max_model_len && opt.paths.empty() && model_named)
    for (const models::ModelDims& m : grid.models)
      if (m.max_context && (!opt.workload.max_model_len || m.max_context < opt.workload.max_model_len)) {
        opt.workload.max_model_len = m.max_context;
        context_note = fmt::format("max_model_len {} is {}'s context (max_position_embeddings); --max-model-len sets "
                                   "another", m.max_context, m.title());
      }

  std::optional<sweeps::RecommendOptions> rec;
  const bool by_time = opt.objective == "time";
  if (opt.recommend || opt.max_iterations || !opt.memory_budget.empty() || opt.quantile_given || opt.objective_given ||
      opt.within_given) {
    if (!opt.recommend)
      throw InputError("--max-iterations/--quantile/--memory-budget/--objective/--within: they set what --recommend looks "
                       "for; add --recommend");
    if (by_time && grid.costs.empty())
      throw InputError("--objective time: the step time needs a cost model; add --cost FILE (costs/ has calibrated ones)");
    if (by_time && opt.max_iterations)
      throw InputError("--max-iterations: it is the target of --objective iterations; with --objective time the target is "
                       "--within P% of the best time, so drop --max-iterations");
    if (!by_time && opt.within_given)
      throw InputError("--within: it is the target of --objective time; add --objective time (and --cost FILE) or drop --within");
    if (!by_time && !opt.max_iterations)
      throw InputError("--recommend: say how many iterations a batch may take with --max-iterations K (e.g. 1 for one-shot "
                       "prefill), or recommend by time with --objective time --cost FILE");
    rec.emplace();
    rec->objective = by_time ? sweeps::Objective::time : sweeps::Objective::iterations;
    rec->max_iterations = opt.max_iterations;
    rec->within = sweeps::parse_within(opt.within);
    rec->quantile = sweeps::parse_quantile(opt.quantile);
    // Each engine's default buffer from the user's settings (engines.hpp), priced beside the choice:
    // added to the grid where it is not on it; the grid's ends stay the user's.
    policies::EngineSettings es;
    es.max_model_len = opt.workload.max_model_len;
    for (const models::ModelDims& m : grid.models)
      if (!es.max_model_len || (m.max_context && m.max_context < es.max_model_len)) es.max_model_len = m.max_context;
    es.max_num_seqs = opt.workload.max_sequences;
    es.block_size = opt.page_size;
    es.max_num_tokens = opt.workload.token_budget;
    rec->engines = es;
    rec->grid_smallest = *std::min_element(grid.buffer_tokens.begin(), grid.buffer_tokens.end());
    rec->grid_largest = *std::max_element(grid.buffer_tokens.begin(), grid.buffer_tokens.end());
    for (const policies::Policy& p : grid.policies) {
      const policies::EngineDefault d = policies::engine_default(policies::engine_of(p), es, sm);
      if (d.whole_context || d.buffer_tokens < 1 || d.buffer_tokens > 0x7fffffffu) continue;
      // MAX's default runs one shot (max_chunks 1): priced at M=1, not at the grid's M.
      std::vector<uint32_t>& to = policies::engine_of(p) == policies::Engine::max ? grid.max_one_shot : grid.buffer_tokens;
      if (std::find(to.begin(), to.end(), d.buffer_tokens) == to.end()) to.push_back(static_cast<uint32_t>(d.buffer_tokens));
    }
    std::sort(grid.buffer_tokens.begin(), grid.buffer_tokens.end());
    if (!opt.memory_budget.empty()) {
      rec->memory_budget = sweeps::parse_byte_size(opt.memory_budget);
      if (grid.models.empty())
        throw InputError("--memory-budget: the buffer's memory needs a model; add --model (e.g. deepseek-v3) or --model-config");
    }
  }

  sweeps::SweepOptions run_options;
  if (opt.backend == "gpu") {
    profile::PlannerChoice choice = profile::choose_planner(profile::Backend::gpu, GpuKernel::fast);  // DeviceError (exit 3) without a GPU
    run_options.max_planner = std::shared_ptr<profile::Planner>(std::move(choice.planner));
  }
  // Twice a second, within settings too: one setting of guided over a million batches takes minutes.
  if (!opt.no_progress && ::isatty(STDERR_FILENO))
    run_options.work_progress = [](const sweeps::SweepProgress& p) {
      const double share = p.total ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 100.0;
      if (std::string_view(p.phase) == "bounds")
        print_stderr(fmt::format("\r\033[Kmlaplan: sweep: lower bounds, {:.0f}% of the batches", share));
      else if (p.settings_done < p.settings)
        print_stderr(fmt::format("\r\033[Kmlaplan: sweep: {:.0f}% ({} of {} settings done)", share, p.settings_done, p.settings));
      else
        print_stderr("\r\033[K");
    };

  InterruptScope interrupt_scope;  // Ctrl-C: finish the settings at hand, print them, exit 130
  profile::PhaseTimer timer;
  Batches in;
  {
    auto scope = timer.phase("form batches");
    in = load_batches(opt, sweeps::sweep_shape(grid, opt.backend == "gpu").bytes_per_batch());
  }
  {
    sweeps::SweepFootprint formed;
    for (const Batch& b : in.batches) formed.add(b);
    require_sweep_fits(opt, grid, formed);
  }
  sweeps::SweepResult result, fused;
  {
    auto scope = timer.phase("sweep");
    result = sweeps::run_sweep(in.batches, grid, run_options);
    // mlaplan's fused loop beside the choice: the same batches and grid priced by its files, where they
    // ship for every model and TP (else, or where one is of no use here, the engines' answer alone).
    const std::vector<std::string> fused_files =
        rec && by_time && !result.interrupted ? fused_loop_cost_files(opt.gpu, opt.model, opt.costs) : std::vector<std::string>{};
    if (!fused_files.empty()) {
      sweeps::SweepGrid fused_grid = grid;
      try {
        fused_grid.costs = load_costs(fused_files);
        sweeps::check_costs(fused_grid);
      } catch (const InputError&) {
        fused_grid.costs.clear();
      }
      if (!fused_grid.costs.empty()) fused = sweeps::run_sweep(in.batches, fused_grid, run_options);
    }
  }
  result.source = context_note.empty() ? in.source : in.source + " (" + context_note + ")";
  result.formation = in.formation;

  sweeps::SweepReport report;
  report.sweep = &result;
  if (rec && !result.interrupted) {  // no recommendation from part of the grid
    report.recommend_options = rec;
    report.recommendations = sweeps::recommend(result, *rec);
    if (!fused.rows.empty() && !fused.interrupted) {
      report.fused = &fused;
      sweeps::compare_fused_loop(report.recommendations, result, fused, *rec);
    }
  }
  std::string text;
  switch (opt.format) {
    case SweepFormat::md: text = sweeps::format_sweep_markdown(report); break;
    case SweepFormat::csv: text = sweeps::format_sweep_csv(report); break;
    case SweepFormat::json: text = sweeps::format_sweep_json(report); break;
    case SweepFormat::table: text = gpu_header(opt.gpu, grid.costs) + sweeps::format_sweep_brief(report); break;
    case SweepFormat::wide: text = gpu_header(opt.gpu, grid.costs) + sweeps::format_sweep_table(report); break;
  }
  if (result.interrupted || fused.interrupted) {  // the finished settings on stdout, no output file
    write_output("", text);
    error(fmt::format("sweep: interrupted {} {} of {} settings; {}",
                      fused.interrupted ? "pricing mlaplan's fused loop, the engines' loop done, after" : "after",
                      fused.interrupted ? fused.rows.size() : result.rows.size(), result.settings,
                      opt.output.empty() && opt.json.empty() && opt.svg.empty() && opt.html.empty()
                          ? "the rows above are complete"
                          : "no output file written"));
    return kInterrupted;
  }
  if (!opt.json.empty()) write_output(opt.json, sweeps::format_sweep_json(report));
  if (!opt.svg.empty()) write_output(opt.svg, render::sweep_svg(report));
  if (!opt.html.empty()) write_output(opt.html, render::sweep_html(report, command_line()));
  write_output(opt.output, text);
  return kOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Iterations, refusals, padding, fill, memory and (--cost) predicted time of a workload's batches over grids "
               "of buffer sizes, chunk counts, policies, models and TP; --recommend picks the smallest buffer that meets a "
               "target");
  cmd->add_option("scenarios", opt->paths, "Scenario files or folders to sweep instead of a workload (their batches as given)")
      ->type_name("PATH");
  cmd->footer(help_footer(
      "  mlaplan sweep --gpu h100 --model deepseek-v3 --tp 8 --workload coding-agent --policy vllm --recommend "
      "--objective time\n"
      "  mlaplan sweep --gpu h100 --loop fused --model deepseek-v3 --tp 8 --workload coding-agent --recommend "
      "--objective time\n"
      "  mlaplan sweep --workload short-chat --model deepseek-v3 --tp 8 --recommend --max-iterations 1\n"
      "  mlaplan sweep scenarios/ --buffer-tokens 4096:262144:x2 --policy all --format csv -o sweep.csv\n"
      "  mlaplan sweep --workload coding-agent --model deepseek-v3 --tp 8 --gpu h100 --svg sweep.svg --html sweep.html"));
  add_workload_options(*cmd, opt->workload);
  cmd->add_option("--batches", opt->batches, "Batches to form from the workload")
      ->default_str("10000")
      ->transform(whole_number(1, 100000000));
  cmd->add_option("--page-size", opt->page_size, "page_size of the formed batches (scenario files keep theirs)")
      ->default_str("128")
      ->transform(whole_number(1, 1u << 30));
  cmd->add_option("--buffer-tokens", opt->buffer_tokens, "Buffer sizes (rows): a list 8192,65536 or a range 4096:262144:x2")
      ->type_name("LIST")
      ->default_str("4096:262144:x2");
  cmd->add_option("--max-chunks", opt->max_chunks, "Chunk counts max is compiled for (a list); the other policies have no cap")
      ->type_name("LIST")
      ->default_str("16");
  add_policy_options(*cmd, opt->policy, true);
  add_model_options(*cmd, opt->model, true);
  add_memory_limit_option(*cmd, opt->memory_limit);
  cmd->add_option("--backend", opt->backend, "Planner of the max policy: cpu (the fast CPU planner, on every core) or gpu (the GPU planner, one "
                 "launch and two copies per batch: a check of the kernel on a workload, far slower than the CPU for "
                 "sweeps of small batches)")
      ->transform(one_of({"cpu", "gpu"}))
      ->default_str("cpu");
  add_cost_option(*cmd, opt->costs, true);
  add_gpu_options(*cmd, opt->gpu);
  add_timing_option(*cmd, opt->timing);
  cmd->add_flag("--recommend", opt->recommend,
                "Name, per policy, M, model and TP, the smallest buffer meeting the --objective at --quantile within "
                "--memory-budget, and why each smaller one fails");
  cmd->add_option("--objective", opt->objective,
                  "With --recommend: iterations (at most --max-iterations K per batch) or time (a step time within "
                  "--within P% of the best on the grid; needs --cost)")
      ->transform(one_of({"iterations", "time"}))
      ->default_str("iterations");
  cmd->add_option("--within", opt->within, "With --recommend --objective time: how far above the best step time a buffer may be")
      ->type_name("P%")
      ->default_str("5%");
  cmd->add_option("--max-iterations", opt->max_iterations, "With --recommend: iterations a batch may take")
      ->type_name("K")
      ->transform(whole_number(1, 1u << 20));
  cmd->add_option("--quantile", opt->quantile, "With --recommend: the share of batches that must meet K: p50, p90, p99, p99.9 or max, or the share "
                  "itself (0.99 is p99)")
      ->default_str("p99");
  cmd->add_option("--memory-budget", opt->memory_budget, "With --recommend: bytes for the buffer plus the K concat buffer, e.g. 8GiB")
      ->type_name("SIZE");
  cmd->add_option_function<std::string>(
         "--format",
         [opt](const std::string& v) {
           opt->format = v == "md"     ? SweepFormat::md
                         : v == "csv"  ? SweepFormat::csv
                         : v == "json" ? SweepFormat::json
                         : v == "wide" ? SweepFormat::wide
                                       : SweepFormat::table;
         },
         "Output: table (the answer first, within 120 columns), wide (every column), md (Markdown), csv or json "
         "(what scripts/plot_sweep.py reads); md, csv and json hold every column")
      ->transform(one_of({"table", "wide", "md", "csv", "json"}))
      ->default_str("table");
  cmd->add_option("-o,--output", opt->output, "Write the output to FILE (atomically) instead of stdout")->type_name("FILE");
  cmd->add_option("--json", opt->json, "Also write the JSON report to FILE, whatever --format is")->type_name("FILE");
  cmd->add_option("--svg", opt->svg, "Also draw the plot to FILE (SVG): iterations per batch against the buffer size, a "
                  "line per policy, M, model and TP, the recommendation marked; with --cost a second panel of the "
                  "predicted ms per step")
      ->type_name("FILE");
  cmd->add_option("--html", opt->html, "Also write one self-contained page (opens from disk, fetches nothing) with the "
                  "plot, the recommendation and the table")
      ->type_name("FILE");
  cmd->add_flag("--no-progress", opt->no_progress, "No progress line on stderr (it is shown only when stderr is a terminal)");
  cmd->callback(traced(*cmd, [opt, cmd, &exit_code] {
    for (const char* name :
         {"--token-budget", "--batch-size", "--max-sequences", "--max-model-len", "--seed", "--batches", "--page-size"})
      if (given(*cmd, name)) opt->formation_given.push_back(name);
    opt->quantile_given = given(*cmd, "--quantile");
    opt->max_chunks_given = given(*cmd, "--max-chunks");
    opt->backend_given = given(*cmd, "--backend");
    opt->tp_given = given(*cmd, "--tp");
    opt->timing_given = given(*cmd, "--timing");
    opt->objective_given = given(*cmd, "--objective");
    opt->within_given = given(*cmd, "--within");
    exit_code = sweep(*opt);
  }));
}

}  // namespace mlaplan::cli
