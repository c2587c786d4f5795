// The frame of a sweep's chart: the title and subtitle lines, what the predicted times hold for, the
// plot area's place (and the time panel's under it), the legend's rows under them and the picture's size.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/render/sweep_measure.hpp"

namespace mlaplan::render::sweep_detail {

using namespace sweep_style;

namespace {

// The source in the title at most this long, so that the batch count after it stays in its lines.
constexpr size_t kMaxTitleChars = 320;

// What the predicted times hold for, one line per cost model ("deepseek-v3 TP8: NVIDIA H200, ...").
std::vector<std::string> cost_lines(const SweepResult& sweep) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < sweep.costs.size(); ++i) {
    if (i + 1 == kMaxCostLines && sweep.costs.size() > kMaxCostLines) {
      lines.push_back(fmt::format("and {} more cost models", sweep.costs.size() - i));
      break;
    }
    const cost::CostModel& c = sweep.costs[i];
    lines.push_back(fmt::format("{}cost model {} TP{}: {}", i == 0 ? "predicted by " : "", c.model, c.tp, c.describe(sweep_has_eager(sweep))));
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

}  // namespace

// The frame: title on top, the plot (and the time panel under it), the legend under them in columns
// across the plot's width (a column beside the plot left a third of the picture blank); the title
// clipped to the picture's width (a 10,000-character source name stays one line).
void frame_and_title(SweepPicture& L, const SweepResult& sweep, const std::string& common_model, const TimeAxis* time,
                     double extra_top) {
  double legend_width = 0;
  for (const LegendEntry& e : L.legend)
    legend_width = std::max(legend_width, kLegendSample + 8 + label_width(e.label, kLegendSize));

  const bool subtitle = !sweep.formation.empty() || !common_model.empty() || sweep.interrupted;
  L.left = left_margin(time);
  L.right = L.left + kPlotWidth;
  // A label longer than the plot is wide (hostile model names are clipped to kLegendChars) widens the picture.
  L.width = std::max(L.right + 2 * kMarginOuter, L.left + legend_width + kMarginOuter);
  const double text_room = L.width - 2 * kMarginOuter;
  // What the times hold for, each cost model's line wrapped once at the width rather than cut.
  std::vector<std::string> costs;
  if (time)
    for (const std::string& line : cost_lines(sweep))
      for (std::string& part : wrap_to_width(line, kSubtitleSize, text_room, 2)) costs.push_back(std::move(part));
  // The title wraps to three lines and the subtitle to two (a workload's source ran past 1,000 px, cut mid-word);
  // past that they are clipped (a 10,000-character source name stays three lines).
  const std::string source = sweep.source.empty() ? std::string("(no source)") : sweep.source;
  const std::vector<std::string> title =
      wrap_to_width(clip_text("mlaplan sweep: " + source, kMaxTitleChars) + fmt::format(", {} batches", sweep.batches),
                    kTitleSize, text_room, 3);
  std::vector<std::string> sub_lines;
  if (subtitle) {
    std::string sub = sweep.formation;
    if (!common_model.empty()) sub += (sub.empty() ? "" : "; ") + common_model;
    if (sweep.interrupted)
      sub += (sub.empty() ? "" : "; ") + fmt::format("interrupted: {} of {} settings", sweep.rows.size(), sweep.settings);
    sub_lines = wrap_to_width(sub, kSubtitleSize, text_room, 2);
  }
  const double title_y = kMarginOuter + kTitleSize;
  L.top = title_y + kTitleLine * static_cast<double>(title.size() - 1 + sub_lines.size() + costs.size()) + 22 + extra_top;
  L.bottom = L.top + kPlotHeight;
  double lowest = L.bottom;
  if (time) {
    L.time.emplace();
    L.time->top = L.bottom + kTimePanelGap;
    L.time->bottom = L.time->top + kTimePlotHeight;
    lowest = L.time->bottom;
  }
  L.x_title_y = lowest + 42;
  L.height = lowest + 56;
  if (!L.legend.empty()) {
    // Row by row from the plot's left edge, each group (the series; after a gap entry, the keys) on
    // rows of its own in as many columns of its widest label as the plot's width holds.
    L.legend_y = L.x_title_y + kLegendGap;
    double row = 0;  // the next row, in rows from the first; half a row between groups
    for (size_t from = 0; from < L.legend.size();) {
      size_t to = from;
      double widest = 0;
      for (; to < L.legend.size() && L.legend[to].kind != LegendEntry::Kind::gap; ++to)
        widest = std::max(widest, kLegendSample + 8 + label_width(L.legend[to].label, kLegendSize));
      const double column = widest + kLegendGap;
      const size_t columns = std::max<size_t>(1, static_cast<size_t>((L.right - L.left + kLegendGap) / column));
      for (size_t i = from; i < to; ++i) {
        const size_t k = i - from;
        L.legend[i].x = L.left + static_cast<double>(k % columns) * column;
        L.legend[i].y = L.legend_y + kLegendRow * (row + static_cast<double>(k / columns));
      }
      if (to > from) row += static_cast<double>((to - from + columns - 1) / columns) + 0.5;
      from = to + 1;  // past the gap
    }
    L.height = L.legend_y + kLegendRow * std::max(row - 1.5, 0.0) + kLegendRow / 2 + kMarginOuter;  // past the last row
  }

  double y = title_y;
  for (size_t i = 0; i < title.size(); ++i, y += kTitleLine) L.title.push_back({title[i], y, kTitleSize, kInk});
  for (const std::string& line : sub_lines) {
    L.title.push_back({line, y, kSubtitleSize, kMutedInk});
    y += kTitleLine;
  }
  y -= kTitleLine;
  for (const std::string& line : costs) {
    y += kTitleLine;
    L.title.push_back({line, y, kSubtitleSize, kMutedInk});
  }
}

}  // namespace mlaplan::render::sweep_detail
