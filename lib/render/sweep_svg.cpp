#include "mlaplan/render/sweep_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/explore/recommend.hpp"
#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"

namespace mlaplan::render {

namespace {

using explore::RecommendOptions;
using explore::SweepReport;
using explore::SweepResult;
using explore::SweepRow;

// Sizes in px. The plot area is fixed so that charts of different sweeps compare side by side; the
// legend column and the height grow with what they hold.
constexpr double kPlotWidth = 640;
constexpr double kPlotHeight = 400;
constexpr double kMarginLeft = 78;    // room for the y tick labels and the rotated y title
constexpr double kMarginOuter = 16;
constexpr double kLegendGap = 28;     // between the plot's frame and the legend (never over the data)
constexpr double kLegendRow = 19;
constexpr double kLegendSample = 30;  // the line or marker drawn before each legend label
constexpr double kTitleSize = 15, kSubtitleSize = 12, kTickSize = 12, kAxisTitleSize = 13, kLegendSize = 12;
constexpr double kNoteSize = 13;
constexpr size_t kLegendChars = 48;   // longer legend labels (hostile model names) are clipped
constexpr size_t kTipChars = 200;     // the same for text inside tooltips
constexpr size_t kMaxXTicks = 12;     // as plot_sweep.py: every ceil(n / 12)-th buffer size gets a tick
// Log y past plot_sweep.py's 50 iterations, but only when the values span a factor of 8 too: a log
// axis over 60..100 spreads nothing and loses the zero.
constexpr double kLogAbove = 50;
constexpr double kLogSpan = 8;

constexpr std::string_view kBackground = "#FFFFFF";
constexpr std::string_view kGridStroke = "#E6E6E6";
constexpr std::string_view kMutedInk = "#555555";
constexpr std::string_view kKeyStroke = "#444444";  // the legend's style keys (solid, dashed, ...)
constexpr std::string_view kLimitStroke = "#555555";
constexpr std::string_view kMeanDash = "5 3";
constexpr std::string_view kLimitDash = "9 4";
constexpr std::string_view kMeanOpacity = "0.6";

// Colour is never the only cue (plot_sweep.py does the same with its markers).
enum class Shape { circle, square, triangle, diamond };
constexpr Shape kShapes[] = {Shape::circle, Shape::square, Shape::triangle, Shape::diamond};

// ---------------------------------------------------------------------------------------------
// Measuring: everything the picture needs, in px, before a single element is written.

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

struct Point {
  size_t row = 0;      // index into SweepResult::rows
  double x = 0;        // px
  double y = 0;        // px of p99
  double y_mean = 0;   // px of the mean
  bool refused = false;
  bool recommended = false;
  std::string tip;
};

struct Series {
  std::string key;    // recommend()'s group name
  std::string label;  // for the legend, clipped
  Swatch swatch;
  Shape shape = Shape::circle;
  double width = 2;   // line width: wider when later lines cover this one, so it still shows
  double radius = 3.5;
  std::vector<Point> points;  // by buffer size
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
  enum class Kind { series, gap, solid, dashed, hollow, limit, ring, text } kind = Kind::gap;
  std::string label;
  size_t series = 0;  // Kind::series: index into Layout::series
};

struct Layout {
  double width = 0, height = 0;
  double left = 0, top = 0, right = 0, bottom = 0;  // the plot area
  std::vector<TextLine> title;
  Scale x, y;
  std::vector<Tick> x_ticks, y_ticks;
  std::string x_title, y_title;
  std::vector<Series> series;
  std::optional<double> limit_y;  // px of K
  std::string limit_label;
  std::vector<LegendEntry> legend;
  double legend_x = 0, legend_y = 0;
  std::string note;  // said inside the plot: no rows, a single buffer size
  bool note_centered = false;
};

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

// 4096 -> "4K", 65536 -> "64K", 1048576 -> "1M": exact multiples of 2^10 and 2^20 only, so the
// label never rounds (12288 -> "12K", 10000 -> "10000").
std::string tokens_label(uint64_t n) {
  if (n > 0 && n % (uint64_t{1} << 20) == 0) return fmt::format("{}M", n >> 20);
  if (n > 0 && n % (uint64_t{1} << 10) == 0) return fmt::format("{}K", n >> 10);
  return fmt::format("{}", n);
}

std::string model_of(const SweepRow& r) {
  if (!r.model) return {};
  return fmt::format("{} TP{}", r.model->name, r.memory ? r.memory->tp : 1);
}

// recommend()'s group name ("max M=16 deepseek-v3 TP8"), so report.recommendations match by it.
std::string group_of(const SweepRow& r, bool with_model) {
  std::string g = r.policy.name();
  if (r.max_chunks) g += fmt::format(" M={}", *r.max_chunks);
  if (with_model && r.model) g += " " + model_of(r);
  return g;
}

std::string point_tip(const SweepRow& r, bool recommended, const std::optional<RecommendOptions>& rec) {
  std::string t = clip_text(r.setting(), kTipChars);
  t += fmt::format("\niterations per batch: p50 {}, p90 {}, p99 {}, max {} (mean {:.2f})", r.p50, r.p90, r.p99,
                   r.max_iterations, finite_or_zero(r.mean_iterations));
  t += fmt::format("\nmean fill {:.1f}%", 100.0 * finite_or_zero(r.mean_fill));
  t += fmt::format("\nrefused {:.2f}% ({} of {} batches)", 100.0 * r.refused_share(), r.refused, r.batches);
  if (r.refused > 0 && !r.first_refusal.empty()) t += "; the first: " + clip_text(r.first_refusal, kTipChars);
  if (r.memory)
    t += fmt::format("\nmemory: buffer {} + K concat {}", io::format_bytes(r.memory->kv_bytes(r.buffer_tokens)),
                     io::format_bytes(r.memory->k_bytes(r.buffer_tokens)));
  if (recommended && rec)
    t += fmt::format("\nrecommended: the smallest buffer of its group with at most {} iterations at {}",
                     rec->max_iterations, explore::quantile_name(rec->quantile));
  return t;
}

// 1, 2 or 5 x 10^k, at least `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

// A label's width, so ticks can drop labels that would run into their neighbours.
double label_width(const std::string& s, double size) { return text_width(s, size); }

// The greatest number of characters of `size` px text that fit in `px`.
size_t chars_fitting(double px, double size) { return static_cast<size_t>(std::max(0.0, px / (size * 0.62))); }

Layout measure(const SweepReport& report) {
  static const SweepResult kNoSweep;
  const SweepResult& sweep = report.sweep ? *report.sweep : kNoSweep;
  const std::vector<SweepRow>& rows = sweep.rows;
  const std::optional<RecommendOptions>& rec = report.recommend_options;
  Layout L;

  // One series per recommend() group, in first-seen order. When every row has the same model and
  // TP (or none), the legend leaves it out and the title says it once.
  std::set<std::string> models;
  for (const SweepRow& r : rows) models.insert(model_of(r));
  const bool one_model = models.size() <= 1;
  const std::string common_model = one_model && !models.empty() ? *models.begin() : std::string();

  std::vector<bool> recommended(rows.size(), false);
  std::set<std::string> unmet;  // groups where no buffer in the sweep qualifies
  if (rec) {
    for (const explore::Recommendation& r : report.recommendations) {
      if (r.row && *r.row < rows.size()) recommended[*r.row] = true;
      if (!r.row) unmet.insert(r.group);
    }
  }

  std::map<std::string, size_t> index;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, fresh] = index.emplace(group_of(rows[i], true), L.series.size());
    if (fresh) {
      Series s;
      s.key = it->first;
      // The note is kept whole; a long (model) name is clipped before it.
      const std::string_view note = unmet.count(s.key) ? " (no buffer qualifies)" : "";
      s.label = clip_text(group_of(rows[i], !one_model), kLegendChars - note.size()) + std::string(note);
      const size_t n = L.series.size();
      s.swatch = sequence_swatch(n);
      s.shape = kShapes[n % (sizeof(kShapes) / sizeof(kShapes[0]))];
      L.series.push_back(std::move(s));
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  for (std::vector<size_t>& m : members)
    std::stable_sort(m.begin(), m.end(), [&](size_t a, size_t b) { return rows[a].buffer_tokens < rows[b].buffer_tokens; });

  // A line that later ones cover on half its points or more is drawn wider (as plot_sweep.py does):
  // max's iterations do not depend on M, packed often matches max, and models or TPs repeat them all.
  auto same = [&](size_t a, size_t b) {
    size_t hits = 0;
    for (size_t i : members[a]) {
      const double v = rows[i].p99;
      for (size_t j : members[b]) {
        if (rows[j].buffer_tokens == rows[i].buffer_tokens && std::abs(rows[j].p99 - v) <= 0.02 * std::max(1.0, v)) {
          ++hits;
          break;
        }
      }
    }
    return hits * 2 >= members[a].size();
  };
  for (size_t a = 0; a < L.series.size(); ++a) {
    size_t covered = 0;
    for (size_t b = a + 1; b < L.series.size(); ++b) covered += same(a, b) ? 1 : 0;
    L.series[a].width = 2.0 + 1.5 * static_cast<double>(std::min<size_t>(3, covered));
    L.series[a].radius = 2.0 + 0.75 * L.series[a].width;
  }

  // The value ranges: x the distinct buffer sizes; y the p99s, the means and K.
  std::set<uint64_t> size_set;
  double peak = 0, min_positive = std::numeric_limits<double>::infinity();
  auto see = [&](double v) {
    v = finite_or_zero(v);
    peak = std::max(peak, v);
    if (v > 0) min_positive = std::min(min_positive, v);
  };
  bool any_refused = false, any_recommended = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    size_set.insert(std::max<uint64_t>(1, rows[i].buffer_tokens));  // 0 has no log: drawn as 1
    see(rows[i].p99);
    see(rows[i].mean_iterations);
    any_refused = any_refused || rows[i].refused > 0;
    any_recommended = any_recommended || recommended[i];
  }
  if (rec) see(rec->max_iterations);
  const std::vector<uint64_t> sizes(size_set.begin(), size_set.end());

  // The legend: the series, then keys to the line styles and marks that appear.
  for (size_t i = 0; i < L.series.size(); ++i) L.legend.push_back({LegendEntry::Kind::series, L.series[i].label, i});
  if (!L.series.empty()) {
    L.legend.push_back({LegendEntry::Kind::gap, {}, 0});
    L.legend.push_back({LegendEntry::Kind::solid, "solid: p99 iterations per batch", 0});
    L.legend.push_back({LegendEntry::Kind::dashed, "dashed: mean iterations per batch", 0});
    if (any_refused) L.legend.push_back({LegendEntry::Kind::hollow, "hollow: some batches refused", 0});
    if (rec) {
      const std::string q = explore::quantile_name(rec->quantile);
      L.legend.push_back({LegendEntry::Kind::limit,
                          fmt::format("K = {}: recommend's limit at {}", rec->max_iterations, q), 0});
      if (rec->memory_budget)
        L.legend.push_back({LegendEntry::Kind::text, fmt::format("memory budget {}", io::format_bytes(*rec->memory_budget)), 0});
    }
    if (any_recommended) L.legend.push_back({LegendEntry::Kind::ring, "ring: the smallest buffer within K", 0});
  }
  double legend_width = 0;
  for (const LegendEntry& e : L.legend)
    legend_width = std::max(legend_width, kLegendSample + 8 + label_width(e.label, kLegendSize));

  // The frame: title on top, the plot, the legend to its right.
  const bool subtitle = !sweep.formation.empty() || !common_model.empty() || sweep.interrupted;
  const double title_y = kMarginOuter + kTitleSize;
  L.top = title_y + (subtitle ? kSubtitleSize + 6 : 0) + 22;
  L.left = kMarginLeft;
  L.right = L.left + kPlotWidth;
  L.bottom = L.top + kPlotHeight;
  L.legend_x = L.right + kLegendGap;
  L.legend_y = L.top + 8;
  L.width = L.legend.empty() ? L.right + 2 * kMarginOuter : L.legend_x + legend_width + kMarginOuter;
  L.height = std::max(L.bottom + 56, L.legend_y + kLegendRow * static_cast<double>(L.legend.size()) + kMarginOuter);

  // The title, clipped to the picture's width (a 10,000-character source name stays one line).
  const double text_room = L.width - 2 * kMarginOuter;
  const std::string tail = fmt::format(", {} batches", sweep.batches);
  const std::string head = "mlaplan sweep: ";
  const size_t room = chars_fitting(text_room, kTitleSize);
  const size_t fixed = head.size() + tail.size();
  const std::string source = sweep.source.empty() ? std::string("(no source)") : sweep.source;
  L.title.push_back({head + clip_text(source, room > fixed + 8 ? room - fixed : 8) + tail, title_y, kTitleSize, kInk});
  if (subtitle) {
    std::string sub = sweep.formation;
    if (!common_model.empty()) sub += (sub.empty() ? "" : "; ") + common_model;
    if (sweep.interrupted)
      sub += (sub.empty() ? "" : "; ") + fmt::format("interrupted: {} of {} settings", rows.size(), sweep.settings);
    L.title.push_back({clip_text(sub, chars_fitting(text_room, kSubtitleSize)), title_y + kSubtitleSize + 6,
                       kSubtitleSize, kMutedInk});
  }

  // x: log2 of the buffer size, a little room beyond the outer sizes.
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
    Tick t{L.x(static_cast<double>(sizes[i])), tokens_label(sizes[i])};
    const double half = label_width(t.label, kTickSize) / 2;
    if (t.pos - half < last_label_end + 6) {
      t.label.clear();
    } else {
      last_label_end = t.pos + half;
    }
    L.x_ticks.push_back(std::move(t));
  }
  L.x_title = "buffer size (buffer_token_size, rows; log scale)";

  // y: linear from 0 with whole-number ticks, or log10 with ticks at 1, 2 and 5 x 10^k.
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

  // The points, in px, with their tooltips.
  for (size_t s = 0; s < L.series.size(); ++s) {
    for (size_t i : members[s]) {
      const SweepRow& r = rows[i];
      Point p;
      p.row = i;
      p.x = L.x(static_cast<double>(std::max<uint64_t>(1, r.buffer_tokens)));
      p.y = L.y(r.p99);
      p.y_mean = L.y(finite_or_zero(r.mean_iterations));
      p.refused = r.refused > 0;
      p.recommended = recommended[i];
      p.tip = point_tip(r, p.recommended, rec);
      L.series[s].points.push_back(std::move(p));
    }
  }

  if (rec) {
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

// ---------------------------------------------------------------------------------------------
// Drawing: the layout as SVG elements, every one through SvgWriter.

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

void draw_series(SvgWriter& w, const Series& s) {
  const std::string colour(s.swatch.fill);
  w.open("g", {{"class", "series"}});
  w.element("title", {}, s.label);
  // The mean first, under the line: plot_sweep.py draws it thin, dashed and faded.
  std::vector<std::pair<double, double>> mean, stat;
  for (const Point& p : s.points) {
    mean.emplace_back(p.x, p.y_mean);
    stat.emplace_back(p.x, p.y);
  }
  if (s.points.size() == 1) {  // no line through one point: a short dash shows the mean
    const Point& p = s.points.front();
    w.line(p.x - 8, p.y_mean, p.x + 8, p.y_mean, colour, 1.6, {{"stroke-opacity", std::string(kMeanOpacity)}});
  } else {
    polyline(w, mean, colour, 1.2, kMeanDash, kMeanOpacity);
    polyline(w, stat, colour, s.width, {}, "1");
  }
  for (const Point& p : s.points) {
    // A refused point is hollow: white inside, the series' colour around.
    if (p.refused)
      marker(w, s.shape, p.x, p.y, s.radius + 0.5, kBackground, colour, 1.8, "point refused", p.tip);
    else
      marker(w, s.shape, p.x, p.y, s.radius, colour, colour, 0.8, "point", p.tip);
  }
  w.close();
}

void draw_legend(SvgWriter& w, const Layout& L) {
  if (L.legend.empty()) return;
  w.open("g", {{"class", "legend"}});
  const double x0 = L.legend_x, x1 = L.legend_x + kLegendSample, xm = (x0 + x1) / 2, tx = x1 + 8;
  for (size_t i = 0; i < L.legend.size(); ++i) {
    const LegendEntry& e = L.legend[i];
    const double y = L.legend_y + kLegendRow * static_cast<double>(i);
    const std::string key(kKeyStroke);
    switch (e.kind) {
      case LegendEntry::Kind::gap: continue;
      case LegendEntry::Kind::series: {
        const Series& s = L.series[e.series];
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
      case LegendEntry::Kind::text: break;
    }
    w.text(tx, y + 4, e.label, kLegendSize, {{"fill", std::string(kInk)}});
  }
  w.close();
}

std::string draw(const Layout& L, bool standalone) {
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

  for (const Series& s : L.series) draw_series(w, s);
  for (const Series& s : L.series)
    for (const Point& p : s.points)
      if (p.recommended) ring(w, p.x, p.y, s.radius + 5);

  // Frame, ticks and their labels on top of the data, as matplotlib's spines are.
  w.open("g", {{"class", "axes"}, {"fill", std::string(kInk)}});
  w.rect(L.left, L.top, L.right - L.left, L.bottom - L.top, "none", {},
         {{"stroke", std::string(kFrameStroke)}, {"stroke-width", "1"}});
  for (const Tick& t : L.x_ticks) {
    w.line(t.pos, L.bottom, t.pos, L.bottom + 5, kFrameStroke, 1);
    if (!t.label.empty()) w.text(t.pos, L.bottom + 20, t.label, kTickSize, {{"text-anchor", "middle"}});
  }
  for (const Tick& t : L.y_ticks) {
    w.line(L.left - 5, t.pos, L.left, t.pos, kFrameStroke, 1);
    w.text(L.left - 9, t.pos + 4, t.label, kTickSize, {{"text-anchor", "end"}});
  }
  const double xc = (L.left + L.right) / 2, yc = (L.top + L.bottom) / 2;
  w.text(xc, L.bottom + 42, L.x_title, kAxisTitleSize, {{"text-anchor", "middle"}});
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
  draw_legend(w, L);
  return w.finish(standalone);
}

}  // namespace

std::string sweep_svg(const explore::SweepReport& report, bool standalone) { return draw(measure(report), standalone); }

}  // namespace mlaplan::render
