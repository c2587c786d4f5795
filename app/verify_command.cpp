// `mlaplan verify`: the planner's conformance gate. Every scenario given, random batches and the
// built-in edge cases are planned and checked three ways; failures are shrunk to reproducers.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <set>

#include "cli_common.hpp"
#include "commands.hpp"
#include "mlaplan/check/batch_generator.hpp"
#include "mlaplan/check/builtin_suite.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/check/case_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/plan_file_check.hpp"
#include "mlaplan/policies/port_check.hpp"
#include "mlaplan/check/external_planner.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/io/plan_tables_io.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/check/shrink.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/check/verify_report.hpp"

namespace mlaplan::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct VerifyOptions {
  std::vector<std::string> paths;
  uint64_t fuzz = 0;
  std::optional<uint64_t> seed;
  uint32_t max_batch_size = 64;
  uint32_t large_batch_size = 4096;
  profile::Backend backend = profile::Backend::automatic;
  std::string kernel = "fast";
  std::string plan_file;
  std::string external;  // --external CMD
  std::string policy = "max";  // --policy NAME: the policy the external command ports
  double external_timeout = 60;
  std::string scenario;
  std::string report;
  std::string junit;
  std::string repro_dir = ".";
  size_t max_reproducers = 10;
  std::vector<uint32_t> only_page_sizes;  // --only-page-sizes
  std::vector<uint32_t> only_max_chunks;  // --only-max-chunks
  MemoryLimit memory_limit;
  check::BatchLimits limits() const { return check::BatchLimits::of(only_page_sizes, only_max_chunks); }
};

constexpr uint64_t kBuiltinFuzz = 1000;
// The largest B of random batches: ordinary shapes go up to 4096 chunks, so B = 16384 takes up to
// 512 MiB of tables; the large-batch shape keeps to a few chunks, so 2^20 sequences take 160 MiB.
// Either way one case plans in well under a second, so Ctrl-C is seen promptly.
constexpr uint32_t kMostMaxBatchSize = 16384;
constexpr uint32_t kMostLargeBatchSize = uint32_t{1} << 20;

// Before any batch is drawn: the options' sizes within their maxima, and the largest tables the
// generator can make within --memory-limit.
void require_fuzz_fits(const VerifyOptions& opt, const check::BatchGeneratorOptions& g) {
  if (opt.max_batch_size > kMostMaxBatchSize)
    throw InputError(fmt::format("--max-batch-size {}: above {}, the most for ordinary random batches (in up to {} chunks); "
                                 "for large batches use --large-batch-size (up to {})",
                                 opt.max_batch_size, kMostMaxBatchSize, g.max_chunks, kMostLargeBatchSize));
  if (opt.large_batch_size > kMostLargeBatchSize)
    throw InputError(fmt::format("--large-batch-size {}: above {}, the most verify draws; give a value up to {}, or check "
                                 "larger batches as scenario files",
                                 opt.large_batch_size, kMostLargeBatchSize, kMostLargeBatchSize));
  for (bool large : {false, true}) {
    const uint64_t b = check::most_batch_size(g, large), m = check::most_chunk_rows(g, large), bytes = table_bytes(b, m);
    if (bytes <= opt.memory_limit.bytes) continue;
    const bool by_limits = !g.limits.max_chunks.empty();  // then the chunk counts allowed set the tables' rows
    const std::string batch_option = large ? "--large-batch-size" : "--max-batch-size";
    const std::string option = by_limits ? "--only-max-chunks" : batch_option;
    const uint32_t value = by_limits ? g.limits.max_chunks.back() : large ? opt.large_batch_size : opt.max_batch_size;
    throw InputError(fmt::format("{} {}: random batches of up to {} sequences in up to {} chunks take up to {} of tables, "
                                 "above {}; lower {}{}, or raise --memory-limit",
                                 option, value, b, m, io::format_bytes(bytes),
                                 io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given),
                                 by_limits ? "the largest --only-max-chunks or " : "", batch_option));
  }
}

// The planners to check: on the GPU, its kernels; on the CPU, max-port means the reference (MAX's
// loop) and fast the closed-form planner.
std::vector<std::unique_ptr<profile::Planner>> make_planners(const VerifyOptions& opt, const policies::Policy& policy,
                                                          std::string* backend) {
  std::vector<std::unique_ptr<profile::Planner>> planners;
  if (!opt.external.empty()) {  // another implementation, through the line protocol
    *backend = "external";
    check::ExternalPlannerOptions options;
    options.answer_timeout_seconds = opt.external_timeout;
    options.policy = policies::port_policy_word(policy);
    if (!options.policy.empty())
      options.answer_rows = [policy](const Batch& b) { return policies::port_answer_rows(b, policy); };
    planners.push_back(check::make_external_planner(opt.external, options));
    return planners;
  }
  std::vector<GpuKernel> kernels;
  if (opt.kernel != "fast") kernels.push_back(GpuKernel::max_port);
  if (opt.kernel != "max-port") kernels.push_back(GpuKernel::fast);
  bool gpu = opt.backend == profile::Backend::gpu;
  if (opt.backend == profile::Backend::automatic) {
    std::string why;
    gpu = profile::find_usable_gpu(&why).has_value();
    if (!gpu) note("no usable GPU (" + why + "); verifying the CPU planners");
  }
  *backend = gpu ? "gpu" : "cpu";
  for (GpuKernel k : kernels) {
    if (gpu) {
      planners.push_back(profile::make_gpu_planner(k));
    } else {
      planners.push_back(k == GpuKernel::max_port ? profile::make_reference_planner() : profile::make_fast_cpu_planner());
    }
  }
  return planners;
}

// Progress on stderr, only on a terminal and only once a run has taken a while.
class Progress {
 public:
  explicit Progress(uint64_t total) : total_(total), enabled_(::isatty(2) != 0), start_(Clock::now()) {}
  void update(uint64_t done, uint64_t failed) {
    if (!enabled_ || (done & 255) != 0) return;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    shown_ = true;
    print_stderr(fmt::format("\rverify: {}/{} cases, {} failed", done, total_, failed));
  }
  ~Progress() {
    if (shown_) print_stderr(fmt::format("\r\033[K"));
  }

 private:
  uint64_t total_;
  bool enabled_;
  bool shown_ = false;
  Clock::time_point start_, last_;
};

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

// A failure's line: the case, the planner, the generator's shape (or the plan's policy), the problem.
void print_failure(const check::VerifyCaseRecord& rec) {
  fmt::print("  FAIL {} [{}]{}: {}\n", io::printable(rec.name), io::printable(rec.planner),
             rec.shape.empty() ? "" : " (" + io::printable(rec.shape) + ")", io::printable(rec.detail));
}

class Verifier {
 public:
  // `policy`: what the planners are judged against; max's reference, or another policy's own plan.
  Verifier(const VerifyOptions& opt, const policies::Policy& policy, std::vector<std::unique_ptr<profile::Planner>> planners,
           check::VerifyRun& run)
      : opt_(opt), policy_(policy), memory_{opt.memory_limit.bytes, opt.memory_limit.given}, planners_(std::move(planners)),
        run_(run) {}

  // Checks one scenario with every planner; returns the number of failures.
  uint64_t check(const check::Scenario& s, const std::string& group, const std::string& shape) {
    uint64_t failures = 0;
    for (auto& planner : planners_) {
      profile::PhaseTimer timer;
      const check::CaseResult r = policy_.kind == policies::PolicyKind::max
                                      ? check::check_case(s, *planner, timer)
                                      : policies::check_policy_port(s, *planner, policy_, memory_, timer);
      check::VerifyCaseRecord rec{group, s.name, shape, planner->name(), r.passed, r.refused, r.detail, "", 0, 0};
      for (const auto& [phase, us] : timer.phases()) (phase == "reference" || phase == "check" ? rec.check_us : rec.plan_us) += us;
      if (!r.passed) {
        ++failures;
        report_failure(s, *planner, rec);
      }
      run_.cases.push_back(std::move(rec));
    }
    return failures;
  }

  void report_failure(const check::Scenario& s, profile::Planner& planner, check::VerifyCaseRecord& rec) {
    ++failures_reported_;
    if (failures_reported_ > opt_.max_reproducers) {
      if (failures_reported_ == opt_.max_reproducers + 1)
        fmt::print("  (further failures are counted, not shown or shrunk)\n");
      return;
    }
    print_failure(rec);
    fmt::print("       batch: B={} P={} N={} M={}\n", s.batch.batch_size(), s.batch.page_size,
               s.batch.buffer_token_size, s.batch.max_chunks);
    rec.reproducer = write_reproducer(s, planner, rec.detail);
    if (!rec.reproducer.empty())
      fmt::print("       reproducer: {}{}\n", io::printable(rec.reproducer),
                 rec.reproducer == s.file ? " (itself: nothing smaller fails)" : "");
  }

  // Shrinks the failing case and writes it, with the reference's plan as its expected block.
  std::string write_reproducer(const check::Scenario& s, profile::Planner& planner, const std::string& detail) {
    const std::optional<check::Scenario> small =
        policy_.kind == policies::PolicyKind::max
            ? check::make_reproducer(s, planner, detail, opt_.limits())
            : policies::make_port_reproducer(s, planner, policy_, memory_, detail, opt_.limits());
    if (!small) return "";  // shrinking was cut short: on Ctrl-C nothing is written
    // A reproducer run again that shrinks no further is its own: no x-repro-repro.json beside it.
    // (Another failing file that does not shrink still gets one in --repro-dir, where a gate collects them.)
    const Batch& a = s.batch;
    const Batch& b = small->batch;
    if (check::is_reproducer(s) && !s.file.empty() && a.page_size == b.page_size && a.buffer_token_size == b.buffer_token_size &&
        a.max_chunks == b.max_chunks && a.cache_lengths == b.cache_lengths && a.input_row_offsets == b.input_row_offsets)
      return s.file;
    std::error_code ec;
    fs::create_directories(opt_.repro_dir, ec);
    const std::string path = (fs::path(opt_.repro_dir) / (safe_name(small->name) + ".json")).string();
    try {  // a side output kept whatever the outcome (the run fails): written now, not staged
      write_file_now(path, io::scenario_to_json(*small), "--repro-dir");
    } catch (const std::runtime_error& e) {
      note(fmt::format("could not write the reproducer: {}", e.what()));
      return "";
    }
    return path;
  }

 private:
  const VerifyOptions& opt_;
  policies::Policy policy_;
  policies::PortMemory memory_;
  std::vector<std::unique_ptr<profile::Planner>> planners_;
  check::VerifyRun& run_;
  size_t failures_reported_ = 0;
};

void print_group(const std::string& group, uint64_t cases, uint64_t failed, double seconds) {
  fmt::print("{}  {:<48} {:>7} case{} {:>10.3f} ms{}\n", failed ? "FAIL" : "PASS", io::printable(group), cases, cases == 1 ? " " : "s",
             seconds * 1e3, failed ? fmt::format("  ({} failed)", failed) : "");
}

void write_reports(const VerifyOptions& opt, const check::VerifyRun& run) {
  if (!opt.report.empty()) write_output(opt.report, check::format_verify_json(run));
  if (!opt.junit.empty()) write_output(opt.junit, check::format_verify_junit(run));
}

int verify_plan_file(const VerifyOptions& opt) {
  if (opt.paths.size() != 1)
    throw InputError("--plan: give exactly one scenario file: mlaplan verify --plan TABLES.json SCENARIO.json");
  if (opt.fuzz) throw InputError("--plan: cannot be combined with --fuzz");
  std::vector<check::Scenario> scenarios = select_scenarios(io::load_scenario_file(opt.paths[0]), opt.scenario, opt.paths[0]);
  if (scenarios.empty())
    throw InputError(fmt::format("{}: holds no scenario (an empty \"scenarios\" list); give the scenario the tables belong to",
                                 opt.paths[0]));
  // Every scenario the plans may belong to, before the plan file is read into tables.
  for (const check::Scenario& s : scenarios) io::require_tables_fit(s, opt.memory_limit.bytes, opt.memory_limit.given);
  const auto start = Clock::now();
  const io::PlanFile file = io::load_plan_file(opt.plan_file);
  // A guided plan's cost file is read to choose again: an input, which --report and --junit may not be.
  std::set<std::string> guides;
  for (const io::PlanEntry& e : file.plans) {
    const size_t colon = e.policy.find(':');
    const std::string guide = colon != std::string::npos && iequal(e.policy.substr(0, 6), "guided") ? e.policy.substr(colon + 1)
                                                                                                    : e.guide_cost_file;
    if (guides.insert(guide).second) outputs().claim_input(guide, fmt::format("the cost file of {}'s guided plan", opt.plan_file));
  }
  check::VerifyRun run;
  run.backend = "external";
  run.planners = {opt.plan_file};
  run.cases = policies::check_plan_file(file, scenarios, {opt.plan_file, opt.paths[0], !opt.scenario.empty()},
                                       [](const check::VerifyCaseRecord& rec) {
                                         if (!rec.passed) print_failure(rec);
                                       });
  const uint64_t failed = run.failed();
  run.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  print_group(opt.plan_file + " vs " + opt.paths[0], run.cases.size(), failed, run.wall_seconds);
  fmt::print("{} passed, {} failed\n", run.cases.size() - failed, failed);
  write_reports(opt, run);
  return failed ? kWrongPlan : kOk;
}

// Before any work: no report may be an input or the other report, and each folder must take a file.
void claim_files(const VerifyOptions& opt) {
  if (!opt.plan_file.empty()) {
    outputs().claim_input(opt.plan_file, "the --plan file");
    for (const std::string& p : opt.paths) outputs().claim_input(p, "the scenario file");
  } else {
    for (const std::string& f : scenario_files(opt.paths)) outputs().claim_input(f, "a scenario file verified");
  }
  // stdout carries verify's summary, so a report there would be mixed into it.
  for (const auto& [path, option] : {std::pair{opt.report, "--report"}, std::pair{opt.junit, "--junit"}})
    if (path == "-")
      throw InputError(fmt::format("{} -: stdout carries verify's summary, which would be mixed into the report; give {} a "
                                   "file name (or /dev/stdout to mix them on purpose)",
                                   option, option));
  outputs().claim_output(opt.report, "--report");
  outputs().claim_output(opt.junit, "--junit");
}

int verify(const VerifyOptions& opt) {
  claim_files(opt);
  // Ctrl-C: while loading, nothing is written (exit 130); later, the case at hand stops, the partial
  // summary is printed and no report is written (exit 130).
  InterruptScope interrupt_scope;
  if (!opt.plan_file.empty() && !opt.external.empty())
    throw InputError("--external: checks a planner by running it; --plan checks tables already made; use one");
  if (!opt.plan_file.empty()) return verify_plan_file(opt);
  const policies::Policy policy = policies::port_policy(opt.policy);
  const bool ported = policy.kind != policies::PolicyKind::max;  // a port of another policy than max
  const bool builtin = opt.paths.empty() && opt.fuzz == 0;
  const uint64_t fuzz = builtin ? kBuiltinFuzz : opt.fuzz;
  const uint64_t seed = opt.seed ? *opt.seed : std::random_device{}();

  // Load everything first: bad input stops the run before any planning (exit 2).
  std::vector<std::pair<std::string, std::vector<check::Scenario>>> groups;
  if (builtin) groups.emplace_back("built-in edge cases", check::builtin_edge_cases());
  for (const auto& f : scenario_files(opt.paths)) {
    groups.emplace_back(f, io::load_scenario_file(f));
    // A gate that checked nothing must not pass.
    if (groups.back().second.empty())
      throw InputError(fmt::format("{}: holds no scenario (an empty \"scenarios\" list), so there is nothing to verify; "
                                   "add scenario objects to it, or drop it and check random batches with --fuzz N",
                                   f));
  }

  // A planner built for fixed page sizes or max_chunks sees only batches it admits.
  const check::BatchLimits limits = opt.limits();
  uint64_t skipped = 0;
  for (auto& [file, scenarios] : groups) {
    const size_t before = scenarios.size();
    scenarios.erase(std::remove_if(scenarios.begin(), scenarios.end(), [&](const check::Scenario& s) { return !limits.admits(s.batch); }),
                    scenarios.end());
    skipped += before - scenarios.size();
  }
  if (skipped && opt.fuzz == 0 && std::all_of(groups.begin(), groups.end(), [](const auto& g) { return g.second.empty(); }))
    throw InputError(fmt::format("--only-page-sizes/--only-max-chunks: all {} scenarios lie outside them, so there is nothing "
                                 "to verify; widen the lists or add --fuzz N",
                                 skipped));

  // Every scenario to plan within --memory-limit, before any is planned.
  for (const auto& group : groups)
    for (const check::Scenario& s : group.second) io::require_tables_fit(s, opt.memory_limit.bytes, opt.memory_limit.given);
  check::BatchGeneratorOptions gen_options;
  gen_options.max_batch_size = opt.max_batch_size;
  gen_options.large_batch_size = opt.large_batch_size;
  gen_options.limits = limits;
  if (fuzz) require_fuzz_fits(opt, gen_options);

  // Under another policy, a scenario's expected block (max's plan) is not compared: said, not dropped silently.
  uint64_t with_expected = 0;
  for (const auto& group : groups)
    for (const check::Scenario& s : group.second) with_expected += ported && s.expected.has_value();

  check::VerifyRun run;
  auto planners = make_planners(opt, policy, &run.backend);
  for (const auto& p : planners) run.planners.push_back(p->name());
  if (fuzz) {
    run.seed = seed;
    run.fuzz = fuzz;
  }
  if (ported)
    fmt::print("mlaplan verify: external planner '{}', a port of policy {}, on the other side of a pipe; each plan checked "
               "against mlaplan's plan of that policy (as run --policy {} makes it) and its invariants\n",
               io::printable(opt.external), policy.name(), policies::port_policy_word(policy));
  else
    fmt::print("mlaplan verify: {} on the {}; each plan checked against the reference, the properties and any expected block\n",
               io::printable(opt.external.empty() ? fmt::format("{}", fmt::join(run.planners, ", "))
                                              : fmt::format("external planner '{}'", opt.external)),
               run.backend == "gpu" ? "GPU" : run.backend == "cpu" ? "CPU" : "other side of a pipe");
  if (with_expected)
    note(fmt::format("{} {} an expected block, max's plan, which is not compared under --policy {}", with_expected,
                     with_expected == 1 ? "scenario carries" : "scenarios carry", opt.policy));
  if (fuzz) fmt::print("fuzz: {} random batches from --seed {}\n", fuzz, seed);
  if (!limits.any())
    fmt::print("only page_size in {{{}}} and max_chunks in {{{}}}{}\n", fmt::join(limits.page_sizes, ","),
               fmt::join(limits.max_chunks, ","), skipped ? fmt::format("; {} scenarios outside them skipped", skipped) : "");

  uint64_t total = fuzz;
  for (const auto& g : groups) total += g.second.size();
  bool interrupted = false;
  Progress progress(total * planners.size());
  Verifier verifier(opt, policy, std::move(planners), run);
  const auto start = Clock::now();
  uint64_t done = 0, failed = 0;
  for (const auto& [group, scenarios] : groups) {
    const auto t0 = Clock::now();
    uint64_t group_failed = 0;
    for (const check::Scenario& s : scenarios) {
      if ((interrupted = interrupted || profile::stop_requested())) break;
      try {
        group_failed += verifier.check(s, group, "");
      } catch (const Interrupted&) {  // Ctrl-C inside a large case: the planners and checks stop too
        interrupted = true;
        break;
      }
      progress.update(++done, failed + group_failed);
    }
    failed += group_failed;
    print_group(group, scenarios.size(), group_failed, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  if (fuzz) {
    const auto t0 = Clock::now();
    check::BatchGenerator gen(seed, gen_options);
    uint64_t group_failed = 0;
    const std::string group = fmt::format("fuzz (seed {})", seed);
    check::Scenario s;
    uint64_t checked = 0;
    for (uint64_t i = 0; i < fuzz; ++i, ++checked) {
      if ((interrupted = interrupted || profile::stop_requested())) break;
      std::string shape;
      try {  // Ctrl-C inside a large batch: drawing, planning and checking it stop too
        s.batch = gen.next(&shape);
        s.name = fmt::format("fuzz-{}-{}", seed, i);
        group_failed += verifier.check(s, group, shape);
      } catch (const Interrupted&) {
        interrupted = true;
        break;
      }
      progress.update(++done, failed + group_failed);
    }
    failed += group_failed;
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    print_group(fmt::format("{} random batches (seed {}, {:.0f} cases/s)", checked, seed, checked / seconds), checked,
                group_failed, seconds);
  }
  run.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (interrupted) {  // a partial run proves nothing: no reports, exit 130 whatever was found so far
    fmt::print("interrupted after {} of {} cases: {} passed, {} failed\n", run.cases.size(), total * run.planners.size(),
               run.cases.size() - failed, failed);
    error("verify: interrupted; no report written");
    return kInterrupted;
  }
  // A drawn seed is the one way to draw these batches again: the last line says it.
  fmt::print("{} passed, {} failed{}\n", run.cases.size() - failed, failed,
             fuzz && !opt.seed ? fmt::format(" (random batches from --seed {}; give it to rerun them)", seed) : "");
  write_reports(opt, run);
  return failed ? kWrongPlan : kOk;
}

}  // namespace

void add_verify_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check a planner: every scenario in PATHs (folders recursively, skipping hidden files and folders such as .git) plus "
      "--fuzz random batches, or with no PATH and no --fuzz the built-in edge cases and 1,000 random batches");
  cmd->add_option("paths", opt->paths, "Scenario files and folders (*.json in any case; hidden ones, named .*, only when given by name)")->type_name("PATH");
  cmd->add_option("--fuzz", opt->fuzz, "Also check N random batches aimed at the shapes that break planners")
      ->transform(whole_number(0, 1000000000));
  cmd->add_option_function<uint64_t>("--seed", [opt](const uint64_t& s) { opt->seed = s; },
                                     "Seed of the random batches (default: random, and printed so any run can be repeated)")
      ->transform(whole_number(0, UINT64_MAX));
  cmd->add_option("--max-batch-size", opt->max_batch_size, "Largest B of ordinary random batches (at most 16384)")
      ->default_str("64")
      ->transform(whole_number(1, UINT32_MAX));
  cmd->add_option("--large-batch-size", opt->large_batch_size, "Largest B of the random large-batch shape (at most 1048576)")
      ->default_str("4096")
      ->transform(whole_number(1, UINT32_MAX));
  add_backend_option(*cmd, opt->backend);
  cmd->add_option("--kernel", opt->kernel,
                  "Which planner: fast (GPU fast kernel; on the CPU the closed-form planner), max-port (GPU port of MAX's "
                  "kernel; on the CPU the reference loop) or all")
      ->transform(one_of({"fast", "max-port", "all"}, kKernelAliases))
      ->default_str("fast");
  cmd->add_option("--external", opt->external,
                  "Check another implementation instead of the built-in planners: a command (run with /bin/sh -c) that "
                  "reads one batch per line on stdin and answers one plan per line on stdout (docs/external.md; "
                  "scripts/external/seed_port.py is an example)")
      ->type_name("CMD");
  cmd->add_option("--policy", opt->policy,
                  "With --external: the policy the command ports, sent on each request (docs/external.md): max, packed, "
                  "packed/trtllm, even-split, even-split/sglang, or an engine: vllm, sglang, trtllm")
      ->type_name("NAME")
      ->default_str("max");
  cmd->add_option("--external-timeout", opt->external_timeout, "With --external: seconds to wait for each answer")
      ->default_str("60")
      ->check(real_number(0.001, 86400.0, "seconds"));
  // Each LIST is split here rather than by CLI11's delimiter, which drops empty items ("1,,2") and,
  // for "," alone, takes the next argument as the value.
  auto whole_list = [cmd](const char* name, std::vector<uint32_t>& into, uint64_t hi, const std::string& help) {
    cmd->add_option_function<std::vector<std::string>>(
           name,
           [&into, name, hi](const std::vector<std::string>& lists) {
             for (const std::string& list : lists)
               for (uint64_t v : whole_number_list(list, name, 1, hi)) into.push_back(static_cast<uint32_t>(v));
           },
           help)
        ->allow_extra_args(false)  // one LIST: a path after it is not a page size
        ->type_name("LIST");
  };
  whole_list("--only-page-sizes", opt->only_page_sizes, 1u << 30,
             "Check only batches of these page sizes (comma-separated): random batches are drawn from them, "
             "reproducers keep to them, other scenarios are skipped. For a planner built for fixed values, like MAX's");
  whole_list("--only-max-chunks", opt->only_max_chunks, 1u << 20,
             "Check only batches with these max_chunks (comma-separated), as --only-page-sizes does");
  cmd->add_option("--plan", opt->plan_file,
                  "Check plans produced elsewhere (JSON as `run --format json` writes it, one plan or {\"scenarios\": "
                  "[...]}, or {\"infeasible\": true}) against the SCENARIO file given: the tables and every fact stated "
                  "(chunks_used, padded_tokens, min_max_chunks, ...); plans are matched to scenarios by name")
      ->type_name("TABLES.json");
  cmd->add_option("--scenario", opt->scenario, "With --plan: check only this scenario of a multi-scenario file (name or index)")
      ->type_name("NAME")
      ->check(scenario_name());
  cmd->add_option("--report", opt->report, "Write every case, its status and timings as JSON to FILE")->type_name("FILE");
  cmd->add_option("--junit", opt->junit, "Write a JUnit XML report (one testcase per case and planner) to FILE")->type_name("FILE");
  add_memory_limit_option(*cmd, opt->memory_limit);
  cmd->add_option("--repro-dir", opt->repro_dir, "Folder for the shrunk reproducers of failures")->type_name("DIR")->default_str(".");
  cmd->add_option("--max-reproducers", opt->max_reproducers, "Failures shown and shrunk in full (the rest are counted)")
      ->default_str("10")
      ->transform(whole_number(0, UINT32_MAX));
  cmd->footer(help_footer(
      "  mlaplan verify scenarios/ --fuzz 100000 --seed 1 --junit verify.xml\n"
      "  mlaplan verify --external \"python3 scripts/external/seed_port.py\" --fuzz 10000\n"
      "  mlaplan verify --external \"python3 scripts/external/packed_port.py\" --policy packed --fuzz 1000\n"
      "  mlaplan verify --external build-max/max-planner --fuzz 100000 \\\n"
      "      --only-page-sizes 1,2,16,64,128,256,1024 --only-max-chunks 1,2,3,4,5,6,8,16,32,64"));
  // Options of one mode only are refused in the others, never dropped: CLI11 checks the plain pairs,
  // the callback the rest.
  CLI::Option* external = cmd->get_option("--external");
  CLI::Option* plan = cmd->get_option("--plan");
  cmd->get_option("--external-timeout")->needs(external);
  cmd->get_option("--policy")->needs(external);
  cmd->get_option("--scenario")->needs(plan);
  for (const char* name : {"--kernel", "--backend"}) cmd->get_option(name)->excludes(external)->excludes(plan);
  for (const char* name : {"--seed", "--max-batch-size", "--large-batch-size", "--repro-dir", "--max-reproducers",
                           "--only-page-sizes", "--only-max-chunks"})
    cmd->get_option(name)->excludes(plan);
  cmd->callback(traced(*cmd, [opt, cmd, &exit_code] {
    // An explicit --fuzz 0 with no PATH asks for nothing; only leaving both out means the built-in suite.
    if (opt->paths.empty() && opt->plan_file.empty() && opt->fuzz == 0 && given(*cmd, "--fuzz"))
      throw InputError("--fuzz 0: nothing to verify (no scenario files and no random batches); give scenario files or a "
                       "positive --fuzz, or neither for the built-in suite");
    if (opt->plan_file.empty()) require_output_folder(opt->repro_dir, "--repro-dir");
    if (!opt->paths.empty() && opt->fuzz == 0 && opt->plan_file.empty())
      for (const char* name : {"--seed", "--max-batch-size", "--large-batch-size"})
        if (given(*cmd, name))
          throw InputError(fmt::format("{}: it shapes the random batches, and scenario files without --fuzz N check "
                                       "none; add --fuzz N or drop {}",
                                       name, name));
    exit_code = verify(*opt);
  }));
}

}  // namespace mlaplan::cli
