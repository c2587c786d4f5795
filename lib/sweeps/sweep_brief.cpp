// The sweep as a person reads it first (sweep's default output): the answer, then a table within 120
// columns of what decides it, then a short legend; `--format wide` prints every column.
#include <fmt/format.h>

#include <cmath>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/table_builder.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "sweep_cells.hpp"

namespace mlaplan::sweeps {

namespace {

// Milliseconds with the digits a step time needs, or why there is none.
std::string ms_cell(double ms) { return std::isfinite(ms) ? ms_digits(ms) : "refused"; }

bool several_models(const SweepResult& s) {
  for (const SweepRow& r : s.rows)
    if (r.model && (r.model->name != s.rows.front().model->name || r.memory->tp != s.rows.front().memory->tp)) return true;
  return false;
}

bool any_unchunked(const SweepResult& s) {
  for (const SweepRow& r : s.rows)
    if (r.time && r.time->path() != "chunked") return true;
  return false;
}

io::TableBuilder brief_table(const SweepResult& s, double q) {
  using io::Align;
  const bool timed = sweep_has_time(s), memory = !s.rows.empty() && s.rows.front().memory.has_value();
  const bool models = several_models(s), paths = timed && any_unchunked(s);
  const std::string qn = quantile_name(q);
  std::vector<io::TableColumn> c{{"policy", Align::left}, {"buffer", Align::right}, {"M", Align::right}};
  if (timed) {
    for (const std::string& t : {qn + " it", std::string("refused"), std::string("mean ms"), qn + " ms", std::string("over bound")})
      c.push_back({t, Align::right});
    if (paths) c.push_back({"path", Align::left});
  } else {
    for (const char* t : {"mean it", "p50", "p90", "p99", "max", "refused", "fill"}) c.push_back({t, Align::right});
  }
  if (models) c.push_back({"model", Align::left});
  if (memory) {
    c.push_back({"reserves", Align::right});
    c.push_back({"KV tokens", Align::right});
  }
  io::TableBuilder t(std::move(c));
  for (const SweepRow& r : s.rows) {
    std::vector<std::string> cells{io::printable(r.policy.name()), io::format_rows(r.buffer_tokens),
                                   r.max_chunks ? fmt::format("{}", *r.max_chunks) : "-"};
    // The share refused as priced where there is a time (a batch the engine runs whole is not refused by its loop).
    const uint64_t refused_n = r.time ? r.time->refused : r.refused;
    const std::string refused = r.refused > 0 || refused_n > 0
                                    ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(refused_n) / static_cast<double>(r.batches))
                                    : "-";
    if (timed) {
      const TimeStats& ts = *r.time;
      const uint32_t k = r.iterations_at(q);
      cells.push_back(k == UINT32_MAX ? std::string("refused") : fmt::format("{}", k));
      cells.push_back(refused);
      cells.push_back(ms_cell(ts.step_ms(ts.mean_us)));  // a mean over the batches priced would flatter a refusing row
      cells.push_back(ms_cell(ts.step_ms_at(q)));
      cells.push_back(fmt::format("{:.1f}%", 100.0 * ts.over_lower_bound));
      if (paths) cells.push_back(ts.path());
    } else {
      for (const std::string& v : {fmt::format("{:.2f}", r.mean_iterations), fmt::format("{}", r.p50), fmt::format("{}", r.p90),
                                   fmt::format("{}", r.p99), fmt::format("{}", r.max_iterations)})
        cells.push_back(v);
      cells.push_back(refused);
      cells.push_back(fmt::format("{:.1f}%", 100.0 * r.mean_fill));
    }
    if (models) cells.push_back(fmt::format("{} TP{}", io::printable(r.model->name), r.memory->tp));
    if (memory) {
      const uint64_t bytes = reserved_bytes(r);
      cells.push_back(io::format_bytes(bytes));
      cells.push_back(with_commas(r.memory->kv_cache_tokens(bytes)));
    }
    t.add_row(std::move(cells));
  }
  return t;
}

std::string legend(const SweepResult& s, double q) {
  const std::string qn = quantile_name(q);
  std::string out;
  if (sweep_has_time(s)) {
    out = fmt::format("{0} it: the loop's iterations at {0}; mean and {0} ms: predicted time per step, a layer times the "
                      "model's layers{1}; over bound: above each batch's least time; path: what the engine runs on the GPU",
                      qn, sweep_has_eager(s) ? ", the host's dispatch included" : "");
  } else {
    out = "mean it .. max: iterations per batch; fill: the buffer's rows used per iteration";
  }
  if (!s.rows.empty() && s.rows.front().memory)
    out += std::string(s.rows.front().fused_loop ? "; reserves: mlaplan's fused loop's K and V on each GPU (no latent gathered, "
                                                   "no K concat)"
                                                 : "; reserves: the gathered latent, the up-projected K/V and the K concat on "
                                                   "each GPU") +
           "; KV tokens: the tokens those bytes would hold in the KV cache";
  return out + ". M: max_chunks (max only). --format wide: every column.\n";
}

double quantile_of(const SweepReport& rep) { return rep.recommend_options ? rep.recommend_options->quantile : 0.99; }

}  // namespace

std::string sweep_brief_summary(const SweepResult& s) {
  std::string out = fmt::format("batches: {} from {}, {}; {:.1f} sequences per batch on average\n", s.batches,
                                io::printable(s.source), io::printable(s.formation), s.mean_batch_size);
  for (const cost::CostModel& c : s.costs)
    out += fmt::format("priced: {} TP{} by {} ({})\n", io::printable(c.model), c.tp, io::printable(c.describe(sweep_has_eager(s))),
                       io::shorten_path(io::printable(c.path)));
  return io::wrap_lines(out);
}

std::string sweep_brief_legend(const SweepReport& rep) { return io::wrap_lines(legend(*rep.sweep, quantile_of(rep)), 120, 2); }

SweepCells sweep_brief_cells(const SweepReport& rep) { return cells_of(brief_table(*rep.sweep, quantile_of(rep))); }

std::string format_sweep_brief(const SweepReport& rep) {
  std::string out = io::wrap_lines(sweep_recommendation(rep, false));
  if (!out.empty()) out.erase(0, 1);  // its leading blank line: the answer comes first
  return out + (out.empty() ? "" : "\n") + sweep_brief_summary(*rep.sweep) + "\n" +
         brief_table(*rep.sweep, quantile_of(rep)).aligned() + sweep_brief_legend(rep);
}

}  // namespace mlaplan::sweeps
