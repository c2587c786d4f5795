#include "mlaplan/bench/bench_format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "mlaplan/build_info.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/table_builder.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/profile/json_text.hpp"

namespace mlaplan::bench {

namespace {

std::string us(double x) {
  if (x < 10) return fmt::format("{:.3f}", x);
  if (x < 1000) return fmt::format("{:.1f}", x);
  return fmt::format("{:.0f}", x);
}
std::string ratio(const std::optional<double>& x) {
  if (!x) return "-";
  return *x < 10 ? fmt::format("{:.2f}x", *x) : fmt::format("{:.0f}x", *x);
}
std::string percent(double x) { return fmt::format("{:.1f}%", 100.0 * x); }
std::string gbps(double x) { return x < 10 ? fmt::format("{:.2f}", x) : fmt::format("{:.0f}", x); }

// A time in the unit that reads best: "73.0 ns", "7.05 us", "454.6 us", "325.8 ms", "1.20 s".
std::string scaled_time(double us_value) {
  const auto digits = [](double v) { return v < 10 ? 2 : v < 100 ? 1 : 0; };
  if (us_value < 1) return fmt::format("{:.{}f} ns", us_value * 1e3, digits(us_value * 1e3));
  if (us_value < 1e3) return fmt::format("{:.{}f} us", us_value, digits(us_value));
  if (us_value < 1e6) return fmt::format("{:.{}f} ms", us_value / 1e3, digits(us_value / 1e3));
  return fmt::format("{:.2f} s", us_value / 1e6);
}

// Whether a row stopped at its time cap before its median was known to the noise target.
bool missed_target(const BenchRow& r, const StoppingRule& rule) { return r.measurement.stats.noise > rule.max_noise; }

std::vector<std::string> cells(const BenchRow& r, const StoppingRule& rule) {
  const SampleStats& s = r.measurement.stats;
  return {std::to_string(r.size),
          to_string(r.kernel),
          to_string(r.mode),
          scaled_time(s.median),
          fmt::format("{:.2f}%{}", 100.0 * s.noise, missed_target(r, rule) ? "*" : ""),
          std::to_string(s.samples),
          gbps(r.gbps),
          r.pct_copy ? fmt::format("{:.1f}%", *r.pct_copy) : "-",
          ratio(r.x_empty),
          ratio(r.x_roofline),
          ratio(r.speedup_vs_max_port),
          ratio(r.speedup_vs_cpu_copy)};
}

// The row's names to the left, its figures to the right.
io::TableBuilder table_of(const BenchReport& report) {
  using io::Align;
  io::TableBuilder t({{"batch", Align::left},
                      {"kernel", Align::left},
                      {"mode", Align::left},
                      {"median", Align::right},
                      {"CI 95%", Align::right},
                      {"samples", Align::right},
                      {"GB/s", Align::right},
                      {"% copy", Align::right},
                      {"x empty", Align::right},
                      {"x roofline", Align::right},
                      {"vs max-port", Align::right},
                      {"vs cpu+copy", Align::right}});
  for (const BenchRow& r : report.rows) t.add_row(cells(r, report.options.rule));
  return t;
}

// Under the table: what a mark means, a busy machine where the rows say so, and the answer (as
// hyperfine and nvbench close): per mode, at the largest batch, which planner is fastest and by how much.
std::string closing(const BenchReport& r) {
  const StoppingRule& rule = r.options.rule;
  std::string out;
  size_t missed = 0, hot = 0, hot_missed = 0;
  for (const BenchRow& row : r.rows) {
    missed += missed_target(row, rule) ? 1 : 0;
    // A cold sample flushes the caches first, so few fit the cap on any machine: only the hot
    // rows' misses say the machine is busy.
    if (row.mode == Mode::hot) {
      ++hot;
      hot_missed += missed_target(row, rule) ? 1 : 0;
    }
  }
  out += fmt::format("median: time per plan; CI 95%: how well the median is known (its 95% confidence interval){}\n",
                     missed ? fmt::format("; *: stopped at the {:g} s cap (--max-time) before {:.2f}% (--max-noise)",
                                          rule.max_time_s, 100.0 * rule.max_noise)
                            : "");
  if (hot_missed >= 2 && hot_missed * 4 >= hot)
    out += fmt::format("note: {} of {} hot rows stopped at their time cap before the noise target: the machine may be busy; "
                       "rerun on a quiet one, or raise --max-time\n",
                       hot_missed, hot);
  for (const Mode m : {Mode::hot, Mode::cold}) {
    uint32_t largest = 0;
    for (const BenchRow& row : r.rows)
      if (row.mode == m) largest = std::max(largest, row.size);
    std::vector<const BenchRow*> at;
    for (const BenchRow& row : r.rows)
      if (row.mode == m && row.size == largest && !is_limit(row.kernel)) at.push_back(&row);
    if (at.size() < 2) continue;
    std::sort(at.begin(), at.end(), [](const BenchRow* a, const BenchRow* b) {
      return a->measurement.stats.median < b->measurement.stats.median;
    });
    std::string others;
    for (size_t i = 1; i < at.size(); ++i)
      others += fmt::format("{}{:.2f}x faster than {}", i == 1 ? "" : ", ",
                            at[i]->measurement.stats.median / at[0]->measurement.stats.median, to_string(at[i]->kernel));
    out += fmt::format("batch {}, {}: {} is fastest ({}), {}\n", largest, to_string(m), to_string(at[0]->kernel),
                       scaled_time(at[0]->measurement.stats.median), others);
  }
  return io::wrap_lines(out);
}

// The lines above the table: where and on what it ran, and the limits.
std::vector<std::string> preamble(const BenchReport& r) {
  const auto& w = r.options.workload;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("mlaplan {} bench on {}", build_info().version,
                              r.host_device == "none" ? "the CPU (no GPU in use)" : r.host_device));
  lines.push_back(fmt::format("workload: {} lengths, mean {} tokens, page_size {}, max_chunks {}, {}, {} input sets, seed {}",
                              to_string(w.distribution), w.mean_length, w.page_size, w.max_chunks,
                              w.buffer_tokens ? fmt::format("buffer_tokens {}", w.buffer_tokens)
                                              : fmt::format("buffer_tokens chosen to fill {:.0f}% of the chunks", 100 * w.fill),
                              w.input_sets, w.seed));
  lines.push_back(fmt::format("stopping: median known to {:.2f}% (95% CI) after >= {} samples, or {} s per measurement",
                              100 * r.options.rule.max_noise, r.options.rule.min_samples, r.options.rule.max_time_s));
  if (r.sm_mhz_before)
    lines.push_back(fmt::format("SM clock: {:.0f} MHz before, {:.0f} MHz after (rated {:.0f} MHz)", *r.sm_mhz_before,
                                r.sm_mhz_after.value_or(0), r.sm_mhz_max.value_or(0)));
  if (r.empty_hot) lines.push_back(fmt::format("empty launch (hot): {} us median, spread {}", us(r.empty_hot->stats.median), percent(r.empty_hot->stats.spread())));
  if (r.empty_cold) lines.push_back(fmt::format("empty launch (cold): {} us median, spread {}", us(r.empty_cold->stats.median), percent(r.empty_cold->stats.spread())));
  if (r.empty_graph_hot) lines.push_back(fmt::format("empty graph launch (hot): {} us median, spread {}", us(r.empty_graph_hot->stats.median), percent(r.empty_graph_hot->stats.spread())));
  if (r.empty_graph_cold) lines.push_back(fmt::format("empty graph launch (cold): {} us median, spread {}", us(r.empty_graph_cold->stats.median), percent(r.empty_graph_cold->stats.spread())));
  if (r.copy)
    lines.push_back(fmt::format("device copy: {:.0f} GB/s (read + write, {:.0f} MiB each way, {} us median, spread {})", r.copy->gbps(),
                                r.copy->bytes / 2 / (1 << 20), us(r.copy->time.stats.median), percent(r.copy->time.stats.spread())));
  if (r.write)
    lines.push_back(fmt::format("write-only: {:.0f} GB/s (memset of {:.0f} MiB, {} us median, spread {}); roofline = empty launch "
                                "(the empty graph for graph) + the tables' bytes at this bandwidth + the inputs' at the copy's",
                                r.write->gbps(), r.write->bytes / (1 << 20), us(r.write->time.stats.median), percent(r.write->time.stats.spread())));
  if (!r.max_info.empty()) lines.push_back(fmt::format("max: {} (through {})", r.max_info, r.options.max_command));
  for (const Unavailable& u : r.unavailable) lines.push_back(fmt::format("{}: unavailable: {}", to_string(u.kernel), u.reason));
  return lines;
}

}  // namespace

std::string format_bench_table(const BenchReport& report) {
  std::string out;
  // The preamble quotes the --max command, its info answer and failure reasons: escaped for the terminal,
  // and wrapped within 120 columns as the closing lines are.
  for (const std::string& line : preamble(report)) out += io::printable(line) + "\n";
  return io::wrap_lines(out) + "\n" + table_of(report).aligned() + closing(report);
}

std::string format_bench_markdown(const BenchReport& report) {
  std::string out;
  for (const std::string& line : preamble(report)) out += "- " + io::printable(line) + "\n";
  return out + "\n" + table_of(report).markdown() + "\n" + closing(report);
}

std::string format_bench_csv(const BenchReport& report) {
  std::string out =
      "batch_size,kernel,mode,median_us,min_us,max_us,p25_us,p75_us,spread,iqr,noise,samples,launches_per_sample,buffer_tokens,"
      "padded_tokens,bytes,gbps,pct_copy,x_empty,roofline_us,x_roofline,speedup_vs_max_port,speedup_vs_cpu_copy\n";
  auto opt = [](const std::optional<double>& x) { return x ? fmt::format("{:.6g}", *x) : std::string(); };
  for (const BenchRow& r : report.rows) {
    const SampleStats& s = r.measurement.stats;
    out += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{},{:.0f},{:.6g},{},{},{},{},{},{}\n", r.size,
                       to_string(r.kernel), to_string(r.mode), s.median, s.min, s.max, s.p25, s.p75, s.spread(), s.iqr(), s.noise, s.samples,
                       r.measurement.launches_per_sample, r.buffer_tokens, r.padded_tokens, r.bytes, r.gbps, opt(r.pct_copy),
                       opt(r.x_empty), opt(r.roofline_us), opt(r.x_roofline), opt(r.speedup_vs_max_port), opt(r.speedup_vs_cpu_copy));
  }
  return out;
}

std::string format_bench_json(const BenchReport& report) {
  using nlohmann::json;
  auto stats = [](const Measurement& m) {
    const SampleStats& s = m.stats;
    return json{{"median_us", s.median}, {"min_us", s.min},     {"max_us", s.max},         {"p25_us", s.p25},
                {"p75_us", s.p75},       {"mean_us", s.mean},   {"spread", s.spread()},    {"iqr", s.iqr()},  {"noise", s.noise},
                {"samples", s.samples},  {"launches_per_sample", m.launches_per_sample}, {"elapsed_s", m.elapsed_s}};
  };
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  const auto& o = report.options;
  json settings = {{"sizes", o.sizes},
                   {"modes", json::array()},
                   {"kernels", json::array()},
                   {"distribution", to_string(o.workload.distribution)},
                   {"mean_length", o.workload.mean_length},
                   {"page_size", o.workload.page_size},
                   {"max_chunks", o.workload.max_chunks},
                   {"buffer_tokens", o.workload.buffer_tokens ? json(o.workload.buffer_tokens) : json(nullptr)},
                   {"fill", o.workload.fill},
                   {"seed", o.workload.seed},
                   {"input_sets", o.workload.input_sets},
                   {"min_samples", o.rule.min_samples},
                   {"max_noise", o.rule.max_noise},
                   {"max_time_s", o.rule.max_time_s}};
  for (Mode m : o.modes) settings["modes"].push_back(to_string(m));
  for (Kernel k : o.kernels) settings["kernels"].push_back(to_string(k));
  json limits = json::object();
  if (report.empty_hot) limits["empty"]["hot"] = stats(*report.empty_hot);
  if (report.empty_cold) limits["empty"]["cold"] = stats(*report.empty_cold);
  if (report.empty_graph_hot) limits["empty_graph"]["hot"] = stats(*report.empty_graph_hot);
  if (report.empty_graph_cold) limits["empty_graph"]["cold"] = stats(*report.empty_graph_cold);
  if (report.copy) limits["copy"] = {{"bytes", report.copy->bytes}, {"gbps", report.copy->gbps()}, {"time", stats(report.copy->time)}};
  if (report.write) limits["write"] = {{"bytes", report.write->bytes}, {"gbps", report.write->gbps()}, {"time", stats(report.write->time)}};
  json unavailable = json::array();
  for (const Unavailable& u : report.unavailable) unavailable.push_back({{"kernel", to_string(u.kernel)}, {"reason", u.reason}});
  json rows = json::array();
  for (const BenchRow& r : report.rows) {
    json row = {{"batch_size", r.size},
                {"kernel", to_string(r.kernel)},
                {"mode", to_string(r.mode)},
                {"buffer_tokens", r.buffer_tokens},
                {"padded_tokens", r.padded_tokens},
                {"bytes", r.bytes},
                {"gbps", r.gbps},
                {"pct_copy", opt(r.pct_copy)},
                {"roofline_us", opt(r.roofline_us)},
                {"x_roofline", opt(r.x_roofline)},
                {"x_empty", opt(r.x_empty)},
                {"speedup_vs_max_port", opt(r.speedup_vs_max_port)},
                {"speedup_vs_cpu_copy", opt(r.speedup_vs_cpu_copy)}};
    row.update(stats(r.measurement));
    rows.push_back(std::move(row));
  }
  const auto& info = build_info();
  json doc = {{"mlaplan_bench", 1},
              {"version", info.version},
              {"cuda", info.cuda ? json(info.cuda_version) : json(nullptr)},
              {"device", report.host_device},
              {"max", report.options.max_command.empty() ? json(nullptr)
                                                          : json{{"command", report.options.max_command}, {"info", report.max_info}}},
              {"settings", settings},
              {"sm_clock_mhz", {{"before", opt(report.sm_mhz_before)}, {"after", opt(report.sm_mhz_after)}, {"rated", opt(report.sm_mhz_max)}}},
              {"limits", limits},
              {"unavailable", unavailable},
              {"rows", rows},
              {"elapsed_s", report.elapsed_s}};
  return profile::json_text(doc, 1) + "\n";
}

}  // namespace mlaplan::bench
