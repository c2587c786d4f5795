#include "mlaplan/render/sweep_picture.hpp"

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
using namespace sweep_style;

// Sizes in px. The plot area is fixed so that charts of different sweeps compare side by side; the
// legend column and the height grow with what they hold.
constexpr double kPlotWidth = 640;
constexpr double kPlotHeight = 400;
constexpr double kMarginLeft = 78;    // room for the y tick labels and the rotated y title
constexpr double kLegendGap = 28;     // between the plot's frame and the legend (never over the data)
constexpr size_t kLegendChars = 48;   // longer legend labels (hostile model names) are clipped
constexpr size_t kTipChars = 200;     // the same for text inside tooltips
constexpr size_t kMaxXTicks = 12;     // as plot_sweep.py: every ceil(n / 12)-th buffer size gets a tick
// Log y past plot_sweep.py's 50 iterations, but only when the values span a factor of 8 too: a log
// axis over 60..100 spreads nothing and loses the zero.
constexpr double kLogAbove = 50;
constexpr double kLogSpan = 8;
// The time panel. Its log axis needs only the span: no small counts in ms that a log axis would blur.
constexpr double kTimePlotHeight = 400;  // as the iterations panel, so the two compare by eye
constexpr double kTimePanelGap = 44;     // between the panels: the upper one's x tick labels
constexpr double kNeverBand = 24;        // above the time scale: the p99s refusals make infinite
constexpr const char* kNeverLabel = "never";
constexpr double kTitleLine = kSubtitleSize + 6;
constexpr size_t kMaxCostLines = 3;      // a grid of many models and TPs: the rest summed up in one line

constexpr Shape kShapes[] = {Shape::circle, Shape::square, Shape::triangle, Shape::diamond};

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

bool by_time(const std::optional<RecommendOptions>& rec) { return rec && rec->objective == explore::Objective::time; }

// What the ring means, said once for the legend and the tooltips.
std::string recommended_text(const RecommendOptions& rec) {
  const std::string q = explore::quantile_name(rec.quantile);
  if (rec.objective == explore::Objective::time)
    return fmt::format("the smallest buffer of its group whose {} step time is within {:g}% of the group's best", q,
                       100.0 * rec.within);
  return fmt::format("the smallest buffer of its group with at most {} iterations at {}", rec.max_iterations, q);
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
  if (recommended && rec) t += "\nrecommended: " + recommended_text(*rec);
  return t;
}

// A time point's tooltip: the setting, its step times and how much of them the iterations are.
std::string time_tip(const SweepRow& r, const explore::Recommendation* rec, const std::optional<RecommendOptions>& options) {
  const explore::TimeStats& t = *r.time;
  using explore::format_ms;
  std::string s = clip_text(r.setting(), kTipChars);
  s += fmt::format("\npredicted ms per step ({} layers): p50 {}, p99 {}, max {} (mean {})", t.layers,
                   format_ms(t.step_ms(t.p50_us)), format_ms(t.step_ms(t.p99_us)), format_ms(t.step_ms(t.max_us)),
                   format_ms(t.step_ms(t.mean_us)));
  s += fmt::format("\nper-iteration share {:.1f}%, over bound {:.1f}% (against a buffer holding each batch whole)",
                   100.0 * finite_or_zero(t.iteration_share), 100.0 * finite_or_zero(t.over_lower_bound));
  s += fmt::format("\npath: {} (chunked {}, one-shot {}, absorbed {}){}", t.path(), t.on(explore::EnginePath::chunked),
                   t.on(explore::EnginePath::one_shot), t.on(explore::EnginePath::absorbed),
                   t.buffer_free ? ": the whole context at once, no buffer" : "");
  if (r.refused > 0)
    s += fmt::format("\nrefused {:.2f}% ({} of {} batches), counted as never done", 100.0 * r.refused_share(), r.refused,
                     r.batches);
  if (rec && options) {
    s += "\nrecommended: " + recommended_text(*options);
    if (!rec->next_larger.empty()) s += "\nnext larger: " + clip_text(rec->next_larger, kTipChars);
  }
  return s;
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

// One series per recommend() group, in first-seen order, and the rows of each by buffer size. The
// legend names the model only when the rows have several (`one_model` false); a group no buffer
// qualifies in says so.
std::vector<std::vector<size_t>> group_rows(const std::vector<SweepRow>& rows, const std::set<std::string>& unmet,
                                            bool one_model, std::vector<SweepSeries>& series) {
  // Groups whose every row runs every batch one-shot on the cost file's GPU (TensorRT-LLM below
  // SM100): their time does not depend on the buffer, and the legend says so.
  std::map<std::string, bool> one_shot;
  for (const SweepRow& r : rows) {
    const bool all = r.time && r.time->on(explore::EnginePath::one_shot) == r.batches && r.batches > 0;
    auto [it, fresh] = one_shot.emplace(group_of(r, true), all);
    if (!fresh) it->second = it->second && all;
  }
  std::map<std::string, size_t> index;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, fresh] = index.emplace(group_of(rows[i], true), series.size());
    if (fresh) {
      SweepSeries s;
      s.key = it->first;
      // The note is kept whole; a long (model) name is clipped before it.
      const std::string_view note = unmet.count(s.key)  ? " (no buffer qualifies)"
                                    : one_shot[s.key] ? " (one-shot at every buffer)"
                                                      : "";
      s.label = clip_text(group_of(rows[i], !one_model), kLegendChars - note.size()) + std::string(note);
      const size_t n = series.size();
      s.swatch = sequence_swatch(n);
      s.shape = kShapes[n % (sizeof(kShapes) / sizeof(kShapes[0]))];
      series.push_back(std::move(s));
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  for (std::vector<size_t>& m : members)
    std::stable_sort(m.begin(), m.end(), [&](size_t a, size_t b) { return rows[a].buffer_tokens < rows[b].buffer_tokens; });

  return members;
}

// A line that later ones cover on half its points or more is drawn wider (as plot_sweep.py does):
// max's iterations do not depend on M, packed often matches max, and models or TPs repeat them all.
// Values within 2% of the larger of the value and `floor` match, and so do two infinities (p99 times
// refusals make infinite). Returns each series' line width.
template <class Value>
std::vector<double> covered_widths(const std::vector<SweepRow>& rows, const std::vector<std::vector<size_t>>& members,
                                   Value value, double floor) {
  auto same = [&](size_t a, size_t b) {
    size_t hits = 0;
    for (size_t i : members[a]) {
      const double v = value(rows[i]);
      for (size_t j : members[b]) {
        const double w = value(rows[j]);
        const bool match = std::isinf(v) || std::isinf(w) ? std::isinf(v) && std::isinf(w)
                                                          : std::abs(w - v) <= 0.02 * std::max(floor, v);
        if (rows[j].buffer_tokens == rows[i].buffer_tokens && match) {
          ++hits;
          break;
        }
      }
    }
    return hits * 2 >= members[a].size();
  };
  std::vector<double> widths;
  for (size_t a = 0; a < members.size(); ++a) {
    size_t covered = 0;
    for (size_t b = a + 1; b < members.size(); ++b) covered += same(a, b) ? 1 : 0;
    widths.push_back(2.0 + 1.5 * static_cast<double>(std::min<size_t>(3, covered)));
  }
  return widths;
}

void widen_covered_lines(const std::vector<SweepRow>& rows, const std::vector<std::vector<size_t>>& members,
                         std::vector<SweepSeries>& series) {
  const std::vector<double> widths = covered_widths(rows, members, [](const SweepRow& r) { return double(r.p99); }, 1.0);
  // A row without a time never matches (NaN), so its line is not widened for lines it is not under.
  const std::vector<double> time_widths = covered_widths(
      rows, members,
      [](const SweepRow& r) { return r.time ? r.time->step_ms(r.time->p99_us) : std::numeric_limits<double>::quiet_NaN(); },
      0.0);
  for (size_t a = 0; a < series.size(); ++a) {
    series[a].width = widths[a];
    series[a].radius = 2.0 + 0.75 * widths[a];
    series[a].time_width = time_widths[a];
    series[a].time_radius = 2.0 + 0.75 * time_widths[a];
  }
}

// The value ranges: x the distinct buffer sizes; y the p99s, the means and K.
struct Ranges {
  std::vector<uint64_t> sizes;
  double peak = 0, min_positive = std::numeric_limits<double>::infinity();
  bool any_refused = false, any_recommended = false;
};

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
  }
  if (rec && !by_time(rec)) see(rec->max_iterations);  // K, drawn only when it is the target
  out.sizes.assign(size_set.begin(), size_set.end());

  return out;
}

// The time panel's y axis in values, before any px: the step times' range, linear from 0 or log10,
// its ticks, and whether refusals make some p99 infinite.
struct TimeAxis {
  Scale::Kind kind = Scale::Kind::linear;
  double t0 = 0, t1 = 1;
  std::vector<std::pair<double, std::string>> ticks;
  std::vector<std::string> title;
  bool never = false;
  double label_width = 0;  // the widest tick label ("never" included), for the left margin
};

TimeAxis time_axis(const std::vector<SweepRow>& rows) {
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

// The legend: the series, then keys to the line styles and marks that appear.
void add_legend(SweepPicture& L, const Ranges& v, const std::optional<RecommendOptions>& rec, bool timed) {
  for (size_t i = 0; i < L.series.size(); ++i) L.legend.push_back({LegendEntry::Kind::series, L.series[i].label, i});
  if (!L.series.empty()) {
    L.legend.push_back({LegendEntry::Kind::gap, {}, 0});
    L.legend.push_back({LegendEntry::Kind::solid, timed ? "solid: p99 (iterations, ms per step)" : "solid: p99 iterations per batch", 0});
    L.legend.push_back({LegendEntry::Kind::dashed, timed ? "dashed: mean (iterations, ms per step)" : "dashed: mean iterations per batch", 0});
    if (v.any_refused) L.legend.push_back({LegendEntry::Kind::hollow, "hollow: some batches refused", 0});
    if (rec) {
      const std::string q = explore::quantile_name(rec->quantile);
      if (by_time(rec))  // K plays no part: no limit line
        L.legend.push_back({LegendEntry::Kind::text, fmt::format("recommend: {} step time within {:g}% of the best", q,
                                                                 100.0 * rec->within), 0});
      else
        L.legend.push_back({LegendEntry::Kind::limit,
                            fmt::format("K = {}: recommend's limit at {}", rec->max_iterations, q), 0});
      if (rec->memory_budget)
        L.legend.push_back({LegendEntry::Kind::text, fmt::format("memory budget {}", io::format_bytes(*rec->memory_budget)), 0});
    }
    if (v.any_recommended)
      L.legend.push_back({LegendEntry::Kind::ring,
                          by_time(rec) ? fmt::format("ring: the smallest buffer within {:g}%", 100.0 * rec->within)
                                       : std::string("ring: the smallest buffer within K"), 0});
  }
}

// What the predicted times hold for, one line per cost model ("deepseek-v3 TP8: NVIDIA H200, ...").
std::vector<std::string> cost_lines(const SweepResult& sweep) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < sweep.costs.size(); ++i) {
    if (i + 1 == kMaxCostLines && sweep.costs.size() > kMaxCostLines) {
      lines.push_back(fmt::format("and {} more cost models", sweep.costs.size() - i));
      break;
    }
    const cost::CostModel& c = sweep.costs[i];
    lines.push_back(fmt::format("{}cost model {} TP{}: {}", i == 0 ? "predicted by " : "", c.model, c.tp, c.describe()));
  }
  return lines;
}

// Left of the plots: the time panel's tick labels and its y title (one or two rotated lines) may need
// more room than the iterations panel's kMarginLeft, and both panels share one left edge.
double left_margin(const TimeAxis* time) {
  if (!time) return kMarginLeft;
  const double title = kAxisTitleSize + static_cast<double>(std::max<size_t>(1, time->title.size()) - 1) * kAxisTitleLine;
  return std::max(kMarginLeft, kMarginOuter + title + 10 + time->label_width + 9);
}

// The frame: title on top, the plot (and the time panel under it), the legend to its right; the
// title clipped to the picture's width (a 10,000-character source name stays one line).
void frame_and_title(SweepPicture& L, const SweepResult& sweep, const std::string& common_model, const TimeAxis* time) {
  double legend_width = 0;
  for (const LegendEntry& e : L.legend)
    legend_width = std::max(legend_width, kLegendSample + 8 + label_width(e.label, kLegendSize));

  const bool subtitle = !sweep.formation.empty() || !common_model.empty() || sweep.interrupted;
  const std::vector<std::string> costs = time ? cost_lines(sweep) : std::vector<std::string>();
  const double title_y = kMarginOuter + kTitleSize;
  L.top = title_y + (subtitle ? kTitleLine : 0) + kTitleLine * static_cast<double>(costs.size()) + 22;
  L.left = left_margin(time);
  L.right = L.left + kPlotWidth;
  L.bottom = L.top + kPlotHeight;
  double lowest = L.bottom;
  if (time) {
    L.time.emplace();
    L.time->top = L.bottom + kTimePanelGap;
    L.time->bottom = L.time->top + kTimePlotHeight;
    lowest = L.time->bottom;
  }
  L.x_title_y = lowest + 42;
  L.legend_x = L.right + kLegendGap;
  L.legend_y = L.top + 8;
  L.width = L.legend.empty() ? L.right + 2 * kMarginOuter : L.legend_x + legend_width + kMarginOuter;
  L.height = std::max(lowest + 56, L.legend_y + kLegendRow * static_cast<double>(L.legend.size()) + kMarginOuter);

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
      sub += (sub.empty() ? "" : "; ") + fmt::format("interrupted: {} of {} settings", sweep.rows.size(), sweep.settings);
    L.title.push_back({clip_text(sub, chars_fitting(text_room, kSubtitleSize)), title_y + kTitleLine,
                       kSubtitleSize, kMutedInk});
  }
  double y = title_y + (subtitle ? kTitleLine : 0);
  for (const std::string& line : costs) {
    y += kTitleLine;
    L.title.push_back({clip_text(line, chars_fitting(text_room, kSubtitleSize)), y, kSubtitleSize, kMutedInk});
  }
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

}  // namespace

SweepPicture measure_sweep(const SweepReport& report) {
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
  std::vector<const explore::Recommendation*> choice(rows.size(), nullptr);  // the recommendation choosing the row
  std::set<std::string> unmet;  // groups where no buffer in the sweep qualifies
  if (rec) {
    for (const explore::Recommendation& r : report.recommendations) {
      if (r.row && *r.row < rows.size()) {
        recommended[*r.row] = true;
        choice[*r.row] = &r;
      }
      if (!r.row && !r.whole_row) unmet.insert(r.group);
    }
  }
  // Any row with a time gives the panel; a row without one (none in a sweep check_costs passed) has no point in it.
  const bool timed = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.time.has_value(); });
  const std::optional<TimeAxis> time = timed ? std::optional<TimeAxis>(time_axis(rows)) : std::nullopt;

  const std::vector<std::vector<size_t>> members = group_rows(rows, unmet, one_model, L.series);
  widen_covered_lines(rows, members, L.series);
  const Ranges ranges = value_ranges(rows, recommended, rec);
  const std::vector<uint64_t>& sizes = ranges.sizes;
  add_legend(L, ranges, rec, timed);
  frame_and_title(L, sweep, common_model, time ? &*time : nullptr);
  x_axis(L, sizes);
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
        t.tip = time_tip(r, choice[i], rec);
        p.time = std::move(t);
      }
      L.series[s].points.push_back(std::move(p));
    }
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
