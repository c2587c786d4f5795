// The sweep chart (measured in lib/render/sweep_picture.cpp, drawn in sweep_svg.cpp): well-formed SVG for every sweep, empty and hostile
// ones included; one series per recommend() group, one tooltip per row, the recommendation drawn; with
// predicted times (--cost), a second panel of them under the iterations one.
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

namespace mlaplan::render {
namespace {

using policies::Policy;
using policies::PolicyKind;
using sweeps::RecommendOptions;
using sweeps::SweepReport;
using sweeps::SweepResult;
using sweeps::SweepRow;
using mlaplan::test::clean_utf8;
using mlaplan::test::count;
using mlaplan::test::parser_accepts;

// The text of every <title> element, in document order.
std::vector<std::string> titles(const std::string& svg) {
  std::vector<std::string> out;
  for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) {
    const size_t end = svg.find("</title>", at);
    if (end == std::string::npos) break;
    out.push_back(svg.substr(at + 7, end - at - 7));
  }
  return out;
}

// The tooltips among `tips` that start with the row's setting (a point's first line).
std::vector<std::string> tips_for(const std::vector<std::string>& tips, const SweepRow& r) {
  std::vector<std::string> out;
  for (const std::string& t : tips)
    if (t.rfind(r.setting() + "\n", 0) == 0) out.push_back(t);
  return out;
}

// Well-formed XML, checked without a parser library: every tag closes in order, attribute values are
// quoted, and '<' and '&' appear in text only as markup or entities. Returns "" or what is wrong.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0;
  if (s.compare(0, 5, "<?xml") == 0) i = s.find("?>") + 2;
  bool root_seen = false;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t semi = s.find(';', i);
      const std::string entity = semi == std::string::npos ? "" : s.substr(i, semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&#39;")
        return "a bare & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      if (open.empty() && s[i] != '\n') return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    const bool closing = i + 1 < s.size() && s[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':')) ++j;
    const std::string name = s.substr(name_start, j - name_start);
    if (name.empty()) return "a '<' that starts no tag at " + std::to_string(i);
    bool self_close = false;
    for (;;) {  // attributes, each name="value" with no '<' inside the value
      while (j < s.size() && s[j] == ' ') ++j;
      if (j >= s.size()) return "an unterminated tag <" + name;
      if (s[j] == '>') break;
      if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '>') {
        self_close = true;
        ++j;
        break;
      }
      const size_t eq = s.find('=', j);
      if (eq == std::string::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return "an unquoted attribute in <" + name;
      const size_t close_quote = s.find('"', eq + 2);
      if (close_quote == std::string::npos) return "an unterminated attribute in <" + name;
      const std::string value = s.substr(eq + 2, close_quote - eq - 2);
      if (value.find('<') != std::string::npos) return "a '<' inside an attribute of <" + name;
      j = close_quote + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
    } else if (!self_close) {
      if (open.empty() && root_seen) return "a second root element <" + name;
      open.push_back(name);
      root_seen = true;
    }
    i = j + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> never closes";
  return root_seen ? "" : "no root element";
}

void expect_valid_svg(const std::string& svg) {
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  if (const std::optional<bool> ok = parser_accepts(svg)) {
    EXPECT_TRUE(*ok) << "the XML parser rejects the SVG";
  }
  EXPECT_EQ(svg.find("nan"), std::string::npos);  // no NaN or infinite coordinate made it out
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

Policy policy(PolicyKind kind) {
  Policy p;
  p.kind = kind;
  return p;
}

SweepRow row(PolicyKind kind, uint32_t n, uint32_t p99, double mean, uint64_t refused = 0) {
  SweepRow r;
  r.policy = policy(kind);
  r.buffer_tokens = n;
  if (kind == PolicyKind::max) r.max_chunks = 16;
  r.batches = 400;
  r.mean_iterations = mean;
  r.p50 = p99 / 2;
  r.p90 = p99 - p99 / 4;
  r.p99 = p99;
  r.max_iterations = p99 + 3;
  r.refused = refused;
  if (refused) r.first_refusal = "max: the batch needs 19 chunks but max_chunks is 16";
  r.mean_fill = 0.8;
  r.iterations.assign(r.batches, p99);
  return r;
}

// max and packed over four buffers, max refusing at the two smallest: two groups, eight rows.
SweepResult two_policies() {
  SweepResult s;
  s.source = "workload coding-agent (seed 1)";
  s.formation = "a budget of 8192 new tokens per step";
  s.batches = 400;
  const uint32_t sizes[] = {4096, 16384, 65536, 1048576};
  const uint32_t p99s[] = {40, 10, 3, 1};
  for (PolicyKind kind : {PolicyKind::max, PolicyKind::packed})
    for (int i = 0; i < 4; ++i)
      s.rows.push_back(row(kind, sizes[i], p99s[i] + (kind == PolicyKind::max ? 1 : 0), p99s[i] * 0.6,
                           kind == PolicyKind::max && i < 2 ? 100 : 0));
  s.settings = s.rows.size();
  return s;
}

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

// ---------------------------------------------------------------------------------------------
// The time panel: predicted ms per step under the iterations panel, when the rows have times.

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
  // Under the title: what the times were calibrated on.
  EXPECT_NE(svg.find(s.costs.at(0).describe()), std::string::npos);

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
  EXPECT_EQ(p.height, std::max(p.bottom + 56, p.legend_y + 19.0 * static_cast<double>(p.legend.size()) + 16));
  EXPECT_NE(svg.find(">solid: p99 iterations per batch<"), std::string::npos);

  // The timed chart's iterations panel keeps its points, one per row, and its y title.
  const std::string with_time = sweep_svg(SweepReport{&timed, {}, {}});
  EXPECT_EQ(count(panels(with_time).first, "class=\"point"), count(svg, "class=\"point"));
  EXPECT_NE(panels(with_time).first.find("iterations per batch (p99"), std::string::npos);
}

}  // namespace
}  // namespace mlaplan::render
