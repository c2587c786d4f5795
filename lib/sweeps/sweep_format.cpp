#include "mlaplan/sweeps/sweep_format.hpp"
#include "sweep_cells.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <type_traits>

#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/table_builder.hpp"
#include "mlaplan/profile/json_text.hpp"
#include "mlaplan/sweeps/recommend.hpp"

namespace mlaplan::sweeps {

namespace {

// The cells of one row, in the order of columns().
std::vector<std::string> cells(const SweepRow& r, bool with_model, bool with_time, bool eager) {
  std::vector<std::string> c{io::printable(r.policy.name()),  // guided:FILE holds a path
                             fmt::format("{}", r.buffer_tokens),
                             r.max_chunks ? fmt::format("{}", *r.max_chunks) : "-",
                             fmt::format("{:.2f}", r.mean_iterations),
                             fmt::format("{}", r.p50),
                             fmt::format("{}", r.p90),
                             fmt::format("{}", r.p99),
                             fmt::format("{}", r.max_iterations),
                             fmt::format("{:.2f}%", 100.0 * r.refused_share()),
                             fmt::format("{:.2f}%", 100.0 * r.padding_overhead),
                             fmt::format("{:.1f}%", 100.0 * r.mean_fill),
                             fmt::format("{}/{}", r.merges_max, r.merges_p99)};
  if (with_model) {
    c.push_back(io::printable(r.model->name));  // a --model-config's name is the user's text
    c.push_back(fmt::format("{}", r.memory->tp));
    c.push_back(io::format_bytes(r.memory->kv_bytes(r.buffer_tokens)));
    c.push_back(io::format_bytes(r.memory->k_bytes(r.buffer_tokens)));
  }
  if (with_time) {
    const TimeStats& t = *r.time;
    auto ms = [](double v) { return std::isinf(v) ? std::string("refused") : fmt::format("{:.3f}", v); };
    c.push_back(ms(t.mean_us / 1e3));
    c.push_back(ms(t.step_ms(t.mean_us)));
    c.push_back(ms(t.step_ms(t.p50_us)));
    c.push_back(ms(t.step_ms(t.p99_us)));
    c.push_back(ms(t.step_ms(t.max_us)));
    c.push_back(fmt::format("{:.1f}%", 100.0 * t.iteration_share));
    c.push_back(fmt::format("{:.1f}%", 100.0 * t.over_lower_bound));
    if (eager) c.push_back(fmt::format("{:.1f}%", 100.0 * t.host_bound_share));
    c.push_back(t.path());
    if (with_model) c.push_back(io::format_bytes(held_bytes(r)));
  }
  return c;
}

// A text cell of the CSV (a policy naming a guided cost file, a --model-config's name): control bytes
// escaped as on the terminal, and quoted (RFC 4180) where a comma or a quote would split it.
std::string csv_text(const std::string& value) {
  const std::string shown = io::printable(value);
  if (shown.find_first_of(",\"") == std::string::npos) return shown;
  std::string quoted = "\"";
  for (char c : shown) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

bool has_model(const SweepResult& s) { return !s.rows.empty() && s.rows.front().model.has_value(); }
// Priced by mlaplan's fused loop (sweep --loop fused): its memory is K and V alone.
bool fused_sweep(const SweepResult& s) { return !s.rows.empty() && s.rows.front().fused_loop; }

// The rows as one table (names to the left, numbers to the right), for every format that has one.
io::TableBuilder table_of(const SweepResult& s) {
  using io::Align;
  const bool with_model = has_model(s);
  std::vector<io::TableColumn> c{{"policy", Align::left},   {"buffer", Align::right}, {"M", Align::right},
                                 {"mean", Align::right},    {"p50", Align::right},    {"p90", Align::right},
                                 {"p99", Align::right},     {"max", Align::right},    {"refused", Align::right},
                                 {"padding", Align::right}, {"fill", Align::right},   {"q merges", Align::right}};
  if (with_model) {
    c.push_back({"model", Align::left});
    c.push_back({"TP", Align::right});
    c.push_back({"buffer mem", Align::right});
    c.push_back({"K concat", Align::right});
  }
  const bool with_time = sweep_has_time(s);
  if (with_time) {
    for (const char* title : {"layer ms", "step ms", "step p50", "step p99", "step max", "per-iter", "over bound"})
      c.push_back({title, Align::right});
    if (sweep_has_eager(s)) c.push_back({"host-bound", Align::right});
    c.push_back({"path", Align::left});
    if (with_model) c.push_back({"mem", Align::right});
  }
  io::TableBuilder t(std::move(c));
  for (const SweepRow& r : s.rows) t.add_row(cells(r, with_model, with_time, sweep_has_eager(s)));
  return t;
}

std::string header(const SweepResult& s) {
  std::string out = fmt::format("batches: {} from {}, {}; {:.1f} sequences per batch on average\n"
                                "iterations per batch (mean, quantiles, max); max planned by {}; evaluated in {:.2f} s\n",
                                s.batches, io::printable(s.source), io::printable(s.formation), s.mean_batch_size,
                                s.max_planner, s.seconds);
  if (!sweep_has_time(s)) return out;
  out += "predicted context-phase attention time (ms; a step is a layer times the model's layers; per-iter: the share "
         "that is per-iteration overhead; over bound: above each batch's least time, with a buffer that holds it whole "
         "or at any buffer swept; path: what the engine runs on the cost file's GPU, chunked, one-shot, absorbed or mixed";
  if (sweep_has_eager(s))
    out += "; eager timing, the host's dispatch included (docs/cost-model.md, Eager time); host-bound: the share of the "
           "step the device waits for the host";
  if (has_model(s))
    out += fused_sweep(s) ? "; mem: the K and V mlaplan's fused loop holds, of the buffer or, without one, the largest "
                            "batch's whole context)\n"
                          : "; mem: the K/V it holds, buffer + K concat or, without a buffer, the largest batch's whole "
                            "context)\n";
  else
    out += ")\n";
  for (const cost::CostModel& c : s.costs)
    out += fmt::format("  {} TP{}: {} ({})\n", io::printable(c.model), c.tp, io::printable(c.describe(sweep_has_eager(s))),
                       io::printable(c.path));
  return out;
}

// What a row's buffer reserves on each GPU and the KV-cache tokens that memory would otherwise hold:
// "reserves 968 MiB (latent 72.0 MiB + K/V 512 MiB + K concat 384 MiB) = 14,444 KV-cache tokens".
// Priced by mlaplan's fused loop: "reserves 5.00 GiB (K 3.00 GiB + V 2.00 GiB) = ...".
std::string reserved_text(const SweepRow& r) {
  if (!r.memory) return "";
  const uint64_t rows = memory_rows(r), bytes = reserved_bytes(r);
  if (r.fused_loop)
    return fmt::format("reserves {} ({}) = {} KV-cache tokens", io::format_bytes(bytes), fused_loop_parts(*r.memory, rows),
                       with_commas(r.memory->kv_cache_tokens(bytes)));
  return fmt::format("reserves {} (latent {} + K/V {} + K concat {}) = {} KV-cache tokens", io::format_bytes(bytes),
                     io::format_bytes(r.memory->latent_bytes(rows)), io::format_bytes(r.memory->kv_bytes(rows)),
                     io::format_bytes(r.memory->k_bytes(rows)),
                     with_commas(r.memory->kv_cache_tokens(bytes)));
}

// A step's mean in words that are numbers: the mean over the batches priced, and how many were refused.
std::string mean_text(const SweepRow& r) {
  const TimeStats& t = *r.time;
  if (!t.refused) return fmt::format("mean {}/step", format_ms(t.step_ms(t.mean_us)));
  const double mean = priced_mean_ms(r);
  if (std::isnan(mean)) return fmt::format("no mean: it refuses {}", refused_text(t.refused, r.batches));
  return fmt::format("mean {}/step over the {} batches priced", format_ms(mean), with_commas(r.batches - t.refused));
}

// The engine's default buffer beside the choice: its formula, its knob, and its time and memory.
std::string default_text(const Recommendation& r, const SweepReport& rep, const RecommendOptions& o, const char* indent) {
  if (!r.engine_default) return "";
  const policies::EngineDefault& d = *r.engine_default;
  const char* engine = policies::engine_title(d.engine);
  if (d.whole_context)
    return fmt::format("{}{}'s default: no buffer, the whole context at once ({} = {} rows, unused)\n{}  its knob: {}\n",
                       indent, engine, d.formula, d.buffer_tokens, indent, d.knob);
  std::string out = fmt::format("{}{}'s default: {} rows = {}\n{}  its knob: {}\n", indent, engine, d.buffer_tokens,
                                d.formula, indent, d.knob);
  const bool one_shot = d.engine == policies::Engine::max;  // MAX's default runs max_chunks 1
  if (!r.default_row)
    return out + (one_shot ? fmt::format("{}  (not priced: sweep --max-chunks 1 --buffer-tokens {} to price it)\n", indent,
                                         d.buffer_tokens)
                           : fmt::format("{}  (not on the grid: add {} to --buffer-tokens to price it)\n", indent, d.buffer_tokens));
  const SweepRow& at = rep.sweep->rows[*r.default_row];
  const std::string q = quantile_name(o.quantile);
  std::string how;
  if (o.objective == Objective::time) {
    const double ms = at.time->step_ms_at(o.quantile);
    how = std::isinf(ms) ? fmt::format("{} no time: it refuses {}", q, refused_text(at.time->refused, at.batches))
                         : fmt::format("{} {}/step", q, format_ms(ms));
    if (r.row && !std::isinf(ms) && *r.row != *r.default_row) {
      const SweepRow& chosen = rep.sweep->rows[*r.row];
      const double c = chosen.time->step_ms_at(o.quantile);
      how += fmt::format(" ({:+.1f}% against {})", 100.0 * (ms / c - 1), chosen.buffer_tokens);
    }
  } else {
    const uint32_t k = at.iterations_at(o.quantile);
    how = k == UINT32_MAX ? fmt::format("it refuses {}", refused_text(at.refused, at.batches))
                          : fmt::format("{} {} iterations", q, k);
  }
  std::string mem;
  if (at.memory) {
    mem = ", " + reserved_text(at);
    if (r.row && *r.row != *r.default_row) {
      const SweepRow& chosen = rep.sweep->rows[*r.row];
      const auto tokens = [](const SweepRow& x) {
        return static_cast<int64_t>(x.memory->kv_cache_tokens(reserved_bytes(x)));
      };
      const int64_t delta = tokens(at) - tokens(chosen);
      mem += fmt::format(", {} {} than at {}", with_commas(static_cast<uint64_t>(delta < 0 ? -delta : delta)),
                         delta < 0 ? "fewer" : "more", chosen.buffer_tokens);
    }
  }
  out += fmt::format("{}  at it{}: {}{}\n", indent, one_shot ? " (one shot, priced at M=1 and its refusals counted there)" : "", how, r.row && *r.row == *r.default_row ? "; the choice is the default" : "");
  return mem.empty() ? out : out + fmt::format("{}  it {}\n", indent, mem.substr(2));
}

// The policy as the executor names it, with the fused loop's suffix: "packed+fused" for vllm (packed).
std::string executor_policy(const policies::Policy& p) {
  policies::Policy plain = p;
  plain.engine.clear();  // an engine's name says what it runs; the executor takes the algorithm's
  return plain.name() + "+fused";
}

// mlaplan's fused loop beside the choice (sweep --gpu where its cost files ship): its time at the chosen
// buffer against the choice's, then the smallest buffer as fast as the choice and what that reserves.
std::string fused_loop_text(const Recommendation& r, const SweepReport& rep, const RecommendOptions& o, const char* indent) {
  if (!r.row || !r.fused_row || !rep.fused) return "";
  const SweepRow &chosen = rep.sweep->rows[*r.row], &at = rep.fused->rows[*r.fused_row];
  const std::string q = quantile_name(o.quantile);
  const double engine_ms = chosen.time->step_ms_at(o.quantile), ms = at.time->step_ms_at(o.quantile);
  std::string out = fmt::format("{}mlaplan's fused loop (same plan; mlaplan.prefill --policy {}): {} {}/step at {}{}\n", indent,
                                io::printable(executor_policy(at.policy)), q, format_ms(ms), at.buffer_tokens,
                                std::isfinite(ms) && std::isfinite(engine_ms)
                                    ? fmt::format(" ({:+.1f}%)", 100.0 * (ms / engine_ms - 1))
                                    : "");
  if (!r.fused_same_time)
    return out + fmt::format("{}  no buffer on the grid is as fast as the choice ({} {}/step)\n", indent, q, format_ms(engine_ms));
  const SweepRow& same = rep.fused->rows[*r.fused_same_time];
  std::string mem;
  if (same.memory && chosen.memory) {
    const uint64_t bytes = reserved_bytes(same), tokens = same.memory->kv_cache_tokens(bytes),
                   before = chosen.memory->kv_cache_tokens(reserved_bytes(chosen));
    mem = fmt::format(", reserving {} = {} KV-cache tokens, {} {}", io::format_bytes(bytes), with_commas(tokens),
                      with_commas(before > tokens ? before - tokens : tokens - before), before >= tokens ? "fewer" : "more");
  }
  return out + fmt::format("{}  as fast as the choice from {} rows ({} {}){}\n", indent, same.buffer_tokens, q,
                           format_ms(same.time->step_ms_at(o.quantile)), mem);
}

std::string edge_text(const Recommendation& r, const RecommendOptions& o, const char* indent) {
  if (r.grid_edge.empty() || r.next_grid.empty()) return "";
  if (r.grid_edge == "smallest")
    return fmt::format("{}the grid's smallest buffer: a smaller one may do too; sweep {}\n", indent, r.next_grid);
  if (!r.row) return "";  // said on the group's line
  if (o.objective != Objective::time) return "";  // it meets the target; larger ones are not needed for it
  return fmt::format("{}the grid's largest buffer: a larger one may be faster still; sweep {}\n", indent, r.next_grid);
}

// ", priced for NVIDIA H200": the GPUs the cost files were calibrated on, named in the recommendation
// itself, not only in the table's header (issue 62).
std::string priced_for(const SweepResult& s) {
  std::string out;
  for (size_t k = 0; k < s.costs.size(); ++k) {
    bool named = false;  // each GPU once
    for (size_t j = 0; j < k; ++j) named = named || s.costs[j].gpu == s.costs[k].gpu;
    if (!named) out += (out.empty() ? ", priced for " : " and ") + io::printable(s.costs[k].gpu);
  }
  return out.empty() ? "" : out + ",";
}

std::string recommendation_text(const SweepReport& rep, const char* bullet, const char* indent, bool rejections = true) {
  if (!rep.recommend_options) return "";
  const RecommendOptions& o = *rep.recommend_options;
  const bool by_time = o.objective == Objective::time;
  const std::string budget =
      o.memory_budget ? fmt::format(", {} within {}", fused_sweep(*rep.sweep) ? "K + V" : "buffer + K concat",
                                    io::format_bytes(*o.memory_budget))
                      : "";
  std::string out =
      by_time ? fmt::format("\nrecommendation: the smallest buffer whose {} step time{} is within {:g}% of the best on the "
                            "grid{}\n",
                            quantile_name(o.quantile), priced_for(*rep.sweep), 100.0 * o.within, budget)
              : fmt::format("\nrecommendation: the smallest buffer with at most {} iteration{} at {}{}\n", o.max_iterations,
                            o.max_iterations == 1 ? "" : "s", quantile_name(o.quantile), budget);
  for (const Recommendation& r : rep.recommendations) {
    if (r.whole_row) {  // no buffer to size: the same time and memory at every one
      const SweepRow& row = rep.sweep->rows[*r.whole_row];
      const TimeStats& t = *row.time;
      std::string mem;
      if (row.memory) {
        const uint64_t bytes = held_bytes(row);
        mem = row.fused_loop ? ", holding the largest batch's whole context: " + fused_loop_parts(*row.memory, t.memory_rows)
                             : fmt::format(", holding the largest batch's whole context: K/V {} + K concat {}",
                                           io::format_bytes(row.memory->kv_bytes(t.memory_rows)),
                                           io::format_bytes(row.memory->k_bytes(t.memory_rows)));
        if (o.memory_budget && bytes > *o.memory_budget)
          mem += fmt::format("; memory {} > budget {}, which no buffer changes (raise --memory-budget or --tp)",
                             io::format_bytes(bytes), io::format_bytes(*o.memory_budget));
      }
      out += fmt::format("{}{}: no buffer to size: {}; every buffer_token_size gives {} {}/step ({}), 0 "
                         "iterations{}\n",
                         bullet, io::printable(r.group), r.whole_context, quantile_name(o.quantile),
                         format_ms(t.step_ms_at(o.quantile)), mean_text(row), mem);
      if (row.memory) out += fmt::format("{}{}\n", indent, reserved_text(row));
      out += default_text(r, rep, o, indent);
      continue;
    }
    if (r.row) {
      const SweepRow& row = rep.sweep->rows[*r.row];
      std::string mem;
      if (row.memory)
        mem = row.fused_loop ? ", " + fused_loop_parts(*row.memory, row.buffer_tokens)
                             : fmt::format(", buffer {} + K concat {}", io::format_bytes(row.memory->kv_bytes(row.buffer_tokens)),
                                           io::format_bytes(row.memory->k_bytes(row.buffer_tokens)));
      const uint64_t refused = by_time ? row.time->refused : row.refused;
      if (by_time) {
        const TimeStats& t = *row.time;
        const double ms = t.step_ms_at(o.quantile);
        // Where some batches run whole, the loop's count is not what runs: the mean as dispatched.
        const std::string iterations =
            t.path() == "chunked"
                ? fmt::format("{} {} iterations", quantile_name(o.quantile), row.iterations_at(o.quantile))
                : fmt::format("{:.2f} iterations a batch as dispatched, {}", t.mean_iterations, t.path());
        out += fmt::format("{}{}: buffer_token_size {} ({} {}/step, {}, {}{})\n", bullet, io::printable(r.group),
                           row.buffer_tokens, quantile_name(o.quantile), format_ms(ms), mean_text(row), iterations, mem);
      } else {
        out += fmt::format("{}{}: buffer_token_size {} ({} {} iterations, mean {:.2f}{})\n", bullet, io::printable(r.group),
                           row.buffer_tokens, quantile_name(o.quantile), row.iterations_at(o.quantile), row.mean_iterations, mem);
      }
      // A choice that refuses batches says how many, even where the quantile allows them.
      if (refused)
        out += fmt::format("{}refuses {}, within what {} allows; the first: {}\n", indent, refused_text(refused, row.batches),
                           quantile_name(o.quantile), io::printable(row.first_refusal));
      if (row.memory) out += fmt::format("{}{}\n", indent, reserved_text(row));
      if (by_time) {
        if (r.best && *r.best != *r.row)
          out += fmt::format("{}best on the grid: {}\n", indent, rep.sweep->rows[*r.best].buffer_tokens);
        if (!r.next_larger.empty()) out += fmt::format("{}next larger: {}\n", indent, r.next_larger);
      }
      out += edge_text(r, o, indent);
    } else {
      out += fmt::format("{}{}: no buffer in the sweep qualifies; sweep larger --buffer-tokens{}{}\n", bullet,
                         io::printable(r.group), r.next_grid.empty() ? "" : fmt::format(" ({})", r.next_grid),
                         o.memory_budget ? " or raise --memory-budget / --tp" : "");
    }
    out += default_text(r, rep, o, indent);
    out += fused_loop_text(r, rep, o, indent);
    if (rejections)
      for (const Rejection& x : r.rejected) out += fmt::format("{}{}: {}\n", indent, x.buffer_tokens, io::printable(x.why));
  }
  return out;
}

}  // namespace

SweepCells sweep_cells(const SweepReport& rep) { return cells_of(table_of(*rep.sweep)); }

std::string sweep_summary(const SweepResult& sweep) { return header(sweep); }

std::string sweep_recommendation(const SweepReport& report, bool rejections) {
  return recommendation_text(report, "  ", "      ", rejections);
}

std::string format_sweep_table(const SweepReport& rep) {
  return header(*rep.sweep) + "\n" + table_of(*rep.sweep).aligned() + recommendation_text(rep, "  ", "      ");
}

std::string format_sweep_markdown(const SweepReport& rep) {
  return header(*rep.sweep) + "\n" + table_of(*rep.sweep).markdown() + recommendation_text(rep, "- ", "  - buffer ");
}

bool sweep_has_time(const SweepResult& sweep) { return !sweep.rows.empty() && sweep.rows.front().time.has_value(); }

bool sweep_has_eager(const SweepResult& sweep) { return sweep_has_time(sweep) && sweep.rows.front().time->eager; }

namespace {
// A time in ms, none without a cost model or where refused batches put the quantile at infinity
// (JSON has no infinity; CSV leaves the cell empty).
SweepValue layer_ms_value(const SweepRow& r, double us) {
  if (!r.time || std::isinf(us)) return {};
  return us / 1e3;
}
SweepValue step_ms_value(const SweepRow& r, double us) {
  if (!r.time || std::isinf(us)) return {};
  return r.time->step_ms(us);
}
}  // namespace

const std::vector<SweepField>& sweep_fields() {
  using R = const SweepRow&;
  using V = SweepValue;
  constexpr unsigned all = kSweepCsv | kSweepJson | kSweepPython, files = kSweepCsv | kSweepJson;
  // JSON has the batch count once, at the top; CSV the share refused, the binding the count.
  static const std::vector<SweepField> fields{
      {"policy", all, [](R r) -> V { return r.policy.name(); }},
      {"buffer_tokens", all, [](R r) -> V { return uint64_t{r.buffer_tokens}; }},
      {"max_chunks", all, [](R r) -> V { return r.max_chunks ? V(uint64_t{*r.max_chunks}) : V(); }},
      {"batches", kSweepCsv | kSweepPython, [](R r) -> V { return r.batches; }},
      {"mean_iterations", all, [](R r) -> V { return r.mean_iterations; }, 4, "iterations", "mean"},
      {"p50", all, [](R r) -> V { return uint64_t{r.p50}; }, 0, "iterations", "p50"},
      {"p90", all, [](R r) -> V { return uint64_t{r.p90}; }, 0, "iterations", "p90"},
      {"p99", all, [](R r) -> V { return uint64_t{r.p99}; }, 0, "iterations", "p99"},
      {"max_iterations", all, [](R r) -> V { return uint64_t{r.max_iterations}; }, 0, "iterations", "max"},
      {"refused", kSweepJson | kSweepPython, [](R r) -> V { return r.refused; }},
      {"refused_share", files, [](R r) -> V { return r.refused_share(); }, 6},
      {"first_refusal", kSweepJson, [](R r) -> V { return r.first_refusal.empty() ? V() : V(r.first_refusal); }, 0, nullptr,
       nullptr, true},
      {"padding_overhead", all, [](R r) -> V { return r.padding_overhead; }, 6},
      {"mean_fill", all, [](R r) -> V { return r.mean_fill; }, 6},
      {"merges_per_query_max", all, [](R r) -> V { return r.merges_max; }, 0, "merges_per_query", "max"},
      {"merges_per_query_p99", all, [](R r) -> V { return r.merges_p99; }, 0, "merges_per_query", "p99"},
      {"model", all, [](R r) -> V { return r.model ? V(r.model->name) : V(); }, 0, nullptr, nullptr, true},
      {"tp", all, [](R r) -> V { return r.memory ? V(uint64_t{r.memory->tp}) : V(); }, 0, nullptr, nullptr, true},
      {"dtype_bytes", files, [](R r) -> V { return r.memory ? V(uint64_t{r.memory->dtype_bytes}) : V(); }, 0, nullptr, nullptr,
       true},
      {"buffer_bytes", files, [](R r) -> V { return r.memory ? V(r.memory->kv_bytes(r.buffer_tokens)) : V(); }, 0, nullptr,
       nullptr, true},
      {"k_concat_bytes", files, [](R r) -> V { return r.memory ? V(r.memory->k_bytes(r.buffer_tokens)) : V(); }, 0, nullptr,
       nullptr, true},
      {"layer_ms_mean", all, [](R r) -> V { return layer_ms_value(r, r.time ? r.time->mean_us : 0); }, 4, "layer_ms", "mean", true, true},
      {"layer_ms_p50", all, [](R r) -> V { return layer_ms_value(r, r.time ? r.time->p50_us : 0); }, 4, "layer_ms", "p50", true, true},
      {"layer_ms_p90", all, [](R r) -> V { return layer_ms_value(r, r.time ? r.time->p90_us : 0); }, 4, "layer_ms", "p90", true, true},
      {"layer_ms_p99", all, [](R r) -> V { return layer_ms_value(r, r.time ? r.time->p99_us : 0); }, 4, "layer_ms", "p99", true, true},
      {"layer_ms_max", all, [](R r) -> V { return layer_ms_value(r, r.time ? r.time->max_us : 0); }, 4, "layer_ms", "max", true, true},
      {"step_ms_mean", all, [](R r) -> V { return step_ms_value(r, r.time ? r.time->mean_us : 0); }, 3, "step_ms", "mean", true, true},
      {"step_ms_p50", all, [](R r) -> V { return step_ms_value(r, r.time ? r.time->p50_us : 0); }, 3, "step_ms", "p50", true, true},
      {"step_ms_p90", all, [](R r) -> V { return step_ms_value(r, r.time ? r.time->p90_us : 0); }, 3, "step_ms", "p90", true, true},
      {"step_ms_p99", all, [](R r) -> V { return step_ms_value(r, r.time ? r.time->p99_us : 0); }, 3, "step_ms", "p99", true, true},
      {"step_ms_max", all, [](R r) -> V { return step_ms_value(r, r.time ? r.time->max_us : 0); }, 3, "step_ms", "max", true, true},
      {"iteration_overhead_share", all, [](R r) -> V { return r.time ? V(r.time->iteration_share) : V(); }, 6, nullptr, nullptr,
       true, true},
      {"over_lower_bound", all, [](R r) -> V { return r.time ? V(r.time->over_lower_bound) : V(); }, 6, nullptr, nullptr, true,
       true},
      // Eager timing only (a graph sweep's outputs are as they were): the device's wait for the host.
      {"host_bound_share", all, [](R r) -> V { return r.time && r.time->eager ? V(r.time->host_bound_share) : V(); }, 6,
       nullptr, nullptr, true, true, true},
      {"layers", files | kSweepPython, [](R r) -> V { return r.time ? V(uint64_t{r.time->layers}) : V(); }, 0, nullptr, nullptr,
       true, true},
      // As dispatched on the cost file's GPU (dispatch.hpp): the path, the batches on each path, the
      // mean iterations, the most rows a step gathers and the K/V the path holds.
      {"path", all, [](R r) -> V { return r.time ? V(r.time->path()) : V(); }, 0, nullptr, nullptr, true, true},
      {"paths_chunked", all, [](R r) -> V { return r.time ? V(r.time->on(policies::EnginePath::chunked)) : V(); }, 0, "paths",
       "chunked", true, true},
      {"paths_one_shot", all, [](R r) -> V { return r.time ? V(r.time->on(policies::EnginePath::one_shot)) : V(); }, 0, "paths",
       "one_shot", true, true},
      {"paths_absorbed", all, [](R r) -> V { return r.time ? V(r.time->on(policies::EnginePath::absorbed)) : V(); }, 0, "paths",
       "absorbed", true, true},
      {"paths_refused", all, [](R r) -> V { return r.time ? V(r.time->refused) : V(); }, 0, "paths", "refused", true, true},
      {"dispatched_mean_iterations", all, [](R r) -> V { return r.time ? V(r.time->mean_iterations) : V(); }, 4, nullptr,
       nullptr, true, true},
      {"most_rows", all, [](R r) -> V { return r.time ? V(r.time->most_rows) : V(); }, 0, nullptr, nullptr, true, true},
      {"memory_rows", all, [](R r) -> V { return r.time ? V(r.time->memory_rows) : V(); }, 0, nullptr, nullptr, true, true},
      {"memory_bytes", all, [](R r) -> V { return r.time && r.memory ? V(held_bytes(r)) : V(); },
       0, nullptr, nullptr, true, true},
  };
  return fields;
}

std::string format_sweep_csv(const SweepReport& rep) {
  std::string out;
  const bool timed = sweep_has_time(*rep.sweep), eager = sweep_has_eager(*rep.sweep);
  auto writes = [timed, eager](const SweepField& f) {
    return (f.outputs & kSweepCsv) && (timed || !f.timed) && (eager || !f.eager);
  };
  for (const SweepField& f : sweep_fields())
    if (writes(f)) out += fmt::format("{},", f.key);
  out += "recommended\n";
  std::vector<bool> chosen(rep.sweep->rows.size(), false);
  for (const Recommendation& r : rep.recommendations)
    if (r.row) chosen[*r.row] = true;
  for (size_t i = 0; i < rep.sweep->rows.size(); ++i) {
    for (const SweepField& f : sweep_fields()) {
      if (!writes(f)) continue;
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, double>) out += fmt::format("{:.{}f}", v, f.csv_decimals);
            else if constexpr (std::is_same_v<T, std::string>) out += csv_text(v);
            else if constexpr (!std::is_same_v<T, std::monostate>) out += fmt::format("{}", v);
          },
          f.value(rep.sweep->rows[i]));
      out += ',';
    }
    out += chosen[i] ? "1\n" : "0\n";
  }
  return out;
}

std::string format_sweep_json(const SweepReport& rep) {
  using json = nlohmann::ordered_json;
  const SweepResult& s = *rep.sweep;
  json j;
  j["source"] = s.source;
  j["formation"] = s.formation;
  j["batches"] = s.batches;
  j["mean_batch_size"] = s.mean_batch_size;
  j["max_planner"] = s.max_planner;
  j["seconds"] = s.seconds;
  if (!s.costs.empty()) {
    j["costs"] = json::array();
    for (const cost::CostModel& c : s.costs)
      j["costs"].push_back({{"file", c.path}, {"model", c.model}, {"tp", c.tp}, {"dtype", c.dtype}, {"gpu", c.gpu},
                            {"compute_capability", cost::compute_capability_text(c.sm)},
                            {"attention", c.attention}, {"merge", c.merge}, {"timing", c.timing}, {"date", c.date},
                            {"up_projection", c.up_projection}, {"heldout_missed", c.heldout_missed}});
    if (sweep_has_eager(s)) {  // the times are eager: the host section they were priced with
      for (size_t k = 0; k < s.costs.size(); ++k)
        if (s.costs[k].host) {
          j["costs"][k]["host_holds_for"] = s.costs[k].host->holds_for;
          if (s.costs[k].host->probe_ms > 0) {  // the host speed the costs are stated at
            j["costs"][k]["host_probe"] = s.costs[k].host->probe;
            j["costs"][k]["host_probe_ms"] = s.costs[k].host->probe_ms;
          }
          if (!s.costs[k].host->date.empty()) j["costs"][k]["host_date"] = s.costs[k].host->date;
        }
      j["predicted_timing"] = "eager";
    }
  }
  j["rows"] = json::array();
  for (const SweepRow& r : s.rows) {
    json row;
    for (const SweepField& f : sweep_fields()) {
      if (!(f.outputs & kSweepJson)) continue;
      const SweepValue v = f.value(r);
      if (f.json_when_set && std::holds_alternative<std::monostate>(v)) continue;
      json& at = f.json_object ? row[f.json_object][f.json_key] : row[f.key];
      at = std::visit(
          [](const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return json(nullptr);
            else return json(x);
          },
          v);
    }
    j["rows"].push_back(row);
  }
  if (rep.recommend_options) {
    const RecommendOptions& o = *rep.recommend_options;
    json rec;
    rec["objective"] = o.objective == Objective::time ? "time" : "iterations";
    if (o.objective == Objective::time) rec["within"] = o.within;
    else rec["max_iterations"] = o.max_iterations;
    rec["quantile"] = o.quantile;
    rec["memory_budget_bytes"] = o.memory_budget ? json(*o.memory_budget) : json(nullptr);
    rec["groups"] = json::array();
    for (const Recommendation& r : rep.recommendations) {
      json g;
      g["group"] = r.group;
      g["buffer_tokens"] = r.row ? json(s.rows[*r.row].buffer_tokens) : json(nullptr);
      g["row"] = r.row ? json(*r.row) : json(nullptr);
      g["rejected"] = json::array();
      for (const Rejection& x : r.rejected) g["rejected"].push_back({{"buffer_tokens", x.buffer_tokens}, {"why", x.why}});
      if (o.objective == Objective::time) {
        g["best_buffer_tokens"] = r.best ? json(s.rows[*r.best].buffer_tokens) : json(nullptr);
        g["next_larger"] = r.next_larger.empty() ? json(nullptr) : json(r.next_larger);
      }
      if (r.whole_row) {  // no buffer to size (TensorRT-LLM below SM100)
        g["path"] = s.rows[*r.whole_row].time->path();
        g["whole_context"] = r.whole_context;
      }
      // What the chosen (or whole-context) row reserves and the KV-cache tokens that is.
      const std::optional<size_t> held = r.row ? r.row : r.whole_row;
      if (held && s.rows[*held].memory) {
        const SweepRow& x = s.rows[*held];
        const uint64_t bytes = reserved_bytes(x);
        g["reserved_bytes"] = bytes;
        g["kv_cache_tokens"] = x.memory->kv_cache_tokens(bytes);
      }
      if (held) g["refused"] = o.objective == Objective::time ? s.rows[*held].time->refused : s.rows[*held].refused;
      g["grid_edge"] = r.grid_edge.empty() ? json(nullptr) : json(r.grid_edge);
      g["next_grid"] = r.next_grid.empty() ? json(nullptr) : json(r.next_grid);
      if (r.engine_default) {
        const policies::EngineDefault& d = *r.engine_default;
        json e{{"engine", policies::engine_name(d.engine)}, {"buffer_tokens", d.buffer_tokens},
               {"whole_context", d.whole_context}, {"formula", d.formula}, {"knob", d.knob},
               {"row", r.default_row ? json(*r.default_row) : json(nullptr)}};
        if (d.engine == policies::Engine::max) e["max_chunks"] = 1;  // one shot, whatever the group's M
        if (r.default_row)  // the batches the default refuses (MAX's at M=1)
          e["refused"] = o.objective == Objective::time ? s.rows[*r.default_row].time->refused : s.rows[*r.default_row].refused;
        if (r.default_row && s.rows[*r.default_row].memory) {
          const SweepRow& x = s.rows[*r.default_row];
          const uint64_t bytes = reserved_bytes(x);
          e["reserved_bytes"] = bytes;
          e["kv_cache_tokens"] = x.memory->kv_cache_tokens(bytes);
        }
        g["engine_default"] = e;
      }
      if (r.row && r.fused_row && rep.fused) {  // mlaplan's fused loop beside the choice
        const SweepRow &chosen = s.rows[*r.row], &at = rep.fused->rows[*r.fused_row];
        const double engine_ms = chosen.time->step_ms_at(o.quantile), ms = at.time->step_ms_at(o.quantile);
        const bool timed = std::isfinite(ms) && std::isfinite(engine_ms);
        json f{{"cost_file", rep.fused->costs[at.time->cost].path},
               {"executor_policy", executor_policy(at.policy)},
               {"step_ms", std::isfinite(ms) ? json(ms) : json(nullptr)},
               {"change", timed ? json(ms / engine_ms - 1) : json(nullptr)},
               {"same_time", nullptr}};
        if (r.fused_same_time) {
          const SweepRow& same = rep.fused->rows[*r.fused_same_time];
          json t{{"buffer_tokens", same.buffer_tokens}, {"step_ms", same.time->step_ms_at(o.quantile)}};
          if (same.memory) {
            t["reserved_bytes"] = reserved_bytes(same);
            t["kv_cache_tokens"] = same.memory->kv_cache_tokens(reserved_bytes(same));
          }
          f["same_time"] = t;
        }
        g["fused_loop"] = f;
      }
      rec["groups"].push_back(g);
    }
    j["recommendation"] = rec;
  }
  return profile::json_text(j, 2) + "\n";
}

}  // namespace mlaplan::sweeps
