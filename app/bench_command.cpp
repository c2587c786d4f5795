// `mlaplan bench`: time every planner over a range of batch sizes, with the GPU's launch and copy
// limits measured in the same run.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli_common.hpp"
#include "commands.hpp"
#include "mlaplan/bench/bench_format.hpp"
#include "mlaplan/bench/bench_report.hpp"
#include "mlaplan/bench/size_list.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/profile/phase_timer.hpp"

namespace mlaplan::cli {

namespace {

struct BenchCliOptions {
  std::string sizes = "1,16,128,1024,16384,1048576";
  std::string kernels = "all";
  std::string mode = "both";
  std::string distribution = "lognormal";
  std::string format = "table";
  std::string output;
  std::string json_output;
  bench::TimedBatchOptions workload;
  bench::StoppingRule rule;
  double max_noise_percent = 0.5;
  bool no_progress = false;
  std::string max;  // --max CMD
  MemoryLimit memory_limit;
};

// Before anything is measured: the largest size's tables and input sets within --memory-limit.
void require_bench_fits(const BenchCliOptions& opt, const std::vector<uint32_t>& sizes) {
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  const uint64_t sets = std::max<uint32_t>(1, opt.workload.input_sets), m = opt.workload.max_chunks;
  auto need = [&](uint64_t b) { return table_bytes(b, m) + sets * 8 * (b + 1); };  // no overflow: b < 2^32, m <= 2^20
  if (need(largest) <= opt.memory_limit.bytes) return;
  const uint64_t per_sequence = table_bytes(0, m) + 8 * sets;  // need(b) = per_sequence x (b + 1)
  const uint64_t fit = std::max<uint64_t>(opt.memory_limit.bytes / per_sequence, 1) - 1;
  throw InputError(fmt::format("--sizes {}: a batch of {} sequences in --max-chunks {} chunks takes {} of tables and {} "
                               "input sets, above {}; use sizes up to {}, a smaller --max-chunks or --input-sets, or "
                               "raise --memory-limit",
                               largest, largest, m, io::format_bytes(need(largest)), sets,
                               io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given), fit));
}

int run_bench_command(const BenchCliOptions& opt) {
  outputs().claim_output(opt.output, "-o");  // before any work: distinct paths, folders that take a file
  outputs().claim_output(opt.json_output, "--json");
  bench::BenchOptions o;
  o.sizes = bench::parse_sizes(opt.sizes);
  require_bench_fits(opt, o.sizes);
  o.kernels = bench::parse_kernels(opt.kernels);
  const auto listed_max = std::find(o.kernels.begin(), o.kernels.end(), bench::Kernel::max);
  if (opt.max.empty() && listed_max != o.kernels.end())
    throw InputError("--kernels: max is MAX's own kernel in another process; give it with --max CMD "
                     "(scripts/max-reference/README.md builds one)");
  if (!opt.max.empty() && listed_max == o.kernels.end()) {  // beside the port it is measured against
    const auto port = std::find(o.kernels.begin(), o.kernels.end(), bench::Kernel::max_port);
    o.kernels.insert(port == o.kernels.end() ? o.kernels.begin() : port + 1, bench::Kernel::max);
  }
  o.max_command = opt.max;
  o.modes = opt.mode == "hot" ? std::vector<bench::Mode>{bench::Mode::hot}
            : opt.mode == "cold" ? std::vector<bench::Mode>{bench::Mode::cold}
                                 : std::vector<bench::Mode>{bench::Mode::hot, bench::Mode::cold};
  o.workload = opt.workload;
  o.workload.distribution = bench::parse_distribution(opt.distribution);
  o.rule = opt.rule;
  o.rule.max_noise = opt.max_noise_percent / 100.0;
  // Progress only for a person watching: never into a redirected log or CI output.
  if (!opt.no_progress && ::isatty(STDERR_FILENO)) {
    o.progress = [](const std::string& what) { print_stderr(fmt::format("\r\033[Kmlaplan: bench: {}", what)); };
  }

  bench::BenchReport report;
  InterruptScope interrupt_scope;  // Ctrl-C: drop the measurement at hand, print the finished rows, exit 130
  try {
    report = bench::run_bench(o);
  } catch (const bench::PlanMismatch& e) {
    if (o.progress) print_stderr(fmt::format("\r\033[K"));
    error(e.what());
    return kWrongPlan;
  }
  if (o.progress) print_stderr(fmt::format("\r\033[K"));
  // A bench that could measure none of what was asked must not pass with an empty table.
  const auto unavailable = [&report](bench::Kernel k) {
    return std::any_of(report.unavailable.begin(), report.unavailable.end(), [k](const bench::Unavailable& u) { return u.kernel == k; });
  };
  if (!report.interrupted && std::all_of(o.kernels.begin(), o.kernels.end(), unavailable)) {
    std::string why;
    bool only_max = true;
    for (const bench::Unavailable& u : report.unavailable) {
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", bench::to_string(u.kernel), u.reason);
      only_max = only_max && u.kernel == bench::Kernel::max;
    }
    if (only_max)  // the command given is what failed: bad input
      throw InputError(fmt::format("--max {}: nothing to measure, max is unavailable ({}); give a command that speaks "
                                   "the timing requests of docs/external.md",
                                   opt.max, why));
    throw DeviceError(fmt::format("bench: nothing to measure, every kernel asked for is unavailable ({}); time the CPU "
                                  "paths with --kernels cpu,cpu-fast",
                                  why));
  }
  // Each kernel that cannot run is said once: in the table's lines where the table is on the
  // terminal, else on stderr beside the file or the JSON.
  if (opt.format != "table" || !opt.output.empty())
    for (const bench::Unavailable& u : report.unavailable) note(fmt::format("{}: unavailable: {}", bench::to_string(u.kernel), u.reason));
  if (report.sm_mhz_before && report.sm_mhz_after && *report.sm_mhz_after < 0.9 * *report.sm_mhz_before)
    print_stderr(fmt::format("mlaplan: warning: the SM clock fell from {:.0f} to {:.0f} MHz during the run (throttling?); "
               "later rows may be slow\n", *report.sm_mhz_before, *report.sm_mhz_after));

  profile::PhaseTimer timer;
  std::string text;
  {
    auto scope = timer.phase("format");
    text = opt.format == "json" ? bench::format_bench_json(report)
           : opt.format == "csv" ? bench::format_bench_csv(report)
           : opt.format == "md"  ? bench::format_bench_markdown(report)
                                 : bench::format_bench_table(report);
  }
  auto scope = timer.phase("write");
  if (report.interrupted) {  // the finished rows on stdout for the person who pressed Ctrl-C; no output file
    write_output("", text);
    error(fmt::format("bench: interrupted after {} measurements; {}", report.rows.size(),
                      opt.output.empty() && opt.json_output.empty() ? "the rows above are complete" : "no output file written"));
    return kInterrupted;
  }
  write_output(opt.output, text);
  if (!opt.json_output.empty()) write_output(opt.json_output, opt.format == "json" ? text : bench::format_bench_json(report));
  return kOk;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<BenchCliOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Time every planner (GPU kernels, CPU paths) over batch sizes, with the launch and copy limits");
  cmd->add_option("--sizes", opt->sizes,
                  "Batch sizes: a list (1,16,128), ranges FIRST:LAST:xFACTOR (1:1048576:x4) or FIRST:LAST:+STEP, or a mix")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--kernels", opt->kernels,
                  "What to time, comma-separated: max-port (the GPU port of MAX's kernel), fast, graph (fast replayed from a CUDA "
                  "graph), cpu (the reference), "
                  "cpu-fast, cpu+copy (copy to host, plan, copy back), empty (an empty launch), copy (device memcpy), max (needs --max); or all (all but max)")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--max", opt->max,
                  "Also time MAX's own mla_prefill_plan (the max row, beside max-port): a command speaking the timing requests "
                  "of docs/external.md, such as scripts/max-reference's build-max/max-planner")
      ->type_name("CMD");
  cmd->add_option("--mode", opt->mode, "hot (back-to-back launches), cold (caches flushed before each sample) or both")
      ->transform(one_of({"hot", "cold", "both"}))
      ->capture_default_str();
  add_memory_limit_option(*cmd, opt->memory_limit);
  cmd->add_option("--max-chunks", opt->workload.max_chunks, "M, chunk rows in the tables")->transform(whole_number(1, 1u << 20))->capture_default_str();
  cmd->add_option("--page-size", opt->workload.page_size, "P, the KV cache page size")->transform(whole_number(1, 1u << 20))->capture_default_str();
  cmd->add_option("--buffer-tokens", opt->workload.buffer_tokens, "N, rows in the buffer (default: chosen per size from --fill)")
      ->transform(whole_number(1, 0x7fffffffu));
  cmd->add_option("--fill", opt->workload.fill, "Without --buffer-tokens: N is chosen so a batch uses this share of the M chunks")
      ->check(real_number(0.01, 1.0))
      ->capture_default_str();
  cmd->add_option("--distribution", opt->distribution, "Sequence lengths: fixed, uniform, lognormal (sigma 1) or zipf (s 1.1)")
      ->transform(one_of({"fixed", "uniform", "lognormal", "zipf"}))
      ->capture_default_str();
  cmd->add_option("--mean-length", opt->workload.mean_length, "Mean tokens per sequence (cached + new), before page padding")
      ->transform(whole_number(1, 1u << 30))
      ->capture_default_str();
  cmd->add_option("--seed", opt->workload.seed, "Seed of the random sequence lengths")
      ->transform(whole_number(0, UINT64_MAX))
      ->capture_default_str();
  cmd->add_option("--input-sets", opt->workload.input_sets, "Input sets per size, rotated while timing")
      ->transform(whole_number(1, 64))
      ->capture_default_str();
  cmd->add_option("--max-time", opt->rule.max_time_s, "Seconds per measurement at most (each kernel, size and mode)")
      ->check(real_number(0.001, 600.0, "seconds"))
      ->capture_default_str();
  cmd->add_option("--min-samples", opt->rule.min_samples, "Samples per measurement at least")->transform(whole_number(3, 1000000))->capture_default_str();
  cmd->add_option("--max-noise", opt->max_noise_percent, "Stop sampling once the median is known to this many percent (95% CI)")
      ->check(real_number(0.001, 100.0, "percent"))
      ->capture_default_str();
  cmd->add_option("--format", opt->format, "Output: table (for people), md (Markdown), csv or json (for scripts/plot_bench.py)")
      ->transform(one_of({"table", "md", "csv", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "Write the output to FILE instead of stdout (atomically)")->type_name("FILE");
  cmd->add_option("--json", opt->json_output, "Also write the JSON report to FILE, whatever --format is (for scripts/plot_bench.py)")
      ->type_name("FILE");
  cmd->add_flag("--no-progress", opt->no_progress, "No progress line on stderr (it is shown only when stderr is a terminal)");
  cmd->footer(help_footer(
      "  mlaplan bench --sizes 1:4194304:x4 --mean-length 512 --kernels fast,graph,empty,copy --json bench.json\n"
      "  mlaplan bench --max build-max/max-planner --sizes 1,1024,1048576 --format md\n"
      "  mlaplan bench --max \"python3 scripts/external/seed_port.py\" --kernels cpu --sizes 1,64   (no GPU needed)"));
  cmd->get_option("--fill")->excludes(cmd->get_option("--buffer-tokens"));  // --fill only chooses N when it is not given
  cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = run_bench_command(*opt); }));
}

}  // namespace mlaplan::cli
