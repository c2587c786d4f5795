#include "mlaplan/render/sweep_svg.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/render/sweep_picture.hpp"

namespace mlaplan::render {

namespace {

using namespace sweep_style;

constexpr std::string_view kBackground = "#FFFFFF";
constexpr std::string_view kGridStroke = "#E6E6E6";
constexpr std::string_view kKeyStroke = "#444444";  // the legend's style keys (solid, dashed, ...)
constexpr std::string_view kLimitStroke = "#555555";
constexpr std::string_view kMeanDash = "5 3";
constexpr std::string_view kLimitDash = "9 4";
constexpr std::string_view kMeanOpacity = "0.6";
constexpr std::string_view kFusedDash = "1.5 4";  // mlaplan's fused loop: dotted, unlike the mean's dashes

// ---------------------------------------------------------------------------------------------
// Drawing: the measured picture as SVG elements, every one through SvgWriter.

// An element with a tooltip (<title> child) when `tip` is given.
void titled(SvgWriter& w, std::string_view tag, SvgWriter::Attrs attrs, std::string_view tip) {
  if (tip.empty()) {
    w.element(tag, attrs);
    return;
  }
  w.open(tag, attrs);
  w.element("title", {}, tip);
  w.close();
}

std::string polygon_points(Shape shape, double x, double y, double r) {
  std::vector<std::pair<double, double>> v;
  switch (shape) {
    case Shape::square: {
      const double h = r * 0.88;  // the same visual weight as the circle
      v = {{x - h, y - h}, {x + h, y - h}, {x + h, y + h}, {x - h, y + h}};
      break;
    }
    case Shape::triangle:
      v = {{x, y - 1.2 * r}, {x + 1.1 * r, y + 0.8 * r}, {x - 1.1 * r, y + 0.8 * r}};
      break;
    case Shape::diamond:
    case Shape::circle:
      v = {{x, y - 1.25 * r}, {x + 1.25 * r, y}, {x, y + 1.25 * r}, {x - 1.25 * r, y}};
      break;
  }
  std::string out;
  for (const auto& [px, py] : v) out += (out.empty() ? "" : " ") + svg_number(px) + "," + svg_number(py);
  return out;
}

void marker(SvgWriter& w, Shape shape, double x, double y, double r, std::string_view fill, std::string_view stroke,
            double stroke_width, std::string_view cls, std::string_view tip = {}) {
  const std::string f(fill), s(stroke), sw = svg_number(stroke_width), c(cls);
  if (shape == Shape::circle) {
    titled(w, "circle",
           {{"class", c}, {"cx", svg_number(x)}, {"cy", svg_number(y)}, {"r", svg_number(r)}, {"fill", f},
            {"stroke", s}, {"stroke-width", sw}},
           tip);
  } else {
    titled(w, "polygon",
           {{"class", c}, {"points", polygon_points(shape, x, y, r)}, {"fill", f}, {"stroke", s}, {"stroke-width", sw}},
           tip);
  }
}

// The ring around a recommended point: no fill, and no pointer events, so the point's own tooltip
// still shows through it.
// A host-bound point's mark (eager timing): a dashed square of half-side r around it.
void host_mark(SvgWriter& w, double x, double y, double r) {
  w.element("rect", {{"class", "host-bound"},
                     {"x", svg_number(x - r)},
                     {"y", svg_number(y - r)},
                     {"width", svg_number(2 * r)},
                     {"height", svg_number(2 * r)},
                     {"fill", "none"},
                     {"stroke", std::string(kInk)},
                     {"stroke-width", "1.2"},
                     {"stroke-dasharray", "2 2"},
                     {"pointer-events", "none"}});
}

void ring(SvgWriter& w, double x, double y, double r) {
  w.element("circle", {{"class", "recommended"},
                       {"cx", svg_number(x)},
                       {"cy", svg_number(y)},
                       {"r", svg_number(r)},
                       {"fill", "none"},
                       {"stroke", std::string(kInk)},
                       {"stroke-width", "1.6"},
                       {"pointer-events", "none"}});
}

void polyline(SvgWriter& w, const std::vector<std::pair<double, double>>& pts, std::string_view stroke, double width,
              std::string_view dash, std::string_view opacity) {
  std::string points;
  for (const auto& [x, y] : pts) points += (points.empty() ? "" : " ") + svg_number(x) + "," + svg_number(y);
  w.element("polyline", {{"points", points},
                         {"fill", "none"},
                         {"stroke", std::string(stroke)},
                         {"stroke-width", svg_number(width)},
                         {"stroke-linejoin", "round"},
                         {"stroke-linecap", "round"},
                         {"stroke-dasharray", dash.empty() ? std::string("none") : std::string(dash)},
                         {"stroke-opacity", std::string(opacity)}});
}

// One point of a series as one panel draws it: the iterations panel or the time panel.
struct Mark {
  double x, y, y_mean;
  bool refused;
  const std::string* tip;
};

// How one panel draws its series: the classes of the group and of the points, and the line's weight.
struct SeriesStyle {
  std::string_view group, point, refused_point;
  double width, radius;
};

void draw_series(SvgWriter& w, const SweepSeries& s, const std::vector<Mark>& marks, const SeriesStyle& style) {
  const std::string colour(s.swatch.fill);
  w.open("g", {{"class", std::string(style.group)}});
  w.element("title", {}, s.label);
  // The mean first, under the line: plot_sweep.py draws it thin, dashed and faded. It breaks where a
  // point has none (NaN), and a lone point's mean is a short dash.
  std::vector<std::pair<double, double>> run, stat;
  auto flush = [&] {
    if (run.size() == 1)
      w.line(run[0].first - 8, run[0].second, run[0].first + 8, run[0].second, colour, 1.6,
             {{"stroke-opacity", std::string(kMeanOpacity)}});
    else if (run.size() > 1)
      polyline(w, run, colour, 1.2, kMeanDash, kMeanOpacity);
    run.clear();
  };
  for (const Mark& p : marks) {
    if (std::isnan(p.y_mean)) flush();
    else run.emplace_back(p.x, p.y_mean);
    stat.emplace_back(p.x, p.y);
  }
  flush();
  if (marks.size() > 1) polyline(w, stat, colour, style.width, {}, "1");
  for (const Mark& p : marks) {
    // A refused point is hollow: white inside, the series' colour around.
    if (p.refused)
      marker(w, s.shape, p.x, p.y, style.radius + 0.5, kBackground, colour, 1.8, style.refused_point, *p.tip);
    else
      marker(w, s.shape, p.x, p.y, style.radius, colour, colour, 0.8, style.point, *p.tip);
  }
  w.close();
}

void draw_iterations(SvgWriter& w, const SweepSeries& s) {
  std::vector<Mark> marks;
  for (const SweepPoint& p : s.points) marks.push_back({p.x, p.y, p.y_mean, p.refused, &p.tip});
  draw_series(w, s, marks, {"series", "point", "point refused", s.width, s.radius});
}

void draw_times(SvgWriter& w, const SweepSeries& s) {
  std::vector<Mark> marks;
  for (const SweepPoint& p : s.points)
    if (p.time) marks.push_back({p.x, p.time->y, p.time->y_mean, p.refused, &p.time->tip});
  draw_series(w, s, marks, {"time-series", "time-point", "time-point refused", s.time_width, s.time_radius});
}

// mlaplan's fused loop beside a series in the time panel: a dotted line in its colour, a small mark a
// buffer size (with its tooltip).
void draw_fused(SvgWriter& w, const SweepSeries& s) {
  if (s.fused.empty()) return;
  const std::string colour(s.swatch.fill);
  w.open("g", {{"class", "fused-series"}});
  w.element("title", {}, s.label + ", mlaplan's fused loop");
  std::vector<std::pair<double, double>> pts;
  for (const FusedPoint& p : s.fused) pts.emplace_back(p.x, p.y);
  if (pts.size() > 1) polyline(w, pts, colour, 2, kFusedDash, "1");
  // Small and filled: a hollow mark means refused batches.
  for (const FusedPoint& p : s.fused) marker(w, s.shape, p.x, p.y, 2.5, colour, colour, 0.8, "fused-point", p.tip);
  w.close();
}

// Opens a panel's "axes" group (the caller closes it) with its frame and its ticks and their labels;
// a tick without a label is a bare grid mark.
void open_axes(SvgWriter& w, double left, double top, double right, double bottom, const std::vector<Tick>& x_ticks,
               const std::vector<Tick>& y_ticks) {
  w.open("g", {{"class", "axes"}, {"fill", std::string(kInk)}});
  w.rect(left, top, right - left, bottom - top, "none", {}, {{"stroke", std::string(kFrameStroke)}, {"stroke-width", "1"}});
  for (const Tick& t : x_ticks) {
    w.line(t.pos, bottom, t.pos, bottom + 5, kFrameStroke, 1);
    if (!t.label.empty()) w.text(t.pos, bottom + 20, t.label, kTickSize, {{"text-anchor", "middle"}});
  }
  for (const Tick& t : y_ticks) {
    w.line(left - 5, t.pos, left, t.pos, kFrameStroke, 1);
    if (!t.label.empty()) w.text(left - 9, t.pos + 4, t.label, kTickSize, {{"text-anchor", "end"}});
  }
}

void draw_legend(SvgWriter& w, const SweepPicture& L) {
  if (L.legend.empty()) return;
  w.open("g", {{"class", "legend"}});
  for (const LegendEntry& e : L.legend) {
    const double x0 = e.x, x1 = e.x + kLegendSample, xm = (x0 + x1) / 2, tx = x1 + 8, y = e.y;
    const std::string key(kKeyStroke);
    switch (e.kind) {
      case LegendEntry::Kind::gap: continue;
      case LegendEntry::Kind::series: {
        const SweepSeries& s = L.series[e.series];
        const std::string colour(s.swatch.fill);
        w.line(x0, y, x1, y, colour, std::min(s.width, 3.5));
        marker(w, s.shape, xm, y, std::min(s.radius, 4.5), colour, colour, 0.8, "legend-marker");
        break;
      }
      case LegendEntry::Kind::solid: w.line(x0, y, x1, y, key, 2); break;
      case LegendEntry::Kind::dashed:
        w.line(x0, y, x1, y, key, 1.2,
               {{"stroke-dasharray", std::string(kMeanDash)}, {"stroke-opacity", std::string(kMeanOpacity)}});
        break;
      case LegendEntry::Kind::hollow: marker(w, Shape::circle, xm, y, 4, kBackground, key, 1.8, "legend-marker"); break;
      case LegendEntry::Kind::limit:
        w.line(x0, y, x1, y, kLimitStroke, 1.4, {{"stroke-dasharray", std::string(kLimitDash)}});
        break;
      case LegendEntry::Kind::ring:
        marker(w, Shape::circle, xm, y, 3.5, key, key, 0.8, "legend-marker");
        w.element("circle", {{"cx", svg_number(xm)}, {"cy", svg_number(y)}, {"r", "7.5"}, {"fill", "none"},
                             {"stroke", std::string(kInk)}, {"stroke-width", "1.6"}});
        break;
      case LegendEntry::Kind::fused:
        w.line(x0, y, x1, y, key, 2, {{"stroke-dasharray", std::string(kFusedDash)}, {"stroke-linecap", "round"}});
        break;
      case LegendEntry::Kind::host:
        marker(w, Shape::circle, xm, y, 3.5, key, key, 0.8, "legend-marker");
        host_mark(w, xm, y, 7.5);
        break;
      case LegendEntry::Kind::text: break;
    }
    w.text(tx, y + 4, e.label, kLegendSize, {{"fill", std::string(kInk)}});
  }
  w.close();
}

// The time panel under the iterations one: its own y axis, the same x ticks (labelled again, so
// neither panel needs the other to be read), and the rings when the recommendation is by time.
void draw_time_panel(SvgWriter& w, const SweepPicture& L, const TimePanel& T) {
  w.open("g", {{"class", "time-panel"}});
  w.open("g", {{"class", "grid"}});
  for (const Tick& t : L.x_ticks) w.line(t.pos, T.top, t.pos, T.bottom, kGridStroke, 1);
  for (const Tick& t : T.y_ticks) w.line(L.left, t.pos, L.right, t.pos, kGridStroke, 1);
  if (T.never) w.line(L.left, T.never->pos, L.right, T.never->pos, kGridStroke, 1, {{"stroke-dasharray", "2 3"}});
  w.close();

  for (const SweepSeries& s : L.series) draw_fused(w, s);  // under the engines' lines it is compared with
  for (const SweepSeries& s : L.series) draw_times(w, s);
  for (const SweepSeries& s : L.series)
    for (const SweepPoint& p : s.points)
      if (p.time && p.time->host_bound) host_mark(w, p.x, p.time->y, s.time_radius + 4);
  if (T.rings)
    for (const SweepSeries& s : L.series)
      for (const SweepPoint& p : s.points)
        if (p.recommended && p.time) ring(w, p.x, p.time->y, s.time_radius + 5);

  open_axes(w, L.left, T.top, L.right, T.bottom, L.x_ticks, T.y_ticks);
  if (T.never)
    w.text(L.left - 9, T.never->pos + 4, T.never->label, kTickSize, {{"text-anchor", "end"}, {"fill", std::string(kMutedInk)}});
  // The title's lines side by side, rotated, the first outermost.
  const double yc = (T.top + T.bottom) / 2;
  for (size_t i = 0; i < T.y_title.size(); ++i) {
    const double ty = kMarginOuter + kAxisTitleSize + static_cast<double>(i) * kAxisTitleLine;
    w.text(ty, yc, T.y_title[i], kAxisTitleSize,
           {{"text-anchor", "middle"}, {"transform", fmt::format("rotate(-90 {} {})", svg_number(ty), svg_number(yc))}});
  }
  w.close();
  w.close();
}

std::string draw(const SweepPicture& L, bool standalone) {
  SvgWriter w(L.width, L.height);
  w.rect(0, 0, L.width, L.height, kBackground);
  for (const TextLine& t : L.title)
    w.text(L.width / 2, t.y, t.text, t.size, {{"text-anchor", "middle"}, {"fill", std::string(t.fill)}});

  // Grid under everything, as matplotlib's light major grid.
  w.open("g", {{"class", "grid"}});
  for (const Tick& t : L.x_ticks) w.line(t.pos, L.top, t.pos, L.bottom, kGridStroke, 1);
  for (const Tick& t : L.y_ticks) w.line(L.left, t.pos, L.right, t.pos, kGridStroke, 1);
  w.close();

  if (L.limit_y) {
    w.open("g", {{"class", "limit"}});
    w.line(L.left, *L.limit_y, L.right, *L.limit_y, kLimitStroke, 1.4, {{"stroke-dasharray", std::string(kLimitDash)}});
    // At the left, where the curves (falling with the buffer) run high above K; a white halo
    // keeps it legible over a dashed mean line.
    w.text(L.left + 6, *L.limit_y - 5, L.limit_label, kTickSize,
           {{"fill", std::string(kInk)}, {"stroke", std::string(kBackground)}, {"stroke-width", "3"},
            {"paint-order", "stroke"}});
    w.close();
  }

  for (const SweepSeries& s : L.series) draw_iterations(w, s);
  for (const SweepSeries& s : L.series)
    for (const SweepPoint& p : s.points)
      if (p.recommended) ring(w, p.x, p.y, s.radius + 5);

  // The memory budget: a vertical line where what --memory-budget counts reaches it, through both panels.
  if (L.budget_x) {
    const double bottom = L.time ? L.time->bottom : L.bottom;
    w.open("g", {{"class", "budget"}});
    w.line(*L.budget_x, L.top, *L.budget_x, bottom, kLimitStroke, 1.4, {{"stroke-dasharray", std::string(kLimitDash)}});
    w.text(*L.budget_x - 5, L.top + 16, L.budget_label, kTickSize,
           {{"text-anchor", "end"}, {"fill", std::string(kInk)}, {"stroke", std::string(kBackground)}, {"stroke-width", "3"},
            {"paint-order", "stroke"}});
    w.close();
  }

  // Frame, ticks and their labels on top of the data, as matplotlib's spines are.
  open_axes(w, L.left, L.top, L.right, L.bottom, L.x_ticks, L.y_ticks);
  // The memory axis over the plot: what each tick's buffer reserves.
  if (!L.memory_ticks.empty()) {
    w.open("g", {{"class", "memory-axis"}});
    for (const Tick& t : L.memory_ticks) {
      w.line(t.pos, L.top - 4, t.pos, L.top, kLimitStroke, 1);
      w.text(t.pos, L.top - 8, t.label, kTickSize - 1, {{"text-anchor", "middle"}, {"fill", std::string(kMutedInk)}});
    }
    w.text((L.left + L.right) / 2, L.top - 24, L.memory_title, kTickSize, {{"text-anchor", "middle"}, {"fill", std::string(kMutedInk)}});
    w.close();
  }
  const double xc = (L.left + L.right) / 2, yc = (L.top + L.bottom) / 2;
  w.text(xc, L.x_title_y, L.x_title, kAxisTitleSize, {{"text-anchor", "middle"}});
  const double ty = kMarginOuter + kAxisTitleSize;
  w.text(ty, yc, L.y_title, kAxisTitleSize,
         {{"text-anchor", "middle"}, {"transform", fmt::format("rotate(-90 {} {})", svg_number(ty), svg_number(yc))}});
  w.close();

  if (!L.note.empty()) {
    if (L.note_centered)
      w.text(xc, yc, L.note, kNoteSize + 2, {{"class", "note"}, {"text-anchor", "middle"}, {"fill", std::string(kMutedInk)}});
    else
      w.text(L.left + 10, L.top + 20, L.note, kNoteSize, {{"class", "note"}, {"fill", std::string(kMutedInk)}});
  }
  if (L.time) draw_time_panel(w, L, *L.time);
  draw_legend(w, L);
  return w.finish(standalone);
}

}  // namespace

std::string sweep_svg(const sweeps::SweepReport& report, bool standalone) { return draw(measure_sweep(report), standalone); }

}  // namespace mlaplan::render
