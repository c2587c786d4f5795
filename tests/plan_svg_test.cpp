// Plan pictures drawn (lib/render), without a renderer: where plan_svg puts its bars and labels, that
// hostile scenario names come out escaped and clipped, and that big batches stay small pictures.
// plan_picture_test.cpp checks what is measured, render_pixels_test.cpp the rendered pixels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/check/scenario.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/plan_html.hpp"
#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/render/plan_svg.hpp"
#include "plan_examples.hpp"
#include "svg_checks.hpp"

namespace mlaplan::render {
namespace {

using examples::make_batch;
using mlaplan::render::drawn_chunks;
using examples::make_scenario;
using examples::max_report;
using examples::packed_policy;
using examples::report_or_refusal;
using examples::split_example;
using examples::worked_example;
using mlaplan::test::clean_utf8;
using mlaplan::test::count;
using mlaplan::test::dejavu_width;
using mlaplan::test::drawn_elements;
using mlaplan::test::Element;
using mlaplan::test::parser_accepts;

// ---------------------------------------------------------------------------------------------
// plan_svg

// Every bar item drawn: each piece has one tooltip, each group one; labels are pieces' or groups'.
struct Drawn {
  struct Segment {
    double x0 = 0, x1 = 0, y = 0;  // x1: where the label must end (the padding's start for a piece)
    std::string label_prefix;      // "s3" or "" for a group
    bool group = false;
  };
  std::vector<Segment> segments;
  std::vector<std::pair<Element, Segment>> labels;  // each in-bar label with the segment it sits in
  // Each "rows, %" note right of a chunk's end, with the bar's right edge and the chunk's last segment.
  struct Note {
    Element text;
    double bar_right = 0, chunk_end = 0;
  };
  std::vector<Note> notes;
  std::vector<std::string> problems;                // labels outside any segment
};

Drawn read_bars(const std::string& svg) {
  Drawn d;
  const std::vector<Element> els = drawn_elements(svg);
  std::optional<Drawn::Segment> current;
  double bar_right = 0, chunk_end = 0;
  for (const Element& e : els) {
    if (e.tag == "rect" && e.text.rfind("chunk ", 0) == 0 && e.attr("fill") == "#FFFFFF") {
      bar_right = e.num("x") + e.num("width");
      chunk_end = e.num("x");
    }
    if ((e.tag == "rect" && e.text.rfind("sequence", 0) == 0)) chunk_end = std::max(chunk_end, e.num("x") + e.num("width"));
    if (e.tag == "text" && e.attr("font-size") == "10" && e.text.find(" rows, ") != std::string::npos)
      d.notes.push_back({e, bar_right, chunk_end});
    if (e.tag == "rect" && e.text.rfind("sequence ", 0) == 0) {
      Drawn::Segment s;
      s.x0 = e.num("x");
      s.x1 = s.x0 + e.num("width");
      s.y = e.num("y");
      s.label_prefix = "s" + e.text.substr(9, e.text.find(':') - 9);
      current = s;
      d.segments.push_back(s);
    } else if (e.tag == "rect" && e.text.rfind("sequences ", 0) == 0) {
      Drawn::Segment s;
      s.x0 = e.num("x");
      s.x1 = s.x0 + e.num("width");
      s.y = e.num("y");
      s.group = true;
      current = s;
      d.segments.push_back(s);
    } else if (e.tag == "rect" && e.text.find("rows of page padding (sequence") != std::string::npos && current) {
      current->x1 = e.num("x");  // a label must stop before the hatching
      d.segments.back().x1 = current->x1;
    } else if (e.tag == "text" && e.attr("pointer-events") == "none") {
      if (!current) {
        d.problems.push_back("label '" + e.text + "' before any segment");
        continue;
      }
      d.labels.emplace_back(e, *current);
    } else if (e.tag == "rect" && e.attr("pointer-events") == "none") {
      continue;  // a group label's white backing
    } else if (e.tag != "path") {
      current.reset();
    }
  }
  return d;
}

void expect_labels_fit(const std::string& svg, const std::string& what) {
  const Drawn d = read_bars(svg);
  for (const Drawn::Note& n : d.notes) {
    const double x = n.text.num("x");
    EXPECT_GE(x, n.chunk_end) << what << ": note '" << n.text.text << "' over the chunk's rows";
    EXPECT_LE(x + dejavu_width(n.text.text, 10), n.bar_right - 1) << what << ": note '" << n.text.text << "' past the buffer's end";
  }
  EXPECT_TRUE(d.problems.empty()) << what << ": " << d.problems.front();
  for (const auto& [label, seg] : d.labels) {
    const double x = label.num("x"), size = label.num("font-size");
    const double width = dejavu_width(label.text, size);
    EXPECT_GE(x, seg.x0 + 1) << what << ": label '" << label.text << "' starts left of its segment";
    EXPECT_LE(x + width, seg.x1 - 1) << what << ": label '" << label.text << "' (" << width
                                     << " px in DejaVu Sans) runs past its segment [" << seg.x0 << ", " << seg.x1 << ")";
    EXPECT_GT(label.num("y"), seg.y) << what;
    EXPECT_LT(label.num("y"), seg.y + 18) << what;
    if (seg.group) {
      EXPECT_NE(label.text.find(" seqs"), std::string::npos) << what << ": " << label.text;
    } else {
      // "s3" or "s3 [a, b)", of the segment's own sequence.
      EXPECT_TRUE(label.text == seg.label_prefix || label.text.rfind(seg.label_prefix + " [", 0) == 0)
          << what << ": label '" << label.text << "' on the segment of " << seg.label_prefix;
    }
  }
}

TEST(PlanSvg, EveryLabelFitsInItsSegment) {
  {
    const check::Scenario s = split_example();
    const std::string svg = plan_svg({measure_plan(max_report(s)), measure_plan(report_or_refusal(s, packed_policy()))});
    expect_labels_fit(svg, "split example");
    EXPECT_GE(read_bars(svg).labels.size(), 8u);  // the check saw labels
    EXPECT_EQ(read_bars(svg).notes.size(), 2u);    // chunk 2's free rows, under max and packed
  }
  // Random batches whose pieces land around the label widths, and the widest labels (long numbers).
  std::mt19937 rng(7);
  size_t labels = 0, groups = 0, notes = 0;
  for (int round = 0; round < 60; ++round) {
    const uint32_t page = std::uniform_int_distribution<uint32_t>(1, 64)(rng);
    const uint32_t rows = std::uniform_int_distribution<uint32_t>(200, 20000)(rng);
    const uint32_t batch = std::uniform_int_distribution<uint32_t>(1, 80)(rng);
    std::vector<uint32_t> cache(batch), inputs(batch);
    uint64_t total = 0;
    for (uint32_t b = 0; b < batch; ++b) {
      // Half of them short enough to be grouped, the others up to a quarter of the buffer.
      const uint32_t longest = std::uniform_int_distribution<uint32_t>(0, 1)(rng) ? rows / 200 : rows / 4;
      cache[b] = std::uniform_int_distribution<uint32_t>(0, longest)(rng);
      inputs[b] = std::uniform_int_distribution<uint32_t>(0, 1)(rng) ? std::uniform_int_distribution<uint32_t>(0, 50)(rng) : 0;
      total += (uint64_t{cache[b]} + inputs[b] + page - 1) / page * page;
    }
    const uint32_t chunks = static_cast<uint32_t>((total + rows - 1) / rows) + 1;
    const check::Scenario s = make_scenario("random", make_batch(page, rows, chunks, cache, inputs));
    PlanSvgOptions o;
    o.width = std::uniform_int_distribution<int>(0, 1)(rng) ? 960 : 500;
    const std::string svg = plan_svg({measure_plan(max_report(s))}, o);
    expect_labels_fit(svg, "round " + std::to_string(round));
    const Drawn d = read_bars(svg);
    labels += d.labels.size();
    notes += d.notes.size();
    for (const auto& seg : d.segments) groups += seg.group;
  }
  EXPECT_GT(labels, 200u);
  EXPECT_GT(groups, 20u);
  EXPECT_GT(notes, 20u);
  // Big token numbers: "s1 [1000000000, 1000001000)" must be left out rather than overflow.
  const check::Scenario big = make_scenario("big", make_batch(1, 1u << 30, 2, {1000000000, 150000000}, {0, 0}));
  expect_labels_fit(plan_svg({measure_plan(max_report(big))}), "big numbers");
}

TEST(PlanSvg, EveryPieceIsDrawnOnceAndBarBoxMatchesTheBars) {
  // Three panels, one refused, so that bar_box must account for the summary and the panel heights.
  const check::Scenario s = split_example();
  const check::Scenario w = worked_example();
  io::PlanReport refused = max_report(w);
  refused.tables = {};
  refused.refused = "max_chunks: too few";
  const std::vector<PlanPicture> panels = {measure_plan(max_report(s)), measure_plan(refused),
                                           measure_plan(report_or_refusal(s, packed_policy())), measure_plan(max_report(w))};
  const std::string svg = plan_svg(panels);
  const std::vector<Element> els = drawn_elements(svg);
  size_t pieces = 0;
  for (const PlanPicture& p : panels)
    for (const ChunkPicture& c : p.chunks) pieces += c.pieces.size();
  EXPECT_EQ(count(svg, "<title>sequence "), pieces);  // none of these pieces is narrow enough to group
  for (size_t panel : {0u, 2u, 3u}) {
    const PlanPicture& p = panels[panel];
    ASSERT_EQ(drawn_chunks(p), p.chunks_used);  // the chunks used; the unused ones are a line of text
    for (size_t c = 0; c < drawn_chunks(p); ++c) {
      const BarBox box = bar_box(panels, panel, c);
      const std::string title =
          p.chunks[c].used ? "chunk " + std::to_string(c) + ": " + std::to_string(p.chunks[c].rows) + " of "
                           : "chunk " + std::to_string(c) + ": unused";
      size_t found = 0;
      for (const Element& e : els) {
        if (e.tag != "rect" || e.text.rfind(title, 0) != 0) continue;
        if (std::abs(e.num("y") - box.y) > 0.01) continue;  // another panel's bar of the same chunk
        ++found;
        EXPECT_NEAR(e.num("x"), box.x, 0.01);
        EXPECT_NEAR(e.num("width"), box.width, 0.01);
        EXPECT_NEAR(e.num("height"), box.height, 0.01);
        EXPECT_EQ(e.attr("fill"), p.chunks[c].used ? "#FFFFFF" : std::string(kUnusedFill));
      }
      EXPECT_EQ(found, 1u) << "panel " << panel << " chunk " << c << ": no bar at bar_box y " << box.y;
      // The pieces lie inside the box, at their rows' places.
      const double px_per_row = box.width / p.buffer_token_size;
      for (const Piece& q : p.chunks[c].pieces) {
        const std::string tip = "sequence " + std::to_string(q.sequence) + ": tokens [" + std::to_string(q.token_begin);
        bool seen = false;
        for (const Element& e : els) {
          if (e.tag != "rect" || e.text.rfind(tip, 0) != 0 || std::abs(e.num("y") - box.y) > 0.01) continue;
          if (e.text.find("of chunk " + std::to_string(c) + "\n") == std::string::npos) continue;
          seen = true;
          EXPECT_NEAR(e.num("x"), box.x + q.row_begin * px_per_row, 0.01);
          EXPECT_NEAR(e.num("width"), q.rows() * px_per_row, 0.01);
          EXPECT_EQ(e.attr("fill"), std::string(sequence_swatch(q.sequence).fill));
        }
        EXPECT_TRUE(seen) << "panel " << panel << " chunk " << c << " sequence " << q.sequence;
      }
    }
  }
  // Panels are stacked: each bar below the last.
  EXPECT_LT(bar_box(panels, 0, 3).y + 18, bar_box(panels, 2, 0).y);
  EXPECT_LT(bar_box(panels, 2, 3).y + 18, bar_box(panels, 3, 0).y);
  // The picture is as high as its panels need: the last panel's bars fit.
  const double height = std::stod(svg.substr(svg.find("height=\"") + 8));
  EXPECT_LT(bar_box(panels, 3, drawn_chunks(panels[3]) - 1).y + 18, height);
}

TEST(PlanSvg, ChunksPastTheDrawnLimitAreSummedUp) {
  const check::Scenario s = make_scenario("many-chunks", make_batch(1, 10, 200, {1990}, {0}));
  const PlanPicture p = measure_plan(max_report(s));
  ASSERT_EQ(p.chunks.size(), 200u);
  PlanSvgOptions o;
  o.max_chunk_rows = 16;
  const std::string svg = plan_svg({p}, o);
  EXPECT_NE(svg.find("183 more chunks not drawn (chunks 16 to 198); chunk 199 unused of max_chunks 200"), std::string::npos);
  // A max plan's unused chunks: no bars, one line (chunks 2 and 3 of the worked example's 4).
  const PlanPicture w = measure_plan(max_report(worked_example()));
  ASSERT_EQ(w.chunks.size(), 4u);
  ASSERT_EQ(w.chunks_used, 2u);
  const std::string worked = plan_svg({w});
  EXPECT_NE(worked.find(">chunks 2 to 3 unused of max_chunks 4<"), std::string::npos) << worked;
  EXPECT_EQ(worked.find("chunk 3: unused"), std::string::npos);
  EXPECT_EQ(count(svg, "<title>sequence "), 16u);
}

// A scenario name built to break a picture: markup, quotes, an entity, control bytes, invalid UTF-8
// (a stray continuation byte, an overlong '/', a surrogate, a truncated sequence) and great length.
std::string hostile_name() {
  std::string name = "<script>alert(\"x\")</script>&'";
  name += std::string("\x01\x02\x07\x08\x0b\x0c\x1b\x1f\x7f", 9);
  name += std::string("\x00", 1);
  name += "\x80\xff\xc0\xaf\xed\xa0\x80\xe2\x82 caf\xc3\xa9 ]]> <!-- -->";
  name += std::string(100000, 'N');
  return name;
}

void expect_safe_markup(const std::string& doc, const std::string& what) {
  EXPECT_EQ(doc.find("<script"), std::string::npos) << what;
  EXPECT_EQ(doc.find("<!--"), std::string::npos) << what;
  EXPECT_EQ(doc.find("]]>"), std::string::npos) << what;
  EXPECT_NE(doc.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"), std::string::npos) << what;
  EXPECT_TRUE(clean_utf8(doc)) << what << ": invalid UTF-8 or a control byte";
  EXPECT_NE(doc.find("caf\xc3\xa9"), std::string::npos) << what;  // valid UTF-8 survives
  EXPECT_NE(doc.find("\xEF\xBF\xBD"), std::string::npos) << what;  // bad bytes became U+FFFD
}

TEST(PlanSvg, HostileScenarioNameIsEscapedClippedAndWellFormed) {
  const check::Scenario s = make_scenario(hostile_name(), make_batch(16, 256, 4, {80, 190, 50, 200}, {10, 10, 0, 0}));
  const std::vector<PlanPicture> panels = {measure_plan(max_report(s)), measure_plan(report_or_refusal(s, packed_policy()))};
  for (bool standalone : {true, false}) {
    PlanSvgOptions o;
    o.standalone = standalone;
    o.id_prefix = "a\"b<c>&d";  // the pattern ids are escaped too
    const std::string svg = plan_svg(panels, o);
    expect_safe_markup(svg, standalone ? "standalone SVG" : "inline SVG");
    EXPECT_EQ(svg.find(std::string(200, 'N')), std::string::npos);  // clipped
    EXPECT_NE(svg.find("\xE2\x80\xA6"), std::string::npos);           // with the ellipsis
    EXPECT_LT(svg.size(), 40000u);
    EXPECT_EQ(svg.rfind("<?xml", 0) == 0, standalone);
    const auto ok = parser_accepts(svg);
    if (ok) EXPECT_TRUE(*ok) << "the XML parser rejects the SVG";
  }
}

TEST(PlanSvg, HostileScenarioNameInTheHtmlPage) {
  check::Scenario s = make_scenario(hostile_name(), make_batch(16, 256, 4, {80, 190, 50, 200}, {10, 10, 0, 0}));
  s.description = hostile_name();
  const std::vector<io::PlanReport> reports = {max_report(s), report_or_refusal(s, packed_policy())};
  const std::string html = plan_html(reports, "mlaplan run '" + hostile_name() + "'");
  expect_safe_markup(html, "HTML page");
  const size_t title = html.find("<title>");
  ASSERT_NE(title, std::string::npos);
  EXPECT_LT(html.find("</title>") - title, 1000u) << "the page's <title> is not clipped";
  EXPECT_EQ(count(html, "<svg "), 1u);
  EXPECT_EQ(count(html, "<figure>"), 1u);
}

// Batches of B sequences with equal padded lengths that fill about `chunks` chunks of 4096 rows.
check::Scenario even_batch(uint32_t sequences, uint32_t chunks) {
  const uint32_t rows = 4096;
  const uint64_t total = uint64_t{chunks} * rows - rows / 2;
  std::vector<uint32_t> cache(sequences, static_cast<uint32_t>(total / sequences));
  return make_scenario(std::to_string(sequences) + "x" + std::to_string(chunks),
                       make_batch(1, rows, chunks, cache, std::vector<uint32_t>(sequences, 0)));
}

TEST(PlanSvg, ElementCountStaysBoundedAsBatchesGrow) {
  const double bar_px = 960 - 52 - 20;  // PlanSvgOptions' default width less the margins
  for (uint32_t sequences : {1u, 50u, 1000u}) {
    for (uint32_t chunks : {1u, 16u, 64u}) {
      const check::Scenario s = even_batch(sequences, chunks);
      const PlanPicture p = measure_plan(max_report(s));
      ASSERT_EQ(p.chunks_used, chunks);
      const std::string svg = plan_svg({p});
      const std::string what = s.name;
      const size_t elements = count(svg, "<rect") + count(svg, "<text") + count(svg, "<line") + count(svg, "<path");
      // Per bar: its frame, number and remainder label; per drawn item at most its rect, a padding or
      // label backing rect, a notch and a label. Items are at least 4 px wide, or groups of narrow
      // pieces between them, so at most 2 x bar_px / 4 + 1 per bar whatever the batch.
      size_t bound = 60;  // axis, legend, header
      for (const ChunkPicture& c : p.chunks)
        bound += 3 + 4 * std::min<size_t>(c.pieces.size(), static_cast<size_t>(2 * bar_px / 4 + 1));
      EXPECT_LE(elements, bound) << what;
      EXPECT_LT(svg.size(), 250 * elements + 8192) << what;  // no element is huge (tooltips are capped)
      if (const auto ok = parser_accepts(svg)) EXPECT_TRUE(*ok) << what;
    }
  }
  // 1,000 sequences of 2 rows in one chunk of 4096 rows are 0.43 px each: one group, not 1,000 rects.
  const check::Scenario tiny = even_batch(1000, 1);
  const std::string svg = plan_svg({measure_plan(max_report(tiny))});
  EXPECT_LT(count(svg, "<rect"), 20u);
  EXPECT_EQ(count(svg, "<title>sequence "), 0u);
  EXPECT_EQ(count(svg, "<title>sequences 0 to 999: 1000 pieces"), 1u);
  EXPECT_NE(svg.find("... 984 more"), std::string::npos);  // the group's tooltip lists 16 of them
  EXPECT_NE(svg.find(">1000 seqs</text>"), std::string::npos);
  // Alternating wide and one-row pieces: the narrow ones between wide ones stay themselves.
  std::vector<uint32_t> cache;
  for (int i = 0; i < 40; ++i) cache.push_back(i % 2 ? 1 : 300);
  const check::Scenario mixed = make_scenario("mixed", make_batch(1, 8192, 2, cache, std::vector<uint32_t>(40, 0)));
  const std::string mixed_svg = plan_svg({measure_plan(max_report(mixed))});
  EXPECT_EQ(count(mixed_svg, "<title>sequence "), 40u);
  EXPECT_EQ(count(mixed_svg, "<title>sequences "), 0u);
}

// With a cost file, each panel and the top lines say the predicted step time and the path; the
// detail line that held it is broken at the width, not cut (it ended "K conca..." at 900 px).
TEST(PlanSvg, PanelsGiveTheirPredictedTimeAndNoDetailIsCut) {
  PlanPicture max = measure_plan(max_report(worked_example()));
  max.memory = io::MemoryFigures{};
  max.memory->model = "deepseek-v3";
  max.memory->tp = 8;
  max.memory->dtype = "bf16";
  max.memory->bytes_per_row = 8192;
  max.memory->buffer_bytes = 4u << 20;
  max.memory->k_concat_bytes = 3u << 20;
  max.memory->latent_bytes = 576u << 10;
  max.step_ms = 283.506;
  max.path = "chunked";
  max.gpu = "NVIDIA H100 80GB HBM3";
  PlanPicture whole = max;
  whole.policy = "trtllm (packed/trtllm)";
  whole.step_ms = 205.309;
  whole.path = "one-shot";
  PlanSvgOptions narrow;
  narrow.width = 700;
  const std::string svg = plan_svg({max, whole}, narrow);
  EXPECT_NE(svg.find("chunks used, time predicted: max 2 chunks, 283.5 ms/step"), std::string::npos) << svg;
  EXPECT_NE(svg.find("205.3 ms/step (one-shot)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("predicted on NVIDIA H100 80GB HBM3"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("\xE2\x80\xA6"), std::string::npos) << "a clipped line (an ellipsis) in " << svg;
  // The bars start below however many lines the header took.
  EXPECT_GT(bar_box({max, whole}, 0, 0, narrow).y, bar_box({max}, 0, 0, narrow).y - 1);
}

// With each chunk's time (run --cost on the plan's loop), every drawn chunk carries it in a column
// right of the buffer's end, the bars narrowed to make room, and the details say how much of the
// step is the chunks'; the same plan without them draws no such column.
TEST(PlanSvg, ChunksCarryTheirPredictedTimesOnlyWithACostFile) {
  const check::Scenario s = worked_example();
  io::PlanReport r = max_report(s);
  const PlanSvgOptions o;
  const std::string plain = plan_svg({measure_plan(r)}, o);
  r.time = io::TimeFigures{};
  r.time->layers = 61;
  r.time->layer_us = 50;
  r.time->gpu = "NVIDIA H100 80GB HBM3";
  r.time->chunk_us = {30, 12.5};  // the worked example's two chunks; 7.5 us the rest
  const PlanPicture timed = measure_plan(r);
  ASSERT_EQ(timed.chunks_used, 2u);
  EXPECT_NEAR(*timed.chunks[0].ms, 1.83, 1e-12);
  EXPECT_NEAR(*timed.chunks[1].ms, 0.7625, 1e-12);
  EXPECT_FALSE(timed.chunks[2].ms);  // unused
  const std::string svg = plan_svg({timed}, o);
  EXPECT_EQ(plain.find("time/step"), std::string::npos);
  EXPECT_NE(svg.find(">time/step</text>"), std::string::npos) << svg;
  const BarBox bar = bar_box({timed}, 0, 0, o);
  EXPECT_LT(bar.width, bar_box({measure_plan(max_report(s))}, 0, 0, o).width);
  size_t times = 0;
  for (const Element& e : drawn_elements(svg)) {
    if (e.tag != "text" || (e.text != "1.83 ms" && e.text != "762 us")) continue;
    ++times;
    // Right-aligned in its column: it starts past the buffer's end and ends inside the picture.
    EXPECT_EQ(e.attrs.at("text-anchor"), "end");
    EXPECT_GT(e.num("x") - dejavu_width(e.text, e.num("font-size")), bar.x + bar.width);
    EXPECT_LE(e.num("x"), o.width);
  }
  EXPECT_EQ(times, 2u) << svg;
  EXPECT_NE(svg.find("2.59 ms in the chunks, 457 us in the new tokens"), std::string::npos) << svg;
  // The page's summary table gives the predicted step beside the chunk count, only with a cost file.
  EXPECT_NE(plan_html({r}, "").find(">3.05 ms/step<"), std::string::npos);
  EXPECT_EQ(plan_html({max_report(s)}, "").find("predicted step"), std::string::npos);
  // A plan whose model chunks differ from its tables' (another path) is left untimed.
  r.time->chunk_us = {42.5};
  EXPECT_EQ(plan_svg({measure_plan(r)}, o).find("time/step"), std::string::npos);
}

// Priced as mlaplan's fused loop (run --cost with a fused file), the details give its buffer as K and V,
// with no K concat or latent beside it (the line breaks after "buffer" at the default width).
TEST(PlanSvg, FusedLoopsBufferIsKAndV) {
  PlanPicture p = measure_plan(max_report(worked_example()));
  p.memory = io::MemoryFigures{"deepseek-v3", 8, "bf16", 10240, 5u << 20, 0, 0, true};
  const std::string svg = plan_svg({p});
  EXPECT_NE(svg.find("5.00 MiB (K + V, mlaplan&#39;s fused loop)"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("K concat"), std::string::npos) << svg;
  p.memory->fused_loop = false;
  EXPECT_NE(plan_svg({p}).find("K concat 0 B, latent 0 B"), std::string::npos);
}

}  // namespace
}  // namespace mlaplan::render
