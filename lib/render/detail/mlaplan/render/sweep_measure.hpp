// The steps of measuring a sweep's chart (measure_sweep, sweep_picture.hpp), one concept a file:
// the words (sweep_text.cpp), the series and their legend (sweep_series.cpp), the iterations panel's
// axes (sweep_axes.cpp), the time panel (sweep_time_panel.cpp) and the frame and title
// (sweep_frame.cpp); sweep_picture.cpp takes them in turn. Private to the render layer (detail/,
// never installed).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/render/sweep_picture.hpp"
#include "mlaplan/render/svg_writer.hpp"

namespace mlaplan::render::sweep_detail {

using sweeps::RecommendOptions;
using sweeps::SweepResult;
using sweeps::SweepRow;

// Sizes in px. The plot area is fixed so that charts of different sweeps compare side by side; the
// legend's rows under it and the height grow with what they hold.
inline constexpr double kPlotWidth = 880;
inline constexpr double kPlotHeight = 400;
inline constexpr double kMarginLeft = 78;    // room for the y tick labels and the rotated y title
inline constexpr double kLegendGap = 28;       // between the x axis's title and the legend, and between its columns
inline constexpr double kMemoryAxisRoom = 36;  // above the plot: the memory tick labels and their title
inline constexpr size_t kLegendChars = 48;   // longer legend labels (hostile model names) are clipped
inline constexpr size_t kTipChars = 200;     // the same for text inside tooltips
inline constexpr size_t kMaxXTicks = 12;     // as plot_sweep.py: every ceil(n / 12)-th buffer size gets a tick
// Log y past plot_sweep.py's 50 iterations, but only when the values span a factor of 8 too: a log
// axis over 60..100 spreads nothing and loses the zero.
inline constexpr double kLogAbove = 50;
inline constexpr double kLogSpan = 8;
// The time panel. Its log axis needs only the span: no small counts in ms that a log axis would blur.
inline constexpr double kTimePlotHeight = 400;  // as the iterations panel, so the two compare by eye
inline constexpr double kTimePanelGap = 44;     // between the panels: the upper one's x tick labels
inline constexpr double kNeverBand = 24;        // above the time scale: the p99s refusals make infinite
inline constexpr const char* kNeverLabel = "refused";  // the band of times the quantile cannot reach
inline constexpr double kTitleLine = sweep_style::kSubtitleSize + 6;
inline constexpr size_t kMaxCostLines = 3;      // a grid of many models and TPs: the rest summed up in one line

inline double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

inline bool by_time(const std::optional<RecommendOptions>& rec) { return rec && rec->objective == sweeps::Objective::time; }

// A label's width, so ticks can drop labels that would run into their neighbours.
inline double label_width(const std::string& s, double size) { return text_width(s, size); }

// The greatest number of characters of `size` px text that fit in `px`.
inline size_t chars_fitting(double px, double size) { return static_cast<size_t>(std::max(0.0, px / (size * 0.62))); }

// 1, 2 or 5 x 10^k, at least `raw` (sweep_axes.cpp).
double nice_step(double raw);

// The words (sweep_text.cpp).
std::string model_of(const SweepRow& r);
std::string group_of(const SweepRow& r, bool with_model);
std::string point_tip(const SweepRow& r, bool recommended, const std::optional<RecommendOptions>& rec);
std::string time_tip(const SweepRow& r, const sweeps::Recommendation* rec, const std::optional<RecommendOptions>& options);

// The series and the legend (sweep_series.cpp).
std::vector<std::vector<size_t>> group_rows(const std::vector<SweepRow>& rows, const std::set<std::string>& unmet,
                                            bool one_model, std::vector<SweepSeries>& series);
void widen_covered_lines(const std::vector<SweepRow>& rows, const std::vector<std::vector<size_t>>& members,
                         std::vector<SweepSeries>& series);

// The value ranges: x the distinct buffer sizes; y the p99s, the means and K.
struct Ranges {
  std::vector<uint64_t> sizes;
  double peak = 0, min_positive = std::numeric_limits<double>::infinity();
  bool any_refused = false, any_recommended = false, any_host_bound = false;
};

void add_legend(SweepPicture& L, const Ranges& v, const std::optional<RecommendOptions>& rec, bool timed, bool fused = false);

// The iterations panel's axes (sweep_axes.cpp).
Ranges value_ranges(const std::vector<SweepRow>& rows, const std::vector<bool>& recommended,
                    const std::optional<RecommendOptions>& rec);
void x_axis(SweepPicture& L, const std::vector<uint64_t>& sizes);
// Room above the plot for the memory axis: whether the rows have one model's memory to show.
bool has_memory_axis(const std::vector<SweepRow>& rows, bool one_model);
// The memory axis over the x ticks and the budget's place on it (after x_axis).
void memory_axis(SweepPicture& L, const std::vector<SweepRow>& rows, const std::optional<RecommendOptions>& rec);
void y_axis(SweepPicture& L, double peak, double min_positive);

// The time panel's y axis in values, before any px: the step times' range, linear from 0 or log10,
// its ticks, and whether refusals make some p99 infinite.
struct TimeAxis {
  Scale::Kind kind = Scale::Kind::linear;
  double t0 = 0, t1 = 1;
  std::vector<std::pair<double, std::string>> ticks;
  std::vector<std::string> title;
  bool never = false;
  double label_width = 0;  // the widest tick label ("refused" included), for the left margin
};

// The time panel (sweep_time_panel.cpp).
// `fused`: mlaplan's fused loop's rows drawn beside them (sweep_picture.hpp's FusedPoint), or null.
TimeAxis time_axis(const std::vector<SweepRow>& rows, const std::vector<SweepRow>* fused = nullptr);
void time_panel(TimePanel& T, const TimeAxis& a);

// The frame and title (sweep_frame.cpp).
// extra_top: room above the plot for the memory axis.
void frame_and_title(SweepPicture& L, const SweepResult& sweep, const std::string& common_model, const TimeAxis* time,
                     double extra_top = 0);

}  // namespace mlaplan::render::sweep_detail
