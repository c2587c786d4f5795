// The time panel of a sweep's chart (with --cost): the predicted step times' axis in values, then
// in px under the iterations panel, with a band above the scale for the p99s refusals make infinite.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mlaplan/render/sweep_measure.hpp"

namespace mlaplan::render::sweep_detail {

using namespace sweep_style;

TimeAxis time_axis(const std::vector<SweepRow>& rows, const std::vector<SweepRow>* fused) {
  TimeAxis a;
  double peak = 0, min_positive = std::numeric_limits<double>::infinity();
  auto see = [&](double v) {
    if (!std::isfinite(v)) return;
    peak = std::max(peak, v);
    if (v > 0) min_positive = std::min(min_positive, v);
  };
  for (const SweepRow& r : rows) {
    if (!r.time) continue;
    const double p99 = r.time->step_ms(r.time->p99_us);
    a.never = a.never || std::isinf(p99);
    see(p99);
    see(r.time->step_ms(r.time->mean_us));
  }
  if (fused)  // its p99s share the scale (they are drawn where finite; no mean)
    for (const SweepRow& r : *fused)
      if (r.time) see(r.time->step_ms(r.time->p99_us));
  const bool log_y = std::isfinite(min_positive) && peak / min_positive > kLogSpan;
  if (log_y) {
    a.kind = Scale::Kind::log10;
    const double lo = std::log10(min_positive), hi = std::log10(peak);
    const double pad = std::max(0.05 * (hi - lo), 0.03);
    a.t0 = lo - pad;
    a.t1 = hi + pad;
    for (int e = static_cast<int>(std::floor(a.t0)); e <= static_cast<int>(std::ceil(a.t1)); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) >= a.t0 - 1e-9 && std::log10(v) <= a.t1 + 1e-9) a.ticks.push_back({v, fmt::format("{:g}", v)});
      }
    // Many decades: 2 and 5 keep their grid lines but lose their labels, which would touch.
    if (static_cast<double>(a.ticks.size()) * (kTickSize + 6) > kTimePlotHeight)
      for (auto& [v, label] : a.ticks)
        if (std::abs(std::log10(v) - std::round(std::log10(v))) > 1e-9) label.clear();
  } else {
    const double top = std::min(peak > 0 ? peak : 1.0, 1e300) * 1.08;  // a hand-made 1e308 stays finite
    const double step = nice_step(top / 6);
    a.t1 = std::ceil(top / step) * step;
    const int count = static_cast<int>(std::llround(a.t1 / step));
    for (int k = 0; k <= count; ++k) a.ticks.push_back({k * step, fmt::format("{:g}", k * step)});
  }
  // One line where it fits the panel's height, else broken where the key to the lines starts.
  const std::string head = "predicted ms per step", key = log_y ? "(p99 solid, mean dashed; log scale)" : "(p99 solid, mean dashed)";
  if (label_width(head + " " + key, kAxisTitleSize) <= kTimePlotHeight - 16)
    a.title = {head + " " + key};
  else
    a.title = {head, key};
  for (const auto& tick : a.ticks) a.label_width = std::max(a.label_width, label_width(tick.second, kTickSize));
  if (a.never) a.label_width = std::max(a.label_width, label_width(kNeverLabel, kTickSize));
  return a;
}

// The time panel's scale and ticks in px; refusals' infinite p99s get a band above the scale.
void time_panel(TimePanel& T, const TimeAxis& a) {
  T.y.kind = a.kind;
  T.y.t0 = a.t0;
  T.y.t1 = a.t1;
  T.y.p0 = T.bottom;
  T.y.p1 = a.never ? T.top + kNeverBand : T.top;
  for (const auto& [v, label] : a.ticks) T.y_ticks.push_back({T.y(v), label});
  if (a.never) T.never = Tick{T.top + kNeverBand / 2, kNeverLabel};
  T.y_title = a.title;
}

}  // namespace mlaplan::render::sweep_detail
