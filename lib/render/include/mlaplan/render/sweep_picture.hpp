// What the chart of a sweep shows, measured from the report before anything is drawn (sweep_svg.hpp
// draws it): the frame, the scales and their ticks, one series of points per recommend() group, the
// limit K and the legend, and with predicted times a second panel of them, every position in px.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/render/palette.hpp"

namespace mlaplan::render {

// Sizes in px and the ink that measuring and drawing share (the rest stays with the one that uses it).
namespace sweep_style {
inline constexpr double kMarginOuter = 16;
inline constexpr double kLegendRow = 19;
inline constexpr double kLegendSample = 30;  // the line or marker drawn before each legend label
inline constexpr double kTitleSize = 15, kSubtitleSize = 12, kTickSize = 12, kAxisTitleSize = 13, kLegendSize = 12;
inline constexpr double kNoteSize = 13;
inline constexpr double kAxisTitleLine = kAxisTitleSize + 3;  // between the lines of a y title broken in two
inline constexpr std::string_view kMutedInk = "#555555";  // subtitles and notes
}  // namespace sweep_style

// Colour is never the only cue (plot_sweep.py does the same with its markers).
enum class Shape { circle, square, triangle, diamond };

// Data to px along one axis: linear, or linear in log2 / log10 of the value. Values outside the
// domain (a zero on a log axis, a hand-made row's NaN) are pinned to its ends, never off the plot.
struct Scale {
  enum class Kind { linear, log2, log10 } kind = Kind::linear;
  double t0 = 0, t1 = 1;  // the domain, transformed
  double p0 = 0, p1 = 1;  // its ends in px

  double transform(double v) const {
    switch (kind) {
      case Kind::log2: return std::log2(v);
      case Kind::log10: return std::log10(v);
      case Kind::linear: break;
    }
    return v;
  }
  double operator()(double v) const {
    if (!std::isfinite(v) || (kind != Kind::linear && v <= 0)) return p0;
    const double span = t1 - t0;
    if (!(span > 0)) return (p0 + p1) / 2;  // one value: the middle
    const double f = std::clamp((transform(v) - t0) / span, 0.0, 1.0);
    return p0 + f * (p1 - p0);
  }
};

// A point's place in the time panel, for a row with a predicted time.
struct TimePoint {
  double y = 0;       // px of the p99 step time; on the panel's never band when refusals make it infinite
  double y_mean = 0;  // px of the mean step time; NaN where there is none (refused batches)
  bool host_bound = false;  // eager timing: the device waits for the host kHostBoundMark of the step or more
  std::string tip;
};

// The host-bound share from which the time panel marks a point (a dashed square around it).
inline constexpr double kHostBoundMark = 0.05;
inline bool marked_host_bound(const sweeps::TimeStats& t) { return t.eager && t.host_bound_share >= kHostBoundMark; }

// A point of mlaplan's fused loop in the time panel: its p99 step time at one buffer size.
struct FusedPoint {
  double x = 0, y = 0;  // px
  std::string tip;
};

struct SweepPoint {
  size_t row = 0;      // index into SweepResult::rows
  double x = 0;        // px
  double y = 0;        // px of p99
  double y_mean = 0;   // px of the mean
  bool refused = false;
  bool recommended = false;
  std::string tip;
  std::optional<TimePoint> time;
};

struct SweepSeries {
  std::string key;    // recommend()'s group name
  std::string label;  // for the legend, clipped
  Swatch swatch;
  Shape shape = Shape::circle;
  double width = 2;   // line width: wider when later lines cover this one, so it still shows
  double radius = 3.5;
  double time_width = 2, time_radius = 3.5;  // the same in the time panel, where other lines may cover it
  std::vector<SweepPoint> points;  // by buffer size
  // The time panel's dotted line: the same group's p99 step time priced by mlaplan's fused loop (the
  // report's fused sweep, sweep --gpu where its files ship), by buffer size; empty without one.
  std::vector<FusedPoint> fused;
};

struct Tick {
  double pos = 0;     // px
  std::string label;  // empty: a grid line without a label (it would collide with its neighbour)
};

struct TextLine {
  std::string text;
  double y = 0, size = 12;
  std::string_view fill;
};

struct LegendEntry {
  enum class Kind { series, gap, solid, dashed, hollow, limit, ring, host, fused, text } kind = Kind::gap;
  std::string label;
  size_t series = 0;  // Kind::series: index into SweepPicture::series
  double x = 0, y = 0;  // px: where its sample starts, at its middle (the label follows the sample)
};

// The predicted step times, in a plot area under the iterations one with the same left, right and x
// scale (so a buffer size sits at the same x in both).
struct TimePanel {
  double top = 0, bottom = 0;
  Scale y;
  std::vector<Tick> y_ticks;
  std::vector<std::string> y_title;  // one line, or two where one does not fit the panel's height
  std::optional<Tick> never;         // the band above the scale for p99s that refusals make infinite
  bool rings = false;                // the recommendation is by time: its choices are ringed here too
};

struct SweepPicture {
  double width = 0, height = 0;
  double left = 0, top = 0, right = 0, bottom = 0;  // the plot area
  std::vector<TextLine> title;
  Scale x, y;
  std::vector<Tick> x_ticks, y_ticks;
  std::string x_title, y_title;
  double x_title_y = 0;           // under the lowest panel
  std::optional<TimePanel> time;  // when the sweep's rows have predicted times (--cost)
  std::vector<SweepSeries> series;
  std::optional<double> limit_y;  // px of K
  std::string limit_label;
  std::vector<LegendEntry> legend;
  // The legend under the plots, in as many columns as the plot's width holds: the series, then (after
  // a gap entry) the keys on rows of their own. Its first row's middle.
  double legend_y = 0;
  // Above the plot, with one model and TP: what each tick's buffer reserves on each GPU (the gathered
  // latent, the up-projected K/V and the K concat; mlaplan's fused loop's K and V), and where
  // --memory-budget falls on the axis.
  std::vector<Tick> memory_ticks;
  std::string memory_title;
  std::optional<double> budget_x;  // px; none where the budget lies off the axis
  std::string budget_label;
  std::string note;  // said inside the plot: no rows, a single buffer size
  bool note_centered = false;
};

// Measures the chart of `report` (see sweep_svg): a report with no sweep or no rows gives a frame
// and a note saying so.
SweepPicture measure_sweep(const mlaplan::sweeps::SweepReport& report);

}  // namespace mlaplan::render
