// The sweep chart (measured in lib/render/sweep_picture.cpp, drawn in sweep_svg.cpp): well-formed SVG for every sweep, empty and hostile
// ones included; one series per recommend() group, one tooltip per row, the recommendation drawn. (With
// predicted times, the second panel: sweep_svg_time_test.cpp.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/io/byte_format.hpp"
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

TEST(SweepSvg, OnePointWithItsSettingPerRowAndOneSeriesPerGroup) {
  const SweepResult s = two_policies();
  SweepReport report;
  report.sweep = &s;
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);

  // As many series as recommend() has groups (it is the same grouping).
  RecommendOptions o;
  EXPECT_EQ(count(svg, "class=\"series\""), sweeps::recommend(s, o).size());
  EXPECT_EQ(count(svg, "class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "class=\"point"), s.rows.size());

  // Every row's tooltip starts with its setting and carries its numbers.
  const std::vector<std::string> tips = titles(svg);
  for (const SweepRow& r : s.rows) {
    const std::vector<std::string> mine = tips_for(tips, r);
    EXPECT_FALSE(mine.empty()) << "no point tooltip for " << r.setting();
    for (const std::string& t : mine) {
      EXPECT_NE(t.find("p99 " + std::to_string(r.p99)), std::string::npos) << t;
      EXPECT_NE(t.find("p50 " + std::to_string(r.p50)), std::string::npos) << t;
      EXPECT_NE(t.find("mean fill 80.0%"), std::string::npos) << t;
      EXPECT_NE(t.find(r.refused ? "refused 25.00% (100 of 400 batches)" : "refused 0.00%"), std::string::npos) << t;
    }
  }
  // The refused points are marked: max at 4K and 16K.
  EXPECT_EQ(count(svg, "class=\"point refused\""), 2u);
  EXPECT_NE(svg.find("hollow: some batches refused"), std::string::npos);

  // Compact buffer labels on a log2 axis, the legend naming both groups.
  for (const char* label : {">4K<", ">16K<", ">64K<", ">1M<"}) EXPECT_NE(svg.find(label), std::string::npos) << label;
  EXPECT_NE(svg.find(">max M=16<"), std::string::npos);
  EXPECT_NE(svg.find(">packed<"), std::string::npos);
  EXPECT_NE(svg.find("workload coding-agent (seed 1), 400 batches"), std::string::npos);
  // No recommendation asked: no limit, no rings.
  EXPECT_EQ(svg.find("K = "), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"recommended\""), 0u);
}

TEST(SweepSvg, RecommendationDrawsTheLimitAndRingsTheChoices) {
  const SweepResult s = two_policies();
  RecommendOptions o;
  o.max_iterations = 4;
  SweepReport report;
  report.sweep = &s;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  ASSERT_EQ(report.recommendations.size(), 2u);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find(">K = 4<"), std::string::npos);
  EXPECT_NE(svg.find("class=\"limit\""), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"recommended\""), 2u);  // max and packed at 64K
  size_t marked = 0;
  for (const std::string& t : titles(svg))
    if (t.find("recommended: the smallest buffer of its group with at most 4 iterations at p99") != std::string::npos) {
      ++marked;
      EXPECT_NE(t.find("N=65536"), std::string::npos) << t;
    }
  EXPECT_EQ(marked, 2u);

  // A limit no buffer meets: no ring, and the legend says so for each group.
  o.max_iterations = 0;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  const std::string none = sweep_svg(report);
  expect_valid_svg(none);
  EXPECT_EQ(count(none, "class=\"recommended\""), 0u);
  EXPECT_EQ(count(none, "(no buffer qualifies)</text>"), 2u);  // in the legend, for max and packed
}

// The plot takes the picture's width: the legend is under the plots in columns (a column beside them
// took a third of the width), every entry inside the picture, the series' and the keys' on rows of
// their own, and no label running into the next column's sample.
TEST(SweepPicture, PlotTakesTheWidthAndTheLegendSitsUnderIt) {
  const SweepResult s = two_policies();
  SweepReport report;
  report.sweep = &s;
  RecommendOptions o;
  o.max_iterations = 4;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  const SweepPicture p = measure_sweep(report);
  EXPECT_GT((p.right - p.left) / p.width, 0.85) << "plot " << p.right - p.left << " of " << p.width << " px";
  ASSERT_GT(p.legend.size(), 4u);
  double keys_top = 0, series_bottom = 0;
  for (size_t i = 0; i < p.legend.size(); ++i) {
    const LegendEntry& e = p.legend[i];
    if (e.kind == LegendEntry::Kind::gap) continue;
    EXPECT_GT(e.y, p.x_title_y) << e.label;
    EXPECT_LT(e.y + 10, p.height) << e.label;
    EXPECT_GE(e.x, p.left) << e.label;
    const double end = e.x + sweep_style::kLegendSample + 8 + text_width(e.label, sweep_style::kLegendSize);
    EXPECT_LE(end, p.width - sweep_style::kMarginOuter) << e.label;
    if (e.kind == LegendEntry::Kind::series) series_bottom = std::max(series_bottom, e.y);
    else if (keys_top == 0) keys_top = e.y;
    if (i + 1 < p.legend.size() && p.legend[i + 1].y == e.y) EXPECT_LT(end, p.legend[i + 1].x) << e.label;
  }
  EXPECT_GT(keys_top, series_bottom);
  // Several entries share a row: the legend is wrapped across the width, not one column.
  EXPECT_EQ(p.legend[0].y, p.legend[1].y);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find("width=\"" + svg_number(p.width) + "\""), std::string::npos);
}

TEST(SweepPicture, ALongSourceWrapsInTheTitleRatherThanBeingCut) {
  // A workload's source with its dropped requests ran past the picture's width and was cut mid-word.
  SweepResult s = two_policies();
  s.source = "workload coding-agent (seed 1), 10734 requests over max_model_len 163840 dropped (max_model_len 163840 is "
             "DeepSeek-V3's context (max_position_embeddings); --max-model-len sets another)";
  SweepReport report;
  report.sweep = &s;
  const SweepPicture p = measure_sweep(report);
  std::string title;
  size_t lines = 0;
  double last_y = 0;
  for (const TextLine& t : p.title) {
    if (t.size != sweep_style::kTitleSize) continue;
    ++lines;
    EXPECT_LE(text_width(t.text, t.size), p.width - 2 * sweep_style::kMarginOuter) << t.text;
    EXPECT_GT(t.y, last_y);
    last_y = t.y;
    title += (title.empty() ? "" : " ") + t.text;
  }
  EXPECT_GE(lines, 2u);
  EXPECT_EQ(title, "mlaplan sweep: " + s.source + fmt::format(", {} batches", s.batches));  // whole, no ellipsis
  EXPECT_LT(last_y, p.top);
}

TEST(SweepSvg, LinearAxisForFewIterationsLogForMany) {
  SweepResult s = two_policies();
  SweepReport report;
  report.sweep = &s;
  EXPECT_NE(sweep_svg(report).find("iterations per batch (p99)<"), std::string::npos);
  s.rows[0].p99 = 500;  // 500 against 1: a log axis
  const std::string log = sweep_svg(report);
  expect_valid_svg(log);
  EXPECT_NE(log.find("iterations per batch (p99, log scale)<"), std::string::npos);
  EXPECT_NE(log.find(">100<"), std::string::npos);  // a 1-2-5 tick
}

// Measuring alone, before any SVG: the groups, the points in px inside the plot, x on log2 of the
// buffer (equal steps for equal factors), y from 0 up, and the legend's keys for what appears.
TEST(SweepPicture, MeasuresGroupsScalesAndLegendBeforeDrawing) {
  const SweepResult s = two_policies();
  SweepReport report;
  report.sweep = &s;
  const SweepPicture p = measure_sweep(report);
  ASSERT_EQ(p.series.size(), 2u);
  EXPECT_EQ(p.series[0].key, "max M=16");
  EXPECT_EQ(p.series[1].key, "packed");
  EXPECT_EQ(p.x.kind, Scale::Kind::log2);
  EXPECT_EQ(p.y.kind, Scale::Kind::linear);
  EXPECT_EQ(p.y.t0, 0);
  for (const SweepSeries& series : p.series) {
    ASSERT_EQ(series.points.size(), 4u);
    for (const SweepPoint& pt : series.points) {
      EXPECT_GE(pt.x, p.left);
      EXPECT_LE(pt.x, p.right);
      EXPECT_GE(pt.y, p.top);
      EXPECT_LE(pt.y, p.bottom);
    }
  }
  const std::vector<SweepPoint>& max = p.series[0].points;
  EXPECT_NEAR(max[1].x - max[0].x, max[2].x - max[1].x, 1e-9);  // 4K -> 16K -> 64K: two doublings each
  EXPECT_LT(max[0].y, max[3].y);                                 // more iterations are drawn higher
  EXPECT_TRUE(max[0].refused);
  EXPECT_FALSE(max[2].refused);
  bool hollow = false;
  for (const LegendEntry& e : p.legend) hollow = hollow || e.kind == LegendEntry::Kind::hollow;
  EXPECT_TRUE(hollow);  // some batches were refused
  EXPECT_FALSE(p.limit_y);  // no recommendation, no K
  EXPECT_TRUE(p.note.empty());
  // An out-of-domain value is pinned to the axis' end, never off the plot.
  EXPECT_EQ(p.x(0), p.x.p0);
  EXPECT_EQ(p.y(std::numeric_limits<double>::quiet_NaN()), p.y.p0);
}

TEST(SweepSvg, GroupsSplitByModelAndTp) {
  SweepResult s;
  s.source = "two TPs";
  s.batches = 400;
  models::ModelDims model;
  model.name = "deepseek-v3";
  for (uint32_t tp : {1u, 8u})
    for (uint32_t n : {8192u, 65536u}) {
      SweepRow r = row(PolicyKind::packed, n, n == 8192 ? 8 : 1, 0.5);
      r.model = model;
      r.memory = models::BufferMemory{};
      r.memory->tp = tp;
      r.memory->kv_bytes_per_row = 65536 / tp;
      s.rows.push_back(r);
    }
  SweepReport report;
  report.sweep = &s;
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_EQ(count(svg, "class=\"series\""), 2u);
  EXPECT_NE(svg.find(">packed deepseek-v3 TP1<"), std::string::npos);
  EXPECT_NE(svg.find(">packed deepseek-v3 TP8<"), std::string::npos);
  EXPECT_NE(svg.find("memory: buffer 4.00 GiB + K concat"), std::string::npos);  // 64 KiB x 65536 at TP1
}

// sweep --loop fused: the memory axis, its title, the budget's place and the tooltips count what mlaplan's
// fused loop holds, K and V alone (10,240 B a row for DeepSeek-V3 TP 8 bf16), not the engines' gathered
// latent, K/V and K concat (15,488 B a row; 14,336 B without the latent, as --memory-budget counts).
TEST(SweepSvg, FusedLoopsMemoryAxisCountsKAndVAlone) {
  const models::BufferMemory m = models::buffer_memory(models::find_model_preset("deepseek-v3"), 8, models::Dtype::bf16);
  ASSERT_EQ(m.reserved_bytes(1), 15488u);
  ASSERT_EQ(m.total_bytes(1), 14336u);
  ASSERT_EQ(m.fused_loop_bytes(1), 10240u);
  const uint32_t sizes[] = {8192, 65536};
  SweepResult engines;
  engines.source = "fused loop";
  engines.batches = 400;
  for (uint32_t n : sizes) {
    SweepRow r = row(PolicyKind::packed, n, n == 8192 ? 8 : 1, 0.5);
    r.model = models::find_model_preset("deepseek-v3");
    r.memory = m;
    engines.rows.push_back(r);
  }
  SweepResult fused = engines;
  for (SweepRow& r : fused.rows) r.fused_loop = true;
  RecommendOptions o;
  o.max_iterations = 4;
  o.memory_budget = uint64_t{320} << 20;  // 32,768 rows of K and V; 23,405.7 of K/V and K concat
  const auto picture = [&](const SweepResult& s) {
    SweepReport report;
    report.sweep = &s;
    report.recommend_options = o;
    report.recommendations = sweeps::recommend(s, o);
    return measure_sweep(report);
  };
  const SweepPicture e = picture(engines), f = picture(fused);
  ASSERT_EQ(e.memory_ticks.size(), 2u);
  ASSERT_EQ(f.memory_ticks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {  // the same ticks, the bytes in the ratio 10,240 / 15,488
    EXPECT_EQ(f.memory_ticks[i].pos, e.memory_ticks[i].pos);
    EXPECT_EQ(e.memory_ticks[i].label, io::format_bytes(uint64_t{15488} * sizes[i]));
    EXPECT_EQ(f.memory_ticks[i].label, io::format_bytes(uint64_t{10240} * sizes[i]));
  }
  EXPECT_EQ(f.memory_ticks[1].label, "640 MiB");
  EXPECT_EQ(e.memory_ticks[1].label, "968 MiB");
  EXPECT_EQ(f.memory_title, "reserved per GPU, deepseek-v3 TP8 (mlaplan's fused loop: K + V)");
  EXPECT_EQ(e.memory_title, "reserved per GPU, deepseek-v3 TP8 (latent + K/V + K concat)");
  ASSERT_TRUE(f.budget_x && e.budget_x);
  EXPECT_NEAR(*f.budget_x, f.x(32768), 1e-9);
  EXPECT_NEAR(*e.budget_x, e.x(320.0 * (1 << 20) / 14336), 1e-9);
  SweepReport report;
  report.sweep = &fused;
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find("memory (mlaplan&#39;s fused loop): K 48.0 MiB + V 32.0 MiB"), std::string::npos);  // at 8,192 rows
  EXPECT_EQ(svg.find("K concat"), std::string::npos);
}

TEST(SweepSvg, HostileNamesComeOutEscapedAndClipped) {
  const std::string hostile = "<script>alert(\"x\" & 'y')</script>\x01\x07\x1b\x7f\xff\xfe\xc3\x28 caf\xc3\xa9 ]]>";
  SweepResult s = two_policies();
  s.source = hostile + std::string(10000, 'A');
  s.formation = hostile;
  models::ModelDims model;
  model.name = hostile + std::string(5000, 'B');
  for (SweepRow& r : s.rows) {
    r.model = model;
    r.memory = models::BufferMemory{};
    if (r.refused) r.first_refusal = hostile + std::string(5000, 'C');
  }
  RecommendOptions o;
  o.max_iterations = 4;
  SweepReport report;
  report.sweep = &s;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("]]>"), std::string::npos);
  EXPECT_TRUE(clean_utf8(svg, "\t\n\r"));  // no control byte but tab, newline, return
  EXPECT_NE(svg.find("caf\xc3\xa9"), std::string::npos);  // valid UTF-8 survives
  // Clipped: no name arrives whole, and the picture stays small.
  for (char c : {'A', 'B', 'C'}) EXPECT_EQ(svg.find(std::string(400, c)), std::string::npos) << c;
  EXPECT_NE(svg.find("\xE2\x80\xA6"), std::string::npos);  // the ellipsis of clip_text
  EXPECT_LT(svg.size(), 100000u);
  EXPECT_EQ(count(svg, "class=\"point"), s.rows.size());
}

TEST(SweepSvg, EmptySweepSaysSo) {
  SweepResult s;
  s.source = "nothing";
  SweepReport report;
  report.sweep = &s;
  report.recommend_options = RecommendOptions{};
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_NE(svg.find("the sweep has no rows"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"series\""), 0u);
  EXPECT_EQ(count(svg, "class=\"point"), 0u);

  SweepReport no_sweep;  // no SweepResult at all
  const std::string bare = sweep_svg(no_sweep);
  expect_valid_svg(bare);
  EXPECT_NE(bare.find("the sweep has no rows"), std::string::npos);
}

TEST(SweepSvg, OneRowAndOddValuesStayFinite) {
  SweepResult s;
  s.source = "one";
  s.batches = 1;
  s.rows.push_back(row(PolicyKind::packed, 10000, 0, std::numeric_limits<double>::quiet_NaN()));
  SweepReport report;
  report.sweep = &s;
  const std::string one = sweep_svg(report);
  expect_valid_svg(one);
  EXPECT_NE(one.find("a single setting"), std::string::npos);
  EXPECT_NE(one.find(">10000<"), std::string::npos);  // not a power of two: written plainly
  EXPECT_EQ(count(one, "class=\"point"), 1u);

  // A zero buffer and infinities: pinned to the axes, no NaN coordinates.
  s.rows.push_back(row(PolicyKind::packed, 0, 7, std::numeric_limits<double>::infinity()));
  s.rows.back().mean_fill = -std::numeric_limits<double>::infinity();
  s.rows.push_back(row(PolicyKind::packed, 1u << 31, std::numeric_limits<uint32_t>::max(), 1e300));
  const std::string odd = sweep_svg(report);
  expect_valid_svg(odd);
  EXPECT_EQ(count(odd, "class=\"point"), 3u);
}

TEST(SweepSvg, InlineLeavesOutTheXmlDeclaration) {
  const SweepResult s = two_policies();
  SweepReport report;
  report.sweep = &s;
  const std::string svg = sweep_svg(report, false);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg.find("<?xml"), std::string::npos);
  EXPECT_EQ(xml_problem(svg), "");
}

// From run_sweep on hand-made batches: whatever the sweep produces, the chart has a point per row.
TEST(SweepSvg, DrawsARealSweep) {
  std::vector<Batch> batches;
  for (uint32_t k = 1; k <= 4; ++k) {
    Batch b;
    b.page_size = 16;
    b.cache_lengths = {100 * k, 0, 300};
    b.input_row_offsets = {0, 10, 50 + k, 60 + k};
    batches.push_back(b);
  }
  sweeps::SweepGrid grid;
  grid.buffer_tokens = {64, 128, 256, 1024};
  grid.max_chunks = {2, 8};
  grid.policies = {policy(PolicyKind::max), policy(PolicyKind::packed), policy(PolicyKind::even_split)};
  sweeps::SweepOptions options;
  options.threads = 1;
  SweepResult s = sweeps::run_sweep(batches, grid, options);
  s.source = "four hand-made batches";
  ASSERT_EQ(s.rows.size(), 16u);  // max x 2 M + packed + even-split, x 4 buffers
  RecommendOptions o;
  o.max_iterations = 2;
  SweepReport report;
  report.sweep = &s;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  const std::string svg = sweep_svg(report);
  expect_valid_svg(svg);
  EXPECT_EQ(count(svg, "class=\"series\""), 4u);
  EXPECT_EQ(count(svg, "class=\"point"), s.rows.size());
  size_t refused = 0, chosen = 0;
  for (const SweepRow& r : s.rows) refused += r.refused > 0 ? 1 : 0;
  for (const sweeps::Recommendation& r : report.recommendations) chosen += r.row ? 1 : 0;
  EXPECT_EQ(count(svg, "class=\"point refused\""), refused);
  EXPECT_EQ(count(svg, "class=\"recommended\""), chosen);
  const std::vector<std::string> tips = titles(svg);
  for (const SweepRow& r : s.rows) EXPECT_FALSE(tips_for(tips, r).empty()) << r.setting();
}

}  // namespace
}  // namespace mlaplan::render
