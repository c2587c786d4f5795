// The iterations panel's axes: the value ranges the rows span, x by buffer size (log2) and y by
// iterations per batch (linear from 0, or log10), with their ticks in px.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/render/sweep_measure.hpp"
#include "mlaplan/sweeps/recommend.hpp"

namespace mlaplan::render::sweep_detail {

using namespace sweep_style;

// 1, 2 or 5 x 10^k, at least `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

Ranges value_ranges(const std::vector<SweepRow>& rows, const std::vector<bool>& recommended,
                    const std::optional<RecommendOptions>& rec) {
  Ranges out;
  std::set<uint64_t> size_set;
  auto see = [&](double v) {
    v = finite_or_zero(v);
    out.peak = std::max(out.peak, v);
    if (v > 0) out.min_positive = std::min(out.min_positive, v);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    size_set.insert(std::max<uint64_t>(1, rows[i].buffer_tokens));  // 0 has no log: drawn as 1
    see(rows[i].p99);
    see(rows[i].mean_iterations);
    out.any_refused = out.any_refused || rows[i].refused > 0;
    out.any_recommended = out.any_recommended || recommended[i];
    out.any_host_bound = out.any_host_bound || (rows[i].time && marked_host_bound(*rows[i].time));
  }
  if (rec && !by_time(rec)) see(rec->max_iterations);  // K, drawn only when it is the target
  out.sizes.assign(size_set.begin(), size_set.end());

  return out;
}

// x: log2 of the buffer size, a little room beyond the outer sizes.
void x_axis(SweepPicture& L, const std::vector<uint64_t>& sizes) {
  L.x.kind = Scale::Kind::log2;
  L.x.p0 = L.left;
  L.x.p1 = L.right;
  if (sizes.empty()) {
    L.x.t0 = 12;  // nothing to place; the frame alone
    L.x.t1 = 20;
  } else if (sizes.size() == 1) {
    L.x.t0 = std::log2(static_cast<double>(sizes.front())) - 1;
    L.x.t1 = L.x.t0 + 2;
  } else {
    L.x.t0 = std::log2(static_cast<double>(sizes.front())) - 0.3;
    L.x.t1 = std::log2(static_cast<double>(sizes.back())) + 0.3;
  }
  const size_t step = std::max<size_t>(1, (sizes.size() + kMaxXTicks - 1) / kMaxXTicks);
  double last_label_end = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < sizes.size(); i += step) {
    Tick t{L.x(static_cast<double>(sizes[i])), io::format_rows(sizes[i])};
    const double half = label_width(t.label, kTickSize) / 2;
    if (t.pos - half < last_label_end + 6) {
      t.label.clear();
    } else {
      last_label_end = t.pos + half;
    }
    L.x_ticks.push_back(std::move(t));
  }
  L.x_title = "buffer size (buffer_token_size, rows; log scale)";
}

bool has_memory_axis(const std::vector<SweepRow>& rows, bool one_model) {
  return one_model && !rows.empty() && rows.front().memory.has_value();
}

void memory_axis(SweepPicture& L, const std::vector<SweepRow>& rows, const std::optional<RecommendOptions>& rec) {
  const models::BufferMemory& m = *rows.front().memory;
  // Priced by mlaplan's fused loop (sweep --loop fused), the rows hold its K and V alone: the axis and
  // the budget count the bytes the table's reserves and --memory-budget do.
  const bool fused = rows.front().fused_loop;
  const auto reserved = [&](uint64_t n) { return sweeps::reserved_bytes(m, fused, n); };
  const auto held = [&](uint64_t n) { return sweeps::held_bytes(m, fused, n); };
  for (const Tick& t : L.x_ticks) {
    if (t.label.empty()) continue;
    const double rows_at = std::exp2(L.x.t0 + (t.pos - L.x.p0) / (L.x.p1 - L.x.p0) * (L.x.t1 - L.x.t0));
    L.memory_ticks.push_back({t.pos, io::format_bytes(reserved(static_cast<uint64_t>(std::llround(rows_at))))});
  }
  L.memory_title = fmt::format("reserved per GPU, {} TP{} ({})", clip_text(rows.front().model->name, kLegendChars), m.tp,
                               fused ? "mlaplan's fused loop: K + V" : "latent + K/V + K concat");
  if (!rec || !rec->memory_budget) return;
  // The budget counts what --memory-budget does: the buffer and the K concat (or the fused loop's K and
  // V), all growing with the rows.
  const double per_row = static_cast<double>(held(uint64_t{1} << 20)) / static_cast<double>(uint64_t{1} << 20);
  if (!(per_row > 0)) return;
  const double budget_rows = static_cast<double>(*rec->memory_budget) / per_row;
  const double t = std::log2(budget_rows);
  if (t >= L.x.t0 && t <= L.x.t1) L.budget_x = L.x(budget_rows);
  L.budget_label = fmt::format("memory budget {}", io::format_bytes(*rec->memory_budget));
}

// y: linear from 0 with whole-number ticks, or log10 with ticks at 1, 2 and 5 x 10^k.
void y_axis(SweepPicture& L, double peak, double min_positive) {
  L.y.p0 = L.bottom;
  L.y.p1 = L.top;
  const bool log_y = peak > kLogAbove && std::isfinite(min_positive) && peak / min_positive >= kLogSpan;
  if (log_y) {
    L.y.kind = Scale::Kind::log10;
    const double a = std::log10(min_positive), b = std::log10(peak);
    const double pad = std::max(0.05 * (b - a), 0.03);
    L.y.t0 = a - pad;
    L.y.t1 = b + pad;
    for (int e = static_cast<int>(std::floor(L.y.t0)); e <= static_cast<int>(std::ceil(L.y.t1)); ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        const double t = std::log10(v);
        if (t >= L.y.t0 - 1e-9 && t <= L.y.t1 + 1e-9) L.y_ticks.push_back({L.y(v), fmt::format("{:g}", v)});
      }
    }
  } else {
    const double top = std::max(2.0, peak) * 1.08;
    const double ystep = std::max(1.0, nice_step(top / 6));
    L.y.t0 = 0;
    L.y.t1 = std::ceil(top / ystep) * ystep;
    const int count = static_cast<int>(std::llround(L.y.t1 / ystep));
    for (int k = 0; k <= count; ++k) {
      const double v = k * ystep;
      L.y_ticks.push_back({L.y(v), fmt::format("{:.0f}", v)});
    }
  }
  L.y_title = log_y ? "iterations per batch (p99, log scale)" : "iterations per batch (p99)";
}

}  // namespace mlaplan::render::sweep_detail
