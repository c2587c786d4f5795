// The series of a sweep's chart, one per recommend() group, with their line widths, and the legend
// that names them and keys the line styles and marks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/render/sweep_measure.hpp"

namespace mlaplan::render::sweep_detail {

using namespace sweep_style;

namespace {

constexpr Shape kShapes[] = {Shape::circle, Shape::square, Shape::triangle, Shape::diamond};

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

}  // namespace

// One series per recommend() group, in first-seen order, and the rows of each by buffer size. The
// legend names the model only when the rows have several (`one_model` false); a group no buffer
// qualifies in says so.
std::vector<std::vector<size_t>> group_rows(const std::vector<SweepRow>& rows, const std::set<std::string>& unmet,
                                            bool one_model, std::vector<SweepSeries>& series) {
  // Groups whose every row runs every batch one-shot on the cost file's GPU (TensorRT-LLM below
  // SM100): their time does not depend on the buffer, and the legend says so.
  std::map<std::string, bool> one_shot;
  for (const SweepRow& r : rows) {
    const bool all = r.time && r.time->on(policies::EnginePath::one_shot) == r.batches && r.batches > 0;
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

// The legend: the series, then keys to the line styles and marks that appear.
void add_legend(SweepPicture& L, const Ranges& v, const std::optional<RecommendOptions>& rec, bool timed, bool fused) {
  for (size_t i = 0; i < L.series.size(); ++i) L.legend.push_back({LegendEntry::Kind::series, L.series[i].label, i});
  if (!L.series.empty()) {
    L.legend.push_back({LegendEntry::Kind::gap, {}, 0});
    L.legend.push_back({LegendEntry::Kind::solid, timed ? "solid: p99 (iterations, ms per step)" : "solid: p99 iterations per batch", 0});
    L.legend.push_back({LegendEntry::Kind::dashed, timed ? "dashed: mean (iterations, ms per step)" : "dashed: mean iterations per batch", 0});
    if (fused) L.legend.push_back({LegendEntry::Kind::fused, "dotted: p99 ms per step in mlaplan's fused loop (same plan)", 0});
    if (v.any_refused) L.legend.push_back({LegendEntry::Kind::hollow, "hollow: some batches refused", 0});
    if (v.any_host_bound)
      L.legend.push_back({LegendEntry::Kind::host,
                          fmt::format("dashed square: host-bound, the device waits {:g}%+ of the step", 100.0 * kHostBoundMark), 0});
    if (rec) {
      const std::string q = sweeps::quantile_name(rec->quantile);
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

}  // namespace mlaplan::render::sweep_detail
