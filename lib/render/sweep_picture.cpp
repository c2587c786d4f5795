// measure_sweep: the chart of a sweep measured step by step (detail/mlaplan/render/sweep_measure.hpp
// names the steps and the files that take them), then its points placed in px with their tooltips.
#include "mlaplan/render/sweep_picture.hpp"

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

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/render/sweep_measure.hpp"

namespace mlaplan::render {

SweepPicture measure_sweep(const sweeps::SweepReport& report) {
  using namespace sweep_detail;
  static const SweepResult kNoSweep;
  const SweepResult& sweep = report.sweep ? *report.sweep : kNoSweep;
  const std::vector<SweepRow>& rows = sweep.rows;
  const std::optional<RecommendOptions>& rec = report.recommend_options;
  SweepPicture L;

  // When every row has the same model and TP (or none), the legend leaves it out and the title
  // says it once.
  std::set<std::string> models;
  for (const SweepRow& r : rows) models.insert(model_of(r));
  const bool one_model = models.size() <= 1;
  const std::string common_model = one_model && !models.empty() ? *models.begin() : std::string();

  std::vector<bool> recommended(rows.size(), false);
  std::vector<const sweeps::Recommendation*> choice(rows.size(), nullptr);  // the recommendation choosing the row
  std::set<std::string> unmet;  // groups where no buffer in the sweep qualifies
  if (rec) {
    for (const sweeps::Recommendation& r : report.recommendations) {
      if (r.row && *r.row < rows.size()) {
        recommended[*r.row] = true;
        choice[*r.row] = &r;
      }
      if (!r.row && !r.whole_row) unmet.insert(r.group);
    }
  }
  // Any row with a time gives the panel; a row without one (none in a sweep check_costs passed) has no point in it.
  const bool timed = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.time.has_value(); });
  const std::vector<SweepRow>* fused = report.fused && !report.fused->rows.empty() ? &report.fused->rows : nullptr;
  const std::optional<TimeAxis> time = timed ? std::optional<TimeAxis>(time_axis(rows, fused)) : std::nullopt;

  const std::vector<std::vector<size_t>> members = group_rows(rows, unmet, one_model, L.series);
  widen_covered_lines(rows, members, L.series);
  const Ranges ranges = value_ranges(rows, recommended, rec);
  const std::vector<uint64_t>& sizes = ranges.sizes;
  add_legend(L, ranges, rec, timed, timed && fused);
  const bool memory = has_memory_axis(rows, one_model);
  frame_and_title(L, sweep, common_model, time ? &*time : nullptr, memory ? kMemoryAxisRoom : 0);
  x_axis(L, sizes);
  if (memory) memory_axis(L, rows, rec);
  y_axis(L, ranges.peak, ranges.min_positive);
  if (time) {
    time_panel(*L.time, *time);
    L.time->rings = by_time(rec);
  }

  // The points, in px, with their tooltips.
  for (size_t s = 0; s < L.series.size(); ++s) {
    for (size_t i : members[s]) {
      const SweepRow& r = rows[i];
      SweepPoint p;
      p.row = i;
      p.x = L.x(static_cast<double>(std::max<uint64_t>(1, r.buffer_tokens)));
      p.y = L.y(r.p99);
      p.y_mean = L.y(finite_or_zero(r.mean_iterations));
      p.refused = r.refused > 0;
      p.recommended = recommended[i];
      p.tip = point_tip(r, p.recommended, rec);
      if (L.time && r.time) {
        const double p99 = r.time->step_ms(r.time->p99_us);
        TimePoint t;
        t.y = std::isinf(p99) && L.time->never ? L.time->never->pos : L.time->y(p99);
        // No mean where batches are refused (TimeStats::mean_us): the dashed line breaks there.
        t.y_mean = std::isinf(r.time->mean_us) ? std::numeric_limits<double>::quiet_NaN()
                                               : L.time->y(r.time->step_ms(r.time->mean_us));
        t.host_bound = marked_host_bound(*r.time);
        t.tip = time_tip(r, choice[i], rec);
        p.time = std::move(t);
      }
      L.series[s].points.push_back(std::move(p));
    }
    if (L.time && fused)
      for (const SweepRow& r : *fused) {  // the group's rows priced by the fused loop, by buffer size
        if (!r.time || r.default_only || group_of(r, true) != L.series[s].key) continue;
        const double p99 = r.time->step_ms(r.time->p99_us);
        if (!std::isfinite(p99)) continue;
        L.series[s].fused.push_back({L.x(static_cast<double>(std::max<uint64_t>(1, r.buffer_tokens))), L.time->y(p99),
                                     fmt::format("{}, mlaplan's fused loop (same plan): p99 {:.1f} ms per step at {} rows",
                                                 L.series[s].label, p99, r.buffer_tokens)});
      }
    std::stable_sort(L.series[s].fused.begin(), L.series[s].fused.end(),
                     [](const FusedPoint& a, const FusedPoint& b) { return a.x < b.x; });
  }

  if (rec && !by_time(rec)) {
    L.limit_y = L.y(rec->max_iterations);
    L.limit_label = fmt::format("K = {}", rec->max_iterations);
  }

  if (rows.empty()) {
    L.note = "no settings to draw: the sweep has no rows";
    L.note_centered = true;
  } else if (rows.size() == 1) {
    L.note = "a single setting: nothing to compare it with";
  } else if (sizes.size() == 1) {
    L.note = "a single buffer size: points, no lines";
  }
  return L;
}

}  // namespace mlaplan::render
