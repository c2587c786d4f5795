#include "mlaplan/sweeps/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <map>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/dispatch.hpp"

namespace mlaplan::sweeps {

namespace {

std::string group_of(const SweepRow& r) {
  std::string g = r.policy.name();
  if (r.max_chunks) g += fmt::format(" M={}", *r.max_chunks);
  if (r.model) g += fmt::format(" {} TP{}", r.model->name, r.memory->tp);
  return g;
}

std::string memory_failure(const SweepRow& r, const RecommendOptions& o) {
  if (!o.memory_budget || !r.memory) return "";
  const uint64_t rows = memory_rows(r), bytes = held_bytes(r);
  if (bytes <= *o.memory_budget) return "";
  const bool whole = r.time && r.time->buffer_free;
  if (r.fused_loop)
    return fmt::format("memory {} ({}{}) > budget {}", io::format_bytes(bytes), whole ? "the largest batch's whole context: " : "",
                       fused_loop_parts(*r.memory, rows), io::format_bytes(*o.memory_budget));
  return fmt::format("memory {} ({} {} + K concat {}) > budget {}", io::format_bytes(bytes),
                     whole ? "the largest batch's whole context: K/V" : "buffer",
                     io::format_bytes(r.memory->kv_bytes(rows)), io::format_bytes(r.memory->k_bytes(rows)),
                     io::format_bytes(*o.memory_budget));
}

std::string join(const std::vector<std::string>& parts) {
  std::string joined;
  for (const std::string& w : parts)
    if (!w.empty()) joined += (joined.empty() ? "" : "; ") + w;
  return joined;
}

// `refused`: the batches refused, by the policy's loop (objective iterations) or on their dispatched
// paths (objective time).
std::string refusal(const SweepRow& r, const std::string& q, uint64_t refused) {
  return fmt::format("refuses {}, more than {} allows; the first: {}", refused_text(refused, r.batches), q,
                     r.first_refusal);
}

// Why `r` fails the iteration target, or "" when it qualifies.
std::string iteration_failure(const SweepRow& r, const RecommendOptions& o) {
  const uint32_t at_q = r.iterations_at(o.quantile);
  const std::string q = quantile_name(o.quantile);
  std::string why;
  if (at_q == std::numeric_limits<uint32_t>::max()) why = refusal(r, q, r.refused);
  else if (at_q > o.max_iterations) why = fmt::format("{} needs {} iterations > {}", q, at_q, o.max_iterations);
  return join({why, memory_failure(r, o)});
}

// A step's time at the quantile in ms (+inf where more batches are refused than the quantile allows).
double step_ms(const SweepRow& r, double q) { return r.time->step_ms_at(q); }

// Why `r` is slower than the target, or "" when it qualifies; `best` is the group's fastest time.
std::string time_failure(const SweepRow& r, const RecommendOptions& o, double best) {
  const std::string q = quantile_name(o.quantile);
  const double ms = step_ms(r, o.quantile);
  std::string why;
  if (std::isinf(ms)) why = refusal(r, q, r.time->refused);
  else if (ms > best * (1 + o.within))
    why = fmt::format("{} {}/step, {} ({:.1f}%) over the best {}", q, format_ms(ms), format_ms(ms - best),
                      100.0 * (ms / best - 1), format_ms(best));
  return join({why, memory_failure(r, o)});
}

std::string memory_delta(const SweepRow& from, const SweepRow& to) {
  if (!from.memory || !to.memory) return "";
  const uint64_t a = held_bytes(from), b = held_bytes(to);
  return fmt::format(" for {} more memory", io::format_bytes(b > a ? b - a : 0));
}

}  // namespace

std::vector<Recommendation> recommend(const SweepResult& sweep, const RecommendOptions& options) {
  if (options.memory_budget && !sweep.rows.empty() && !sweep.rows.front().model)
    throw InputError("--memory-budget: the buffer's memory needs a model; add --model (e.g. deepseek-v3) or --model-config");
  const bool by_time = options.objective == Objective::time;
  if (by_time && !sweep.rows.empty() && !sweep.rows.front().time)
    throw InputError("--objective time: the step time needs a cost model; add --cost FILE (costs/ has calibrated ones)");
  std::vector<Recommendation> out;
  std::map<std::string, size_t> index;  // group -> position in `out`, in first-seen order
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < sweep.rows.size(); ++i) {
    if (sweep.rows[i].default_only) continue;  // an engine's default beside a group, not a choice
    const std::string g = group_of(sweep.rows[i]);
    auto [it, fresh] = index.emplace(g, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().group = g;
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  for (size_t g = 0; g < out.size(); ++g) {
    std::vector<size_t>& rows = members[g];
    std::stable_sort(rows.begin(), rows.end(),
                     [&](size_t a, size_t b) { return sweep.rows[a].buffer_tokens < sweep.rows[b].buffer_tokens; });
    // An engine that takes every batch whole without a buffer on the cost file's GPU: no buffer to
    // choose, the same time and memory at every one.
    const bool whole = !rows.empty() && std::all_of(rows.begin(), rows.end(), [&](size_t i) {
      return sweep.rows[i].time && sweep.rows[i].time->buffer_free;
    });
    if (options.engines && !rows.empty()) {  // the engine's default buffer and the group's row there
      const SweepRow& first = sweep.rows[rows.front()];
      const uint32_t sm = first.time && first.time->cost < sweep.costs.size() ? sweep.costs[first.time->cost].sm : 0;
      out[g].engine_default = policies::engine_default(policies::engine_of(first.policy), *options.engines, sm);
      for (size_t i : rows)
        if (sweep.rows[i].buffer_tokens == out[g].engine_default->buffer_tokens) out[g].default_row = i;
      // MAX's default runs one shot (max_chunks 1), whatever the group's M: its row at M=1, the
      // group's own at M=1 or one priced for the default alone (SweepGrid::max_one_shot).
      if (out[g].engine_default->engine == policies::Engine::max) {
        out[g].default_row.reset();
        for (size_t i = 0; i < sweep.rows.size(); ++i) {
          const SweepRow& x = sweep.rows[i];
          if (x.max_chunks == 1u && x.buffer_tokens == out[g].engine_default->buffer_tokens &&
              x.policy.name() == first.policy.name() && (x.model ? x.model->name : "") == (first.model ? first.model->name : "") &&
              (x.memory ? x.memory->tp : 0) == (first.memory ? first.memory->tp : 0))
            out[g].default_row = i;
        }
      }
    }
    if (whole) {
      const SweepRow& first = sweep.rows[rows.front()];
      const size_t k = first.time->cost;
      out[g].whole_context = k < sweep.costs.size() ? policies::whole_context_reason(first.policy, sweep.costs[k].sm) : "";
      if (out[g].whole_context.empty()) out[g].whole_context = "the engine runs the whole context at once on this GPU";
      out[g].whole_row = rows.front();
      continue;
    }
    double best = std::numeric_limits<double>::infinity();
    if (by_time)
      for (size_t i : rows) {
        const double ms = step_ms(sweep.rows[i], options.quantile);
        if (memory_failure(sweep.rows[i], options).empty() && ms < best) {
          best = ms;
          out[g].best = i;
        }
      }
    for (size_t k = 0; k < rows.size(); ++k) {
      const size_t i = rows[k];
      const std::string why = by_time ? time_failure(sweep.rows[i], options, best) : iteration_failure(sweep.rows[i], options);
      if (why.empty()) {
        out[g].row = i;
        if (by_time && k + 1 < rows.size()) {
          const SweepRow &at = sweep.rows[i], &next = sweep.rows[rows[k + 1]];
          const double a = step_ms(at, options.quantile), b = step_ms(next, options.quantile);
          out[g].next_larger =
              std::isinf(b) ? fmt::format("{} refuses more batches than {} allows ({})", next.buffer_tokens,
                                          quantile_name(options.quantile),
                                          refused_text(next.time->refused, next.batches))
              : b < a ? fmt::format("{} would save {} ({:.1f}%) at {}{}", next.buffer_tokens, format_ms(a - b), 100.0 * (1 - b / a),
                                  quantile_name(options.quantile), memory_delta(at, next))
                    : fmt::format("{} would save nothing at {} ({}/step)", next.buffer_tokens, quantile_name(options.quantile),
                                  format_ms(b));
        }
        break;
      }
      out[g].rejected.push_back({sweep.rows[i].buffer_tokens, why});
    }
    // An end of the grid: the choice at its largest (by time a larger one may be faster still) or
    // smallest (a smaller one may qualify too), or no choice at all (only larger ones may qualify).
    uint32_t lo = options.grid_smallest, hi = options.grid_largest;
    if (!lo || !hi)
      for (size_t i : rows) {
        lo = lo && lo <= sweep.rows[i].buffer_tokens ? lo : sweep.rows[i].buffer_tokens;
        hi = std::max(hi, sweep.rows[i].buffer_tokens);
      }
    const uint32_t chosen = out[g].row ? sweep.rows[*out[g].row].buffer_tokens : 0;
    if (!out[g].row || chosen >= hi) {
      out[g].grid_edge = "largest";
      out[g].next_grid = grid_beyond(hi, true);
    } else if (chosen <= lo && lo > 1) {
      out[g].grid_edge = "smallest";
      out[g].next_grid = grid_beyond(lo, false);
    }
  }
  return out;
}

void compare_fused_loop(std::vector<Recommendation>& recs, const SweepResult& engines, const SweepResult& fused,
                        const RecommendOptions& o) {
  if (o.objective != Objective::time) return;
  for (Recommendation& r : recs) {
    if (!r.row) continue;
    const SweepRow& chosen = engines.rows[*r.row];
    const double target = step_ms(chosen, o.quantile);
    // The group's fused rows by buffer (the grid's own, not a default's row of its own).
    std::vector<size_t> rows;
    for (size_t i = 0; i < fused.rows.size(); ++i)
      if (!fused.rows[i].default_only && fused.rows[i].time && group_of(fused.rows[i]) == r.group) rows.push_back(i);
    std::stable_sort(rows.begin(), rows.end(),
                     [&](size_t a, size_t b) { return fused.rows[a].buffer_tokens < fused.rows[b].buffer_tokens; });
    for (size_t i : rows) {
      if (fused.rows[i].buffer_tokens == chosen.buffer_tokens) r.fused_row = i;
      if (!r.fused_same_time && std::isfinite(target) && step_ms(fused.rows[i], o.quantile) <= target) r.fused_same_time = i;
    }
    if (!r.fused_row) r.fused_same_time.reset();  // a grid the fused sweep lacks: nothing to compare
  }
}

uint64_t memory_rows(const SweepRow& r) { return r.time ? r.time->memory_rows : r.buffer_tokens; }

uint64_t reserved_bytes(const models::BufferMemory& m, bool fused_loop, uint64_t rows) {
  return fused_loop ? m.fused_loop_bytes(rows) : m.reserved_bytes(rows);
}

uint64_t held_bytes(const models::BufferMemory& m, bool fused_loop, uint64_t rows) {
  return fused_loop ? m.fused_loop_bytes(rows) : m.total_bytes(rows);
}

uint64_t reserved_bytes(const SweepRow& r) { return r.memory ? reserved_bytes(*r.memory, r.fused_loop, memory_rows(r)) : 0; }

uint64_t held_bytes(const SweepRow& r) { return r.memory ? held_bytes(*r.memory, r.fused_loop, memory_rows(r)) : 0; }

std::string fused_loop_parts(const models::BufferMemory& m, uint64_t rows) {
  return fmt::format("K {} + V {}", io::format_bytes(m.k_bytes(rows)), io::format_bytes(m.v_bytes(rows)));
}

double priced_mean_ms(const SweepRow& r) {
  if (!r.time) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  uint64_t n = 0;
  for (float us : r.time->layer_us)
    if (std::isfinite(us)) {
      sum += us;
      ++n;
    }
  return n ? r.time->step_ms(sum / static_cast<double>(n)) : std::numeric_limits<double>::quiet_NaN();
}

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string refused_text(uint64_t refused, uint64_t batches) {
  const double share = batches ? 100.0 * static_cast<double>(refused) / static_cast<double>(batches) : 0.0;
  // Two decimals, or as many as show a share that is not zero (1 of 1,000,000 is 0.0001%).
  int digits = 2;
  while (refused && digits < 8 && std::round(share * std::pow(10.0, digits)) == 0) ++digits;
  return fmt::format("{} of {} batch{} ({:.{}f}%)", with_commas(refused), with_commas(batches), batches == 1 ? "" : "es",
                     share, digits);
}

std::string grid_beyond(uint32_t edge, bool larger) {
  constexpr uint64_t most = 0x7fffffffu;
  if (larger) {
    if (edge >= most) return "";
    const uint64_t from = std::min<uint64_t>(uint64_t{edge} * 2, most), to = std::min<uint64_t>(uint64_t{edge} * 8, most);
    return from == to ? fmt::format("--buffer-tokens {}", from) : fmt::format("--buffer-tokens {}:{}:x2", from, to);
  }
  if (edge <= 1) return "";
  const uint64_t from = std::max<uint64_t>(1, edge / 8), to = std::max<uint64_t>(1, edge / 2);
  return from == to ? fmt::format("--buffer-tokens {}", from) : fmt::format("--buffer-tokens {}:{}:x2", from, to);
}

double parse_quantile(const std::string& text) {
  // p99 (a percent) and 0.99 (a share) mean the same, as the JSON writes 0.99 for p99. A bare number
  // above 1 could be either, so it is refused rather than read as a percent or as more than all.
  const std::string usage = "write p50, p90, p99, p99.9 or max, or the share itself: 0.5, 0.9, 0.99, 0.999";
  if (text.size() == 3 && std::tolower(static_cast<unsigned char>(text[0])) == 'm' &&
      std::tolower(static_cast<unsigned char>(text[1])) == 'a' && std::tolower(static_cast<unsigned char>(text[2])) == 'x')
    return 1.0;
  const bool percent = !text.empty() && (text[0] == 'p' || text[0] == 'P');
  const std::string number = percent ? text.substr(1) : text;
  // Digits and one point only: strtod would also take nan, inf, hex and exponents.
  const bool plain = !number.empty() && number.find_first_not_of("0123456789.") == std::string::npos &&
                     std::count(number.begin(), number.end(), '.') <= 1 && number != ".";
  const double v = plain ? std::strtod(number.c_str(), nullptr) : -1;
  if (!plain) throw InputError(fmt::format("--quantile {}: not a quantile; {}", text, usage));
  if (percent) {
    if (!(v > 0 && v <= 100)) throw InputError(fmt::format("--quantile {}: a percent goes above 0 up to 100; {}", text, usage));
    return v / 100.0;
  }
  if (v > 1)
    throw InputError(fmt::format("--quantile {}: a share goes above 0 up to 1; for the {}th percentile write p{} or {:g}", text,
                                 number, number, v / 100.0));
  if (!(v > 0)) throw InputError(fmt::format("--quantile {}: a share goes above 0 up to 1; {}", text, usage));
  return v;
}

double parse_within(const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  const bool plain = !number.empty() && number.find_first_not_of("0123456789.") == std::string::npos &&
                     std::count(number.begin(), number.end(), '.') <= 1 && number != ".";
  const double v = plain ? std::strtod(number.c_str(), nullptr) : -1;
  if (!plain || !(v > 0) || v > 1000)
    throw InputError(fmt::format("--within {}: not a percentage above 0 (up to 1000); write e.g. 5% for a buffer within 5% "
                                 "of the best time", text));
  return v / 100.0;
}

std::string ms_digits(double ms) { return fmt::format("{:.{}f}", ms, ms >= 100 ? 1 : ms >= 1 ? 2 : 3); }

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "no time (refused batches)";
  return ms_digits(ms) + " ms";
}

std::string quantile_name(double q) {
  if (q >= 1.0) return "max";
  return fmt::format("p{:g}", q * 100.0);
}

uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  const std::string usage = "write e.g. 8GiB, 512MiB or 2GB";
  // The number: digits and one point (strtod alone would also take nan, inf, hex and exponents).
  const size_t used = std::min(text.find_first_not_of("0123456789."), text.size());
  const std::string number = text.substr(0, used);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1)
    throw InputError(fmt::format("{} {}: not a size; {}", option, text, usage));
  const double v = std::strtod(number.c_str(), nullptr);
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  // 1e3, 2-3, 8GiB2: the number is not plain digits, which is what to say, not that the unit is odd.
  if (unit.find_first_of("0123456789+-") != std::string::npos)
    throw InputError(fmt::format("{} {}: not a size; {}", option, text, usage));
  static const std::pair<const char*, double> units[] = {
      {"", 1},          {"B", 1},          {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6},    {"GB", 1e9},         {"TB", 1e12}};
  for (const auto& [name, scale] : units) {
    // Units in any case, as every named value: 8gib is 8GiB (all of them count bytes, none bits).
    const std::string n = name;
    if (unit.size() != n.size() || !std::equal(unit.begin(), unit.end(), n.begin(), [](unsigned char a, unsigned char b) {
          return std::tolower(a) == std::tolower(b);
        }))
      continue;
    const double bytes = v * scale;
    if (bytes >= 1.8e19)
      throw InputError(fmt::format("{} {}: more than 2^64 - 1 bytes; give a smaller size, {}", option, text, usage));
    const double rounded = std::round(bytes);  // llround would overflow past 2^63
    if (rounded < 1)
      throw InputError(fmt::format("{} {}: a size of 0 bytes fits no buffer; give a size above 0, {}", option, text, usage));
    return static_cast<uint64_t>(rounded);
  }
  throw InputError(fmt::format("{} {}: unknown unit '{}'; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB ({})", option,
                               text, unit, usage));
}

}  // namespace mlaplan::sweeps
