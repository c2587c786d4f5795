// Pictures of plans as people see them: the SVG rasterised by rsvg-convert and the HTML page by
// headless Chromium, decoded with libpng and checked pixel by pixel at places known from bar_box:
// each sequence's segment in its colour, page padding hatched, free rows white,
// the buffer's end black. Without a renderer a test says which is missing and how to install it
// (scripts/install-deps.sh); with MLAPLAN_REQUIRE_TOOLS set (CI) it fails instead, so a broken
// picture cannot pass by skipping.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli_runner.hpp"
#include "mlaplan/batch.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_report.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/render/plan_svg.hpp"
#include "mlaplan/check/scenario.hpp"
#include "pixel_checks.hpp"

// In the namespace of pixel_checks.hpp, whose colours, images, renderers and checks the tests use.
namespace mlaplan::render::pixels {
namespace {

using mlaplan::test::run_cli;
using mlaplan::test::slurp;
using mlaplan::render::drawn_chunks;

// ---------------------------------------------------------------------------------------------
// The plan: page 16, buffer 256 rows, 4 chunks; L = [96, 208, 64, 208], so chunk 0 holds s0 (6 rows
// of padding) and the first 160 rows of s1, chunk 1 the rest of s1 (8 rows of padding), s2 (14) and
// the start of s3, chunk 2 the end of s3 (8) in 64 of its 256 rows, and chunk 3 nothing.

constexpr std::string_view kScenarioJson =
    R"({"name": "pixels", "page_size": 16, "buffer_token_size": 256, "max_chunks": 4,
        "cache_lengths": [80, 190, 50, 200], "input_lengths": [10, 10, 0, 0]})";

check::Scenario pixels_scenario() {
  check::Scenario s;
  s.name = "pixels";
  s.batch.page_size = 16;
  s.batch.buffer_token_size = 256;
  s.batch.max_chunks = 4;
  s.batch.cache_lengths = {80, 190, 50, 200};
  s.batch.input_row_offsets = {0, 10, 20, 20, 20};
  validate_batch(s.batch);
  return s;
}

// The reports `run --backend cpu` makes under `policies`, one panel each.
std::vector<PlanPicture> library_panels(const check::Scenario& s, const std::string& policies) {
  std::vector<PlanPicture> panels;
  for (const policies::Policy& policy : policies::parse_policies(policies, policies::Policy{})) {
    io::PlanReport r;
    r.scenario = &s;
    r.policy = policy.name();
    r.backend = "cpu";
    if (policy.kind == policies::PolicyKind::max) {
      r.planner = "cpu-reference";
      r.shape = plan_shape(s.batch);
      r.tables = plan_reference(s.batch);
    } else {
      r.planner = "cpu-" + policy.name();
      try {
        r = policies::policy_report(s, policy);
      } catch (const InputError& e) {
        r.refused = e.what();
      }
    }
    panels.push_back(measure_plan(r));
  }
  return panels;
}

// What the picture's geometry is made of: its size and every rect, line and path with their
// attributes, and every text's position, leaving out the words (titles, labels) that may differ.
std::vector<std::string> geometry(const std::string& svg) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < svg.size()) {
    size_t end = svg.find('\n', at);
    if (end == std::string::npos) end = svg.size();
    const std::string line = svg.substr(at, end - at);
    at = end + 1;
    for (const char* tag : {"<svg ", "<rect ", "<line ", "<path ", "<text ", "<pattern "}) {
      if (line.rfind(tag, 0) == 0) out.push_back(line.substr(0, line.find('>')));
    }
  }
  return out;
}

std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return "element " + std::to_string(i) + ":\n  " + a[i] + "\n  " + b[i];
  if (a.size() != b.size()) return std::to_string(a.size()) + " elements against " + std::to_string(b.size());
  return "";
}

// The plan is the one described above (the checks below rely on it).
void expect_the_known_plan(const PlanPicture& max) {
  ASSERT_EQ(max.chunks.size(), 4u);
  ASSERT_EQ(max.chunks_used, 3u);
  ASSERT_FALSE(max.chunks[3].used);
  ASSERT_EQ(max.chunks[2].rows, 64u);
  ASSERT_EQ(max.chunks[0].pieces.size(), 2u);
  ASSERT_EQ(max.chunks[1].pieces.size(), 3u);
  ASSERT_TRUE(max.chunks[0].pieces[1].continues);
  ASSERT_TRUE(max.chunks[1].pieces[0].continued);
  ASSERT_EQ(max.chunks[1].pieces[0].sequence, 1u);
  ASSERT_EQ(max.chunks[1].pieces[0].padding_rows, 8u);
}

// ---------------------------------------------------------------------------------------------

TEST(RenderPixels, SvgShowsEachSequenceInItsColourFromTheLibraryAndTheCli) {
  const std::string rsvg = find_tool({"rsvg-convert"});
  if (rsvg.empty()) MISSING_RENDERER("rsvg-convert", "librsvg2-bin");
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const check::Scenario s = pixels_scenario();
  const std::vector<PlanPicture> panels = library_panels(s, "max");
  expect_the_known_plan(panels[0]);
  if (HasFatalFailure()) return;

  // The library's picture and the CLI's, which must be the same picture.
  const std::string library_svg = plan_svg(panels);
  write_file(dir / "library.svg", library_svg);
  write_file(dir / "pixels.json", std::string(kScenarioJson));
  const auto r = run_cli("run " + shell_quote(dir / "pixels.json") + " --backend cpu --svg " + shell_quote(dir / "cli.svg"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string cli_svg = slurp(dir / "cli.svg");
  EXPECT_EQ(first_difference(geometry(library_svg), geometry(cli_svg)), "");
  EXPECT_GT(geometry(cli_svg).size(), 40u);

  for (const char* name : {"library.svg", "cli.svg"}) {
    SCOPED_TRACE(name);
    std::string error;
    const std::optional<Image> img = rasterise(dir / name, error);
    ASSERT_TRUE(img) << error;
    // 1 px per SVG px: the picture's own size.
    EXPECT_EQ(img->width, 960);
    const double height = std::stod(library_svg.substr(library_svg.find(" height=\"") + 9));
    EXPECT_EQ(img->height, static_cast<int>(std::ceil(height)));
    // The locating used on screenshots finds this picture at (0, 0).
    const std::optional<Origin> o = locate(*img, panels);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->x, 0);
    EXPECT_EQ(o->y, 0);
    Checked checked;
    check_panel(*img, panels, 0, Origin{}, checked);
    EXPECT_TRUE(checked.problems.empty()) << problems(checked);
    // Every segment (s0, s1 twice, s2, s3 twice), the four paddings, chunk 2's free rows; unused
    // chunk 3 is a line of text, not a bar.
    EXPECT_EQ(checked.segments, 6u);
    EXPECT_EQ(checked.paddings, 4u);
    EXPECT_EQ(checked.unused, 0u);
    EXPECT_EQ(checked.free_parts, 1u);
    EXPECT_EQ(checked.buffer_ends, 3u);
  }
}

TEST(RenderPixels, SvgOfEveryPolicyShowsEachPanelWhereBarBoxSays) {
  const std::string rsvg = find_tool({"rsvg-convert"});
  if (rsvg.empty()) MISSING_RENDERER("rsvg-convert", "librsvg2-bin");
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const check::Scenario s = pixels_scenario();
  const std::vector<PlanPicture> panels = library_panels(s, "all");
  ASSERT_EQ(panels.size(), 5u);  // every engine
  ASSERT_EQ(panels[1].policy, "packed");
  ASSERT_TRUE(panels[1].refused.empty());
  write_file(dir / "pixels.json", std::string(kScenarioJson));
  const auto r = run_cli("run " + shell_quote(dir / "pixels.json") + " --backend cpu --policy all --svg " + shell_quote(dir / "all.svg"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = slurp(dir / "all.svg");
  EXPECT_EQ(first_difference(geometry(plan_svg(panels)), geometry(svg)), "");
  std::string error;
  const std::optional<Image> img = rasterise(dir / "all.svg", error);
  ASSERT_TRUE(img) << error;
  for (size_t panel = 0; panel < panels.size(); ++panel) {
    SCOPED_TRACE(panels[panel].policy);
    Checked checked;
    check_panel(*img, panels, panel, Origin{}, checked);
    EXPECT_TRUE(checked.problems.empty()) << problems(checked);
    EXPECT_GE(checked.segments, 5u);
    EXPECT_EQ(checked.buffer_ends, drawn_chunks(panels[panel]));
  }
}

// The checks themselves can fail: a recoloured sequence, a picture moved by a few px, padding
// without its hatch each give problems.
TEST(RenderPixels, ChecksCatchAWrongColourAMovedPictureAndAMissingHatch) {
  const std::string rsvg = find_tool({"rsvg-convert"});
  if (rsvg.empty()) MISSING_RENDERER("rsvg-convert", "librsvg2-bin");
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const check::Scenario s = pixels_scenario();
  const std::vector<PlanPicture> panels = library_panels(s, "max");
  const std::string svg = plan_svg(panels);
  auto replace_all = [](std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
    return text;
  };
  auto problems_of = [&](const std::string& picture, Origin o) {
    write_file(dir / "broken.svg", picture);
    std::string error;
    const std::optional<Image> img = rasterise(dir / "broken.svg", error);
    Checked checked;
    if (!img) {
      checked.problems.push_back(error);
      return checked;
    }
    check_panel(*img, panels, 0, o, checked);
    return checked;
  };
  // Sequence 1 drawn in sequence 5's colour.
  const Checked recoloured = problems_of(replace_all(svg, "fill=\"#332288\" stroke", "fill=\"#882255\" stroke"), {});
  ASSERT_FALSE(recoloured.problems.empty());
  for (const std::string& p : recoloured.problems) EXPECT_NE(p.find("sequence 1"), std::string::npos) << p;
  // The geometry off by 3 px to the right.
  EXPECT_FALSE(problems_of(svg, Origin{3, 0}).problems.empty());
  // Padding drawn without its pattern.
  const Checked flat = problems_of(replace_all(svg, "fill=\"url(#mlaplan-pad)\"", "fill-opacity=\"0\" fill=\"#000\""), {});
  EXPECT_EQ(flat.problems.size(), 4u) << problems(flat);
  for (const std::string& p : flat.problems) EXPECT_NE(p.find("not a hatch"), std::string::npos) << p;
}

// Every reference in the page points inside it: no scripts, no style sheets, nothing fetched.
std::vector<std::string> external_references(const std::string& html) {
  std::string lower = html;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> found;
  for (const char* tag : {"<script", "<link", "<iframe", "<img", "<object", "<embed", "@import"})
    if (lower.find(tag) != std::string::npos) found.push_back(tag);
  for (const std::string attr : {"src=", "href=", "url(", "xlink:href="}) {
    for (size_t at = lower.find(attr); at != std::string::npos; at = lower.find(attr, at + 1)) {
      size_t v = at + attr.size();
      while (v < lower.size() && (lower[v] == '"' || lower[v] == '\'' || lower[v] == ' ')) ++v;
      const std::string value = lower.substr(v, 12);
      if (value.rfind("http:", 0) == 0 || value.rfind("https:", 0) == 0 || value.rfind("file:", 0) == 0 ||
          value.rfind("//", 0) == 0 || value.rfind("data:", 0) == 0 || (attr == "url(" && value.rfind('#', 0) != 0))
        found.push_back(html.substr(at, 40));
    }
  }
  return found;
}

TEST(RenderPixels, HtmlPageIsSelfContained) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  write_file(dir / "pixels.json", std::string(kScenarioJson));
  const auto r = run_cli("run " + shell_quote(dir / "pixels.json") + " --backend cpu --policy all --html " + shell_quote(dir / "page.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(dir / "page.html");
  ASSERT_NE(html.find("<svg "), std::string::npos);
  const std::vector<std::string> refs = external_references(html);
  EXPECT_TRUE(refs.empty()) << refs.front();
  // The check itself finds what it must.
  EXPECT_EQ(external_references("<link rel=stylesheet href=x.css>").size(), 1u);
  EXPECT_EQ(external_references("<img src=\"https://example.com/a.png\">").size(), 2u);
  EXPECT_EQ(external_references("<script src='file:///etc/x.js'></script>").size(), 2u);
  EXPECT_EQ(external_references("<rect fill=\"url(http://x/#p)\"/>").size(), 1u);
  EXPECT_EQ(external_references("<rect fill=\"url(#plan0-pad)\"/>").size(), 0u);
}

TEST(RenderPixels, HtmlPageInChromiumShowsThePanelsWhereBarBoxSays) {
  const std::string chromium = find_tool({"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"});
  if (chromium.empty()) MISSING_RENDERER("chromium", "chromium");
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const check::Scenario s = pixels_scenario();
  const std::vector<PlanPicture> panels = library_panels(s, "all");
  ASSERT_EQ(panels.size(), 5u);  // every engine
  write_file(dir / "pixels.json", std::string(kScenarioJson));
  const auto r = run_cli("run " + shell_quote(dir / "pixels.json") + " --backend cpu --policy all --html " + shell_quote(dir / "page.html"));
  ASSERT_EQ(r.code, 0) << r.err;
  // One run, about 2 s. Its profile goes in the scratch folder; its dbus chatter on stderr is dropped.
  const std::string command = "timeout 60 " + chromium +
                              " --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1"
                              " --window-size=1200,2400 --user-data-dir=" + shell_quote(dir / "profile") +
                              " --screenshot=" + shell_quote(dir / "page.png") + " " + shell_quote("file://" + (dir / "page.html").string()) +
                              " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::string error;
  const std::optional<Image> img = read_png(dir / "page.png", error);
  ASSERT_TRUE(img) << error;
  EXPECT_EQ(img->width, 1200);
  EXPECT_EQ(img->height, 2400);
  // Where the page put the picture: below the heading, the command line and the table.
  const std::optional<Origin> o = locate(*img, panels);
  ASSERT_TRUE(o) << "no pixel of sequence 0's colour " << kTolMuted[0] << " in the screenshot";
  // Across: the body's 24 px margin (html_page.cpp's style; figures have no side margin), so a
  // bar_box that moved sideways shows here too. Down: below the heading, command line and table.
  EXPECT_EQ(o->x, 24);
  EXPECT_GT(o->y, 100);
  const BarBox last = bar_box(panels, panels.size() - 1, drawn_chunks(panels.back()) - 1);
  ASSERT_TRUE(img->inside(o->x + static_cast<int>(last.x + last.width) + 2, o->y + static_cast<int>(last.y + last.height)))
      << "the picture does not fit in the screenshot";
  for (size_t panel = 0; panel < panels.size(); ++panel) {
    SCOPED_TRACE(panels[panel].policy);
    Checked checked;
    check_panel(*img, panels, panel, *o, checked);
    EXPECT_TRUE(checked.problems.empty()) << "picture at (" << o->x << ", " << o->y << ") of the screenshot:"
                                          << problems(checked);
    EXPECT_GE(checked.segments, 5u);
    if (panel == 0) {
      EXPECT_EQ(checked.paddings, 4u);
      EXPECT_EQ(checked.unused, 0u);  // drawn as a line of text
    }
  }
}

}  // namespace
}  // namespace mlaplan::render::pixels
