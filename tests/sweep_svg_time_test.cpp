// The sweep chart's time panel (lib/render/sweep_svg.cpp): with predicted times (--cost), a second
// panel of predicted ms per step under the iterations one, its points, recommendation and axis.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/workloads/workload.hpp"
#include "mlaplan/render/sweep_picture.hpp"
#include "mlaplan/render/sweep_svg.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "svg_checks.hpp"
#include "sweep_svg_fixtures.hpp"

namespace mlaplan::render {
namespace {

using namespace sweep_fixtures;

const std::string kCostFile = std::string(MLAPLAN_SOURCE_DIR) + "/tests/data/cost/deepseek-v3-tp8-example.json";

// A real sweep with the example cost model: max at M=16 refuses most batches at 4K (its p99 time is
// then infinite), packed and even-split never refuse.
SweepResult timed_sweep(const std::string& cost_file = kCostFile, bool eager = false) {
  auto source = workloads::preset_source(workloads::find_workload_preset("coding-agent"), 5);
  const std::vector<Batch> batches =
      workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 300, 5);
  sweeps::SweepGrid grid;
  grid.buffer_tokens = {4096, 16384, 65536, 262144};
  grid.max_chunks = {16};
  grid.policies = policies::parse_policies("max,packed,even-split", policies::Policy{});
  grid.models = {models::find_model_preset("deepseek-v3")};
  grid.tps = {8};
  grid.costs = {cost::read_cost_model(cost_file)};
  grid.eager = eager;
  sweeps::SweepOptions options;
  options.threads = 1;
  SweepResult s = sweeps::run_sweep(batches, grid, options);
  s.source = "coding-agent with a cost model";
  return s;
}

// The SVG up to the time panel, and the time panel.
std::pair<std::string, std::string> panels(const std::string& svg) {
  const size_t at = svg.find("<g class=\"time-panel\">");
  if (at == std::string::npos) return {svg, ""};
  return {svg.substr(0, at), svg.substr(at)};
}

// The polylines (SvgWriter writes one element per line) whose dash pattern is `dash`.
size_t polylines(const std::string& svg, std::string_view dash) {
  const std::string want = "stroke-dasharray=\"" + std::string(dash) + "\"";
  size_t n = 0;
  for (size_t at = svg.find("<polyline "); at != std::string::npos; at = svg.find("<polyline ", at + 1)) {
    const std::string element = svg.substr(at, svg.find('>', at) - at);
    n += element.find(want) != std::string::npos ? 1 : 0;
  }
  return n;
}

TEST(SweepSvgTime, SecondPanelWithOneLinePerSeriesAndStyle) {
  const SweepResult s = timed_sweep();
  ASSERT_TRUE(sweeps::sweep_has_time(s));
  SweepReport report;
  report.sweep = &s;
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find(">predicted ms per step"), std::string::npos);
  EXPECT_NE(svg.find("(p99 solid, mean dashed"), std::string::npos);
  // Under the title: what the times were calibrated on, wrapped at the width rather than cut.
  const SweepPicture picture = measure_sweep(report);
  std::string title;
  for (const TextLine& t : picture.title) title += (title.empty() ? "" : " ") + t.text;
  EXPECT_NE(title.find(s.costs.at(0).describe()), std::string::npos) << title;
  for (const TextLine& t : picture.title) EXPECT_LE(text_width(t.text, t.size), picture.width - 2 * sweep_style::kMarginOuter) << t.text;

  const size_t groups = sweeps::recommend(s, RecommendOptions{}).size();
  ASSERT_EQ(groups, 3u);
  const auto [iterations, time] = panels(svg);
  ASSERT_FALSE(time.empty());
  EXPECT_EQ(count(iterations, "class=\"series\""), groups);
  EXPECT_EQ(count(time, "class=\"time-series\""), groups);
  EXPECT_EQ(count(time, "class=\"series\""), 0u);
  // In each panel, a solid p99 line per series and a dashed mean line; the time panel's mean breaks
  // at settings that refuse batches (they have no mean), so it has one line per run of two or more.
  EXPECT_EQ(polylines(iterations, "none"), groups);
  EXPECT_EQ(polylines(iterations, "5 3"), groups);
  EXPECT_EQ(polylines(time, "none"), groups);
  size_t runs = 0, run = 0;
  std::string group;
  for (const sweeps::SweepRow& r : s.rows) {  // policy-major, buffer sizes ascending: a series' rows in a row
    const std::string g = r.policy.name() + (r.max_chunks ? " M=" + std::to_string(*r.max_chunks) : "");
    if (g != group || std::isinf(r.time->mean_us)) {
      runs += run >= 2;
      run = 0;
    }
    group = g;
    if (!std::isinf(r.time->mean_us)) ++run;
  }
  runs += run >= 2;
  EXPECT_EQ(polylines(time, "5 3"), runs);
  EXPECT_EQ(count(iterations, "class=\"point"), s.rows.size());
  EXPECT_EQ(count(time, "class=\"time-point"), s.rows.size());
  EXPECT_EQ(count(iterations, "class=\"time-point"), 0u);
  // The same x ticks under both panels.
  for (const char* label : {">4K<", ">16K<", ">64K<", ">256K<"}) {
    EXPECT_EQ(count(iterations, label), 1u) << label;
    EXPECT_EQ(count(time, label), 1u) << label;
  }

  // Each time point's tooltip: the setting, its step times and how much the iterations cost.
  const std::vector<std::string> tips = titles(time);
  for (const SweepRow& r : s.rows) {
    const std::vector<std::string> mine = tips_for(tips, r);
    EXPECT_FALSE(mine.empty()) << "no time tooltip for " << r.setting();
    for (const std::string& t : mine) {
      EXPECT_NE(t.find("predicted ms per step (61 layers): p50 "), std::string::npos) << t;
      EXPECT_NE(t.find(", p99 "), std::string::npos) << t;
      EXPECT_NE(t.find(", max "), std::string::npos) << t;
      // The mean over every batch, or where some are refused, the count and the mean over the rest.
      if (r.time->refused == 0)
        EXPECT_NE(t.find("(mean " + sweeps::format_ms(r.time->mean_us * 61 / 1e3) + ")"), std::string::npos) << t;
      else
        EXPECT_NE(t.find(sweeps::refused_text(r.time->refused, r.batches) + " refused; mean "), std::string::npos) << t;
      EXPECT_NE(t.find("per-iteration share "), std::string::npos) << t;
      EXPECT_NE(t.find("over bound "), std::string::npos) << t;
    }
  }

  // A cost file's own words reach the picture escaped and clipped to one line.
  SweepResult hostile = s;
  hostile.costs[0].gpu = "<script>alert('x')</script> & " + std::string(5000, 'G');
  const std::string escaped = sweep_svg(SweepReport{&hostile, {}, {}});
  expect_valid_svg(escaped);
  EXPECT_EQ(escaped.find("<script"), std::string::npos);
  EXPECT_NE(escaped.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(escaped.find(std::string(400, 'G')), std::string::npos);
}

// Measured: the time panel lies under the iterations panel with the same x, and every point of either
// stays inside its own plot area; a p99 refusals make infinite sits on the band above the scale, drawn
// hollow as the iterations panel draws refused points.
TEST(SweepSvgTime, PointsStayInsideTheirPanelsAndRefusedTimesGoOnTheNeverBand) {
  const SweepResult s = timed_sweep();
  SweepReport report;
  report.sweep = &s;
  const SweepPicture p = measure_sweep(report);
  ASSERT_TRUE(p.time);
  const TimePanel& t = *p.time;
  EXPECT_GT(t.top, p.bottom + 20);  // room for the upper panel's tick labels
  EXPECT_EQ(t.bottom - t.top, p.bottom - p.top);
  ASSERT_TRUE(t.never);
  EXPECT_GT(t.never->pos, t.top);
  EXPECT_LT(t.never->pos, t.y.p1);  // above the scale's top
  size_t never = 0;
  for (const SweepSeries& series : p.series) {
    for (const SweepPoint& pt : series.points) {
      ASSERT_TRUE(pt.time);
      EXPECT_GE(pt.x, p.left);
      EXPECT_LE(pt.x, p.right);
      EXPECT_GE(pt.y, p.top);
      EXPECT_LE(pt.y, p.bottom);
      const SweepRow& r = s.rows[pt.row];
      // No mean where the setting refuses batches: NaN, which the line skips.
      EXPECT_EQ(std::isnan(pt.time->y_mean), std::isinf(r.time->mean_us)) << r.setting();
      for (double y : {pt.time->y, pt.time->y_mean}) {
        if (std::isnan(y)) continue;
        EXPECT_GE(y, t.top);
        EXPECT_LE(y, t.bottom);
      }
      if (std::isinf(r.time->p99_us)) {
        ++never;
        EXPECT_TRUE(pt.refused) << r.setting();
        EXPECT_EQ(pt.time->y, t.never->pos) << r.setting();
        EXPECT_NE(pt.time->tip.find("p99 none"), std::string::npos) << pt.time->tip;
        EXPECT_EQ(pt.time->tip.find("never"), std::string::npos) << pt.time->tip;
      } else {
        EXPECT_GE(pt.time->y, t.y.p1) << r.setting();
      }
    }
  }
  EXPECT_GT(never, 0u);  // max at 4K

  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);  // no infinite coordinate
  const std::string time = panels(svg).second;
  EXPECT_NE(time.find(">refused</text>"), std::string::npos);
  size_t refused = 0;
  for (const SweepRow& r : s.rows) refused += r.refused > 0 ? 1 : 0;
  EXPECT_EQ(count(time, "class=\"time-point refused\""), refused);
}

TEST(SweepSvgTime, RecommendationByTimeRingsItsChoiceInBothPanels) {
  const SweepResult s = timed_sweep();
  RecommendOptions o;
  o.objective = sweeps::Objective::time;
  o.within = 0.05;
  SweepReport report;
  report.sweep = &s;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  size_t chosen = 0;
  for (const sweeps::Recommendation& r : report.recommendations) chosen += r.row ? 1 : 0;
  ASSERT_GT(chosen, 0u);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  const auto [iterations, time] = panels(svg);
  EXPECT_EQ(count(iterations, "class=\"recommended\""), chosen);
  EXPECT_EQ(count(time, "class=\"recommended\""), chosen);
  // K is no target here: no limit line, and the legend says what the ring means.
  EXPECT_EQ(svg.find("class=\"limit\""), std::string::npos);
  EXPECT_EQ(svg.find("K = "), std::string::npos);
  EXPECT_NE(svg.find(">recommend: p99 step time within 5% of the best<"), std::string::npos);
  EXPECT_NE(svg.find(">ring: the smallest buffer within 5%<"), std::string::npos);
  size_t marked = 0;
  for (const std::string& t : titles(time))
    marked += t.find("recommended: the smallest buffer of its group whose p99 step time is within 5%") != std::string::npos;
  EXPECT_EQ(marked, chosen);

  // By iterations: the rings stay in the iterations panel, with K.
  o.objective = sweeps::Objective::iterations;
  o.max_iterations = 8;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  const std::string by_k = sweep_svg(report);
  expect_valid_svg(by_k);
  EXPECT_GT(count(panels(by_k).first, "class=\"recommended\""), 0u);
  EXPECT_EQ(count(panels(by_k).second, "class=\"recommended\""), 0u);
  EXPECT_NE(by_k.find(">K = 8<"), std::string::npos);
}

// Hand-made times: a log axis when they span more than a factor of 8, linear from 0 otherwise.
TEST(SweepSvgTime, LogAxisOnlyForTimesSpanningMoreThanEight) {
  SweepResult s = two_policies();
  for (size_t i = 0; i < s.rows.size(); ++i) {
    sweeps::TimeStats t;
    t.layers = 10;
    t.mean_us = 100 + 10.0 * static_cast<double>(i);
    t.p50_us = t.mean_us;
    t.p90_us = t.p99_us = t.max_us = 1.5 * t.mean_us;
    s.rows[i].time = t;
  }
  SweepReport report;
  report.sweep = &s;
  const SweepPicture linear = measure_sweep(report);
  ASSERT_TRUE(linear.time);
  EXPECT_EQ(linear.time->y.kind, Scale::Kind::linear);
  EXPECT_EQ(linear.time->y.t0, 0);
  EXPECT_FALSE(linear.time->never);
  EXPECT_NE(sweep_svg(report).find(">predicted ms per step (p99 solid, mean dashed)<"), std::string::npos);

  s.rows[0].time->p99_us = 20 * s.rows[7].time->mean_us;
  const SweepPicture log = measure_sweep(report);
  EXPECT_EQ(log.time->y.kind, Scale::Kind::log10);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find("log scale)<"), std::string::npos);
  for (const SweepSeries& series : log.series)
    for (const SweepPoint& pt : series.points) {
      EXPECT_GE(pt.time->y, log.time->top);
      EXPECT_LE(pt.time->y, log.time->bottom);
    }
  // The rotated title's lines and the tick labels keep clear of each other: the left margin grows.
  // (The last line's baseline, plus a descent of a quarter of its size; labels end 9 px left of the frame.)
  using namespace sweep_style;
  const double lines = static_cast<double>(log.time->y_title.size());
  const double title_right = kMarginOuter + kAxisTitleSize + (lines - 1) * kAxisTitleLine + kAxisTitleSize / 4;
  double widest = 0;
  for (const Tick& t : log.time->y_ticks) widest = std::max(widest, text_width(t.label, kTickSize));
  EXPECT_LT(title_right + 4, log.left - 9 - widest);
}

// Without times the chart is the one it always was: no second panel, nothing said of a cost model
// (even where the sweep still lists one), the same picture as the rows' own.
// Eager timing: each point whose device waits for the host 5% of the step or more gets a dashed
// square in the time panel, its tooltip the share, and the legend a key; graph timing none of them.
TEST(SweepSvgTime, HostBoundPointsAreMarkedUnderEagerTiming) {
  // The example with the host costs measured on the H200's host (about 50-200 us a launch).
  std::ifstream in(std::string(MLAPLAN_SOURCE_DIR) + "/tests/data/cost/deepseek-v3-tp8-eager-example.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  for (auto& [kind, us] : doc["host"]["launch_us"].items()) us = 120.0;
  const std::string example = (std::filesystem::temp_directory_path() /
                               ("mlaplan_host_bound_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(example) << doc.dump();
  for (bool eager : {false, true}) {
    const SweepResult s = timed_sweep(example, eager);
    SweepReport report;
    report.sweep = &s;
    const std::string svg = sweep_svg(report);
    expect_valid_svg(svg);
    size_t bound = 0;
    for (const SweepRow& r : s.rows) bound += r.time && r.time->eager && r.time->host_bound_share >= kHostBoundMark;  // by hand
    const auto [iterations, time] = panels(svg);
    EXPECT_EQ(count(iterations, "class=\"host-bound\""), 0u);
    EXPECT_EQ(count(time, "class=\"host-bound\""), bound + (bound ? 1 : 0));  // and the legend's key, drawn after
    EXPECT_EQ(svg.find("host-bound") != std::string::npos, eager);
    if (eager) {
      EXPECT_GT(bound, 0u) << "the example's host costs leave no point host-bound at 4K rows";
      EXPECT_LT(bound, s.rows.size()) << "every point host-bound: the mark tells nothing apart";
      EXPECT_NE(svg.find("host-bound, the device waits 5%+ of the step"), std::string::npos);
    }
  }
  std::remove(example.c_str());
}

TEST(SweepSvgTime, WithoutTimesTheChartIsUnchanged) {
  const SweepResult timed = timed_sweep();
  SweepResult stripped = timed;
  for (SweepRow& r : stripped.rows) r.time.reset();
  ASSERT_FALSE(sweeps::sweep_has_time(stripped));
  SweepResult bare = stripped;
  bare.costs.clear();
  SweepReport a, b;
  a.sweep = &stripped;
  b.sweep = &bare;
  const std::string svg = sweep_svg(a);
  expect_valid_svg(svg);
  EXPECT_EQ(svg, sweep_svg(b));
  EXPECT_EQ(svg.find("time-"), std::string::npos);
  EXPECT_EQ(svg.find("predicted"), std::string::npos);
  EXPECT_EQ(svg.find("never"), std::string::npos);
  const SweepPicture p = measure_sweep(a);
  EXPECT_FALSE(p.time);
  EXPECT_EQ(p.x_title_y, p.bottom + 42);
  EXPECT_GT(p.height, p.legend.back().y);  // the legend under the plot, inside the picture
  EXPECT_GT(p.legend.front().y, p.x_title_y);
  EXPECT_NE(svg.find(">solid: p99 iterations per batch<"), std::string::npos);

  // The timed chart's iterations panel keeps its points, one per row, and its y title.
  const std::string with_time = sweep_svg(SweepReport{&timed, {}, {}});
  EXPECT_EQ(count(panels(with_time).first, "class=\"point"), count(svg, "class=\"point"));
  EXPECT_NE(panels(with_time).first.find("iterations per batch (p99"), std::string::npos);
}

// With the fused loop's sweep beside it (sweep --gpu where its files ship), the time panel draws each
// series' fused p99 as a dotted line of small marks, one a buffer size with a finite p99, its scale
// holding them; the legend keys it. Without one, nothing of it.
TEST(SweepSvgTime, TheFusedLoopIsADottedLineInTheTimePanel) {
  const SweepResult engines = timed_sweep();
  // A "fused" file three times slower, so its points set the scale's top.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(kCostFile));
  for (auto& [name, c] : j["coefficients"].items()) c = c.get<double>() * 3;
  j["kernels"]["up_projection"] = "fused";
  const std::filesystem::path slow =
      std::filesystem::temp_directory_path() / ("mlaplan_fused_svg_" + std::to_string(::getpid()) + ".json");
  std::ofstream(slow) << j.dump();
  const SweepResult fused = timed_sweep(slow.string());
  std::filesystem::remove(slow);
  SweepReport report;
  report.sweep = &engines;
  const std::string without = sweep_svg(report);
  EXPECT_EQ(without.find("fused-"), std::string::npos);
  EXPECT_EQ(without.find("fused loop"), std::string::npos);
  report.fused = &fused;
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  const auto [iterations, time] = panels(svg);
  EXPECT_EQ(iterations.find("fused-"), std::string::npos);  // the time panel's alone
  EXPECT_EQ(count(time, "class=\"fused-series\""), 3u);
  size_t finite = 0, lines = 0;
  double top = 0;
  std::map<std::string, size_t> per_group;
  for (const SweepRow& r : fused.rows) {
    const double p99 = r.time->step_ms(r.time->p99_us);
    if (!std::isfinite(p99)) continue;
    ++finite;
    top = std::max(top, p99);
    lines += ++per_group[r.setting().substr(0, r.setting().find(' '))] == 2 ? 1 : 0;  // a line from two points
  }
  EXPECT_EQ(count(time, "class=\"fused-point\""), finite);
  EXPECT_EQ(polylines(time, "1.5 4"), lines);
  EXPECT_NE(svg.find(">dotted: p99 ms per step in mlaplan"), std::string::npos);
  EXPECT_NE(time.find("fused loop (same plan): p99 "), std::string::npos);
  const SweepPicture p = measure_sweep(report);
  ASSERT_TRUE(p.time);
  // The scale's top holds the fused loop's slowest point, three times the engines' (not pinned to the edge).
  EXPECT_LE(p.time->y.transform(top), p.time->y.t1 + 1e-9);
  for (const SweepSeries& s : p.series)
    for (const FusedPoint& f : s.fused) EXPECT_GE(f.y, p.time->top - 1e-9) << s.label;
}

}  // namespace
}  // namespace mlaplan::render
