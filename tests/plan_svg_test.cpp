// Pictures of plans without a renderer (lib/render): what measure_plan reads out of hand-computed
// plans, how lay_out_bar groups narrow pieces, where plan_svg puts its bars and labels, that hostile
// scenario names come out escaped and clipped, that big batches stay small pictures, and the escaping,
// clipping and number formatting of svg_writer. render_pixels_test.cpp looks at the rendered pixels.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/explore/policy.hpp"
#include "mlaplan/explore/policy_report.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/render/palette.hpp"
#include "mlaplan/render/plan_html.hpp"
#include "mlaplan/render/plan_picture.hpp"
#include "mlaplan/render/plan_svg.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/check/scenario.hpp"

namespace mlaplan::render {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Plans built in code.

Batch make_batch(uint32_t page, uint32_t rows, uint32_t chunks, std::vector<uint32_t> cache, const std::vector<uint32_t>& inputs) {
  Batch b;
  b.page_size = page;
  b.buffer_token_size = rows;
  b.max_chunks = chunks;
  b.cache_lengths = std::move(cache);
  b.input_row_offsets = {0};
  for (uint32_t n : inputs) b.input_row_offsets.push_back(b.input_row_offsets.back() + n);
  return b;
}

check::Scenario make_scenario(std::string name, Batch batch) {
  check::Scenario s;
  s.name = std::move(name);
  s.batch = std::move(batch);
  validate_batch(s.batch);
  return s;
}

// The max plan, as `run --backend cpu` reports it.
io::PlanReport max_report(const check::Scenario& s) {
  io::PlanReport r;
  r.scenario = &s;
  r.policy = "max";
  r.backend = "cpu";
  r.planner = "cpu-reference";
  r.shape = plan_shape(s.batch);
  r.tables = plan_reference(s.batch);
  return r;
}

// Another policy's plan, as `run --policy ...` reports it (a refusal sets `refused`).
io::PlanReport report_or_refusal(const check::Scenario& s, const explore::Policy& policy) {
  try {
    return explore::policy_report(s, policy);
  } catch (const InputError& e) {
    io::PlanReport r;
    r.scenario = &s;
    r.policy = policy.name();
    r.refused = e.what();
    return r;
  }
}

explore::Policy packed_policy() {
  explore::Policy p;
  p.kind = explore::PolicyKind::packed;
  return p;
}

// The worked example of docs/semantics.md.
check::Scenario worked_example() { return make_scenario("worked-example", make_batch(128, 512, 4, {500, 0, 100}, {9, 200, 20})); }

// Sequence 1 split across chunks 0 and 1 with page padding at its end, chunk 3 unused (the scenario
// of the pixel tests).
check::Scenario split_example() { return make_scenario("split", make_batch(16, 256, 4, {80, 190, 50, 200}, {10, 10, 0, 0})); }

void expect_piece(const Piece& p, uint32_t sequence, uint32_t row_begin, uint32_t row_end, uint64_t token_begin,
                  uint32_t padding, bool continued, bool continues) {
  SCOPED_TRACE("sequence " + std::to_string(sequence) + " rows [" + std::to_string(row_begin) + ", " +
               std::to_string(row_end) + ")");
  EXPECT_EQ(p.sequence, sequence);
  EXPECT_EQ(p.row_begin, row_begin);
  EXPECT_EQ(p.row_end, row_end);
  EXPECT_EQ(p.token_begin, token_begin);
  EXPECT_EQ(p.padding_rows, padding);
  EXPECT_EQ(p.continued, continued);
  EXPECT_EQ(p.continues, continues);
}

// ---------------------------------------------------------------------------------------------
// Reading the SVG back: SvgWriter writes one element per line, attributes always double-quoted.

struct Element {
  std::string tag;
  std::map<std::string, std::string> attrs;
  std::string text;  // <text>'s content, or the <title> of a <rect>, unescaped
  double num(const std::string& name) const {
    const auto it = attrs.find(name);
    return it == attrs.end() ? 0.0 : std::stod(it->second);
  }
  std::string attr(const std::string& name) const {
    const auto it = attrs.find(name);
    return it == attrs.end() ? "" : it->second;
  }
};

std::string unescape(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool entity = false;
    for (const auto& [name, c] : kEntities) {
      if (s.substr(i, name.size()) == name) {
        out += c;
        i += name.size();
        entity = true;
        break;
      }
    }
    if (!entity) out += s[i++];
  }
  return out;
}

// The drawn elements (rect, text, line, path) in document order, outside <defs>.
std::vector<Element> drawn_elements(const std::string& svg) {
  std::vector<Element> out;
  const size_t defs_end = svg.find("</defs>");
  size_t i = defs_end == std::string::npos ? 0 : defs_end;
  while ((i = svg.find('<', i)) != std::string::npos) {
    size_t j = i + 1;
    while (j < svg.size() && std::isalpha(static_cast<unsigned char>(svg[j]))) ++j;
    Element e;
    e.tag = svg.substr(i + 1, j - i - 1);
    if (e.tag != "rect" && e.tag != "text" && e.tag != "line" && e.tag != "path") {
      i = j;
      continue;
    }
    for (;;) {
      while (svg[j] == ' ') ++j;
      if (svg[j] == '>' || svg[j] == '/') break;
      const size_t eq = svg.find('=', j);
      const size_t close = svg.find('"', eq + 2);
      e.attrs[svg.substr(j, eq - j)] = unescape(std::string_view(svg).substr(eq + 2, close - eq - 2));
      j = close + 1;
    }
    if (svg[j] == '>') {  // content: the text's, or a <title> inside the rect
      const std::string end = "</" + e.tag + ">";
      const size_t stop = svg.find(end, j);
      std::string_view inner = std::string_view(svg).substr(j + 1, stop - j - 1);
      if (e.tag == "rect" && inner.substr(0, 7) == "<title>") inner = inner.substr(7, inner.size() - 7 - 8);
      e.text = unescape(inner);
      j = stop + end.size() - 1;
    }
    out.push_back(std::move(e));
    i = j;
  }
  return out;
}

size_t count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Advance widths of DejaVu Sans (the picture's first font), in em, for the characters labels use;
// anything else counts as a full em so that an unexpected character cannot pass by being narrow.
double dejavu_width(std::string_view text, double size) {
  double em = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') em += 1303.0 / 2048;
    else if (c == ' ' || c == ',') em += 651.0 / 2048;
    else if (c == '[' || c == ']' || c == '(' || c == ')') em += 799.0 / 2048;
    else if (c == 's') em += 1067.0 / 2048;
    else if (c == 'e') em += 1260.0 / 2048;
    else if (c == 'q') em += 1300.0 / 2048;
    else if (c == 'r') em += 842.0 / 2048;
    else if (c == 'o') em += 1253.0 / 2048;
    else if (c == 'w') em += 1675.0 / 2048;
    else if (c == '%') em += 1946.0 / 2048;
    else em += 1.0;
  }
  return em * size;
}

// An XML parser's verdict where one is installed (xmllint, else Python's xml.etree); nullopt where
// neither is.
std::optional<bool> parser_accepts(const std::string& doc) {
  const bool xmllint = std::system("command -v xmllint >/dev/null 2>&1") == 0;
  const bool python = !xmllint && std::system("command -v python3 >/dev/null 2>&1") == 0;
  if (!xmllint && !python) return std::nullopt;
  char dir_template[] = "/tmp/mlaplan_plan_svg_XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) return std::nullopt;
  const fs::path file = fs::path(dir) / "picture.svg";
  std::ofstream(file, std::ios::binary) << doc;
  const std::string command = xmllint ? "xmllint --noout '" + file.string() + "' 2>/dev/null"
                                      : "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" +
                                            file.string() + "' 2>/dev/null";
  const bool ok = std::system(command.c_str()) == 0;
  fs::remove_all(dir);
  return ok;
}

// Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF) with no C0 control byte but
// `allowed`.
bool clean_utf8(const std::string& s, std::string_view allowed = "\n") {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 && allowed.find(static_cast<char>(c)) == std::string_view::npos) return false;
      ++i;
      continue;
    }
    const size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// measure_plan

TEST(PlanPicture, MeasuresTheWorkedExample) {
  const check::Scenario s = worked_example();
  const PlanPicture p = measure_plan(max_report(s));
  EXPECT_EQ(p.scenario, "worked-example");
  EXPECT_EQ(p.policy, "max");
  EXPECT_EQ(p.batch_size, 3u);
  EXPECT_EQ(p.chunks_used, 2u);
  EXPECT_EQ(p.payload_tokens, 829u);  // 509 + 200 + 120
  EXPECT_EQ(p.streamed_rows, 896u);   // 512 + 256 + 128
  EXPECT_EQ(p.padding_rows(), 67u);
  EXPECT_DOUBLE_EQ(p.fill(), 896.0 / 1024.0);
  EXPECT_EQ(p.new_tokens, (std::vector<uint32_t>{9, 200, 20}));
  EXPECT_EQ(p.cache_lengths, (std::vector<uint32_t>{500, 0, 100}));
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_TRUE(p.chunks[0].used);
  EXPECT_EQ(p.chunks[0].rows, 512u);
  ASSERT_EQ(p.chunks[0].pieces.size(), 1u);
  // s0: 509 tokens padded to 512, the last 3 rows padding.
  expect_piece(p.chunks[0].pieces[0], 0, 0, 512, 0, 3, false, false);
  EXPECT_TRUE(p.chunks[1].used);
  EXPECT_EQ(p.chunks[1].rows, 384u);
  ASSERT_EQ(p.chunks[1].pieces.size(), 2u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 256, 0, 56, false, false);   // 200 tokens padded to 256
  expect_piece(p.chunks[1].pieces[1], 2, 256, 384, 0, 8, false, false);  // 120 tokens padded to 128
  for (uint32_t c : {2u, 3u}) {
    EXPECT_EQ(p.chunks[c].index, c);
    EXPECT_FALSE(p.chunks[c].used) << c;
    EXPECT_EQ(p.chunks[c].rows, 0u) << c;
    EXPECT_TRUE(p.chunks[c].pieces.empty()) << c;
  }
}

TEST(PlanPicture, SequenceSplitAcrossChunksIsContinuedAndContinues) {
  const check::Scenario s = split_example();
  const PlanPicture p = measure_plan(max_report(s));
  // L = [96, 208, 64, 208], S = [0, 96, 304, 368], E = 576: chunks of 256, 256 and 64 rows.
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_EQ(p.chunks_used, 3u);
  EXPECT_EQ(p.chunks[0].rows, 256u);
  EXPECT_EQ(p.chunks[1].rows, 256u);
  EXPECT_EQ(p.chunks[2].rows, 64u);
  EXPECT_FALSE(p.chunks[3].used);
  ASSERT_EQ(p.chunks[0].pieces.size(), 2u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 96, 0, 6, false, false);      // 90 tokens padded to 96
  expect_piece(p.chunks[0].pieces[1], 1, 96, 256, 0, 0, false, true);     // s1's first 160 tokens
  ASSERT_EQ(p.chunks[1].pieces.size(), 3u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 48, 160, 8, true, false);     // the rest: 40 tokens + 8 padding
  expect_piece(p.chunks[1].pieces[1], 2, 48, 112, 0, 14, false, false);   // 50 tokens padded to 64
  expect_piece(p.chunks[1].pieces[2], 3, 112, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 3, 0, 64, 144, 8, true, false);
  EXPECT_EQ(p.padding_rows(), 36u);
}

TEST(PlanPicture, PagesStraddlingChunksAndEmptySequences) {
  // N = 100 is not a multiple of P = 128: s0's one token is padded to a page that straddles chunks
  // 0 and 1, so its piece in chunk 1 is padding alone; s1 is empty and has no piece anywhere.
  const check::Scenario s = make_scenario("straddle", make_batch(128, 100, 4, {1, 0, 50}, {0, 0, 0}));
  const PlanPicture p = measure_plan(max_report(s));
  ASSERT_EQ(p.chunks.size(), 4u);
  EXPECT_EQ(p.chunks_used, 3u);
  ASSERT_EQ(p.chunks[0].pieces.size(), 1u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 100, 0, 99, false, true);
  ASSERT_EQ(p.chunks[1].pieces.size(), 2u);
  expect_piece(p.chunks[1].pieces[0], 0, 0, 28, 100, 28, true, false);
  expect_piece(p.chunks[1].pieces[1], 2, 28, 100, 0, 22, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 2, 0, 56, 72, 56, true, false);
  EXPECT_EQ(p.chunks[2].rows, 56u);
  EXPECT_FALSE(p.chunks[3].used);
  for (const ChunkPicture& c : p.chunks)
    for (const Piece& q : c.pieces) EXPECT_NE(q.sequence, 1u) << "the empty sequence drew a piece in chunk " << c.index;
  // Padding per piece adds up to the plan's padding.
  uint64_t padding = 0;
  for (const ChunkPicture& c : p.chunks)
    for (const Piece& q : c.pieces) padding += q.padding_rows;
  EXPECT_EQ(padding, p.padding_rows());
}

TEST(PlanPicture, OtherPoliciesStreamTheCachedContextWithoutPadding) {
  const check::Scenario s = split_example();
  const PlanPicture p = measure_plan(report_or_refusal(s, packed_policy()));
  EXPECT_EQ(p.policy, "packed");
  EXPECT_EQ(p.payload_tokens, 520u);
  EXPECT_EQ(p.streamed_rows, 520u);
  EXPECT_EQ(p.padding_rows(), 0u);
  EXPECT_EQ(p.new_tokens, (std::vector<uint32_t>{0, 0, 0, 0}));
  ASSERT_EQ(p.chunks_used, 3u);
  // vLLM packs the cached context in order, splitting at page multiples: 80 + 176 | 14 + 50 + 192 | 8.
  ASSERT_EQ(p.chunks[0].pieces.size(), 2u);
  expect_piece(p.chunks[0].pieces[0], 0, 0, 80, 0, 0, false, false);
  expect_piece(p.chunks[0].pieces[1], 1, 80, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[1].pieces.size(), 3u);
  expect_piece(p.chunks[1].pieces[0], 1, 0, 14, 176, 0, true, false);
  expect_piece(p.chunks[1].pieces[1], 2, 14, 64, 0, 0, false, false);
  expect_piece(p.chunks[1].pieces[2], 3, 64, 256, 0, 0, false, true);
  ASSERT_EQ(p.chunks[2].pieces.size(), 1u);
  expect_piece(p.chunks[2].pieces[0], 3, 0, 8, 192, 0, true, false);
  EXPECT_EQ(p.chunks[2].rows, 8u);
}

TEST(PlanPicture, RefusedPlanHasNoChunksAndDrawsTheReason) {
  const check::Scenario s = make_scenario("too-big", make_batch(1, 100, 1, {150}, {0}));
  io::PlanReport r;
  r.scenario = &s;
  r.refused = "max_chunks: 1 is too few <for> this batch & needs 2";
  const PlanPicture p = measure_plan(r);
  EXPECT_EQ(p.refused, r.refused);
  EXPECT_TRUE(p.chunks.empty());
  EXPECT_EQ(p.chunks_used, 0u);
  EXPECT_EQ(p.cache_lengths, (std::vector<uint32_t>{150}));
  const std::string svg = plan_svg({p});
  EXPECT_NE(svg.find("refused: max_chunks: 1 is too few &lt;for&gt; this batch &amp; needs 2"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<title>sequence "), 0u);
  if (const auto ok = parser_accepts(svg)) EXPECT_TRUE(*ok);
}

// ---------------------------------------------------------------------------------------------
// lay_out_bar

ChunkPicture chunk_of(const std::vector<uint32_t>& rows, const std::vector<uint32_t>& padding = {}) {
  ChunkPicture c;
  c.used = true;
  uint32_t at = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    Piece p;
    p.sequence = static_cast<uint32_t>(i);
    p.row_begin = at;
    p.row_end = at += rows[i];
    p.padding_rows = i < padding.size() ? padding[i] : 0;
    c.pieces.push_back(p);
  }
  c.rows = at;
  return c;
}

TEST(LayOutBar, RunOfNarrowPiecesIsOneGroup) {
  // At 1 px per row and 4 px minimum: 10 | 1 2 3 1 | 10.
  const ChunkPicture c = chunk_of({10, 1, 2, 3, 1, 10}, {0, 1, 0, 2, 1, 0});
  const std::vector<BarItem> items = lay_out_bar(c, 1.0, 4.0);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_FALSE(items[0].grouped());
  EXPECT_TRUE(items[1].grouped());
  EXPECT_EQ(items[1].first, 1u);
  EXPECT_EQ(items[1].last, 4u);
  EXPECT_EQ(items[1].row_begin, 10u);
  EXPECT_EQ(items[1].row_end, 17u);
  EXPECT_EQ(items[1].padding_rows, 4u);
  EXPECT_FALSE(items[2].grouped());
  EXPECT_EQ(items[2].first, 5u);
  EXPECT_EQ(items[2].row_begin, 17u);
  EXPECT_EQ(items[2].row_end, 27u);
}

TEST(LayOutBar, LoneNarrowPieceBetweenWideOnesStaysItself) {
  const ChunkPicture c = chunk_of({10, 1, 10, 2, 10});
  const std::vector<BarItem> items = lay_out_bar(c, 1.0, 4.0);
  ASSERT_EQ(items.size(), 5u);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_FALSE(items[i].grouped()) << i;
    EXPECT_EQ(items[i].first, i);
    EXPECT_EQ(items[i].row_begin, c.pieces[i].row_begin);
    EXPECT_EQ(items[i].row_end, c.pieces[i].row_end);
  }
}

TEST(LayOutBar, WidePiecesStayAloneAndTheScaleDecides) {
  const ChunkPicture c = chunk_of({4, 5, 100, 4});
  EXPECT_EQ(lay_out_bar(c, 1.0, 4.0).size(), 4u);  // exactly 4 px is wide enough
  // At a quarter of a px per row only the 100-row piece is wide: 4 5 | 100 | 4.
  const std::vector<BarItem> items = lay_out_bar(c, 0.25, 4.0);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_TRUE(items[0].grouped());
  EXPECT_EQ(items[0].row_end, 9u);
  EXPECT_FALSE(items[1].grouped());
  EXPECT_FALSE(items[2].grouped());  // a narrow piece at the end, alone
  // Everything narrow: one group over the whole chunk.
  const std::vector<BarItem> one = lay_out_bar(chunk_of(std::vector<uint32_t>(1000, 1)), 0.5, 4.0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].first, 0u);
  EXPECT_EQ(one[0].last, 999u);
  EXPECT_EQ(one[0].row_end, 1000u);
  EXPECT_TRUE(lay_out_bar(ChunkPicture{}, 1.0, 4.0).empty());
}

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
    for (size_t c = 0; c < p.chunks.size(); ++c) {
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
  EXPECT_LT(bar_box(panels, 3, 3).y + 18, height);
}

TEST(PlanSvg, ChunksPastTheDrawnLimitAreSummedUp) {
  const check::Scenario s = make_scenario("many-chunks", make_batch(1, 10, 200, {1990}, {0}));
  const PlanPicture p = measure_plan(max_report(s));
  ASSERT_EQ(p.chunks.size(), 200u);
  PlanSvgOptions o;
  o.max_chunk_rows = 16;
  const std::string svg = plan_svg({p}, o);
  EXPECT_NE(svg.find("184 more chunks not drawn (chunks 16 to 199)"), std::string::npos);
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

// ---------------------------------------------------------------------------------------------
// svg_writer

TEST(SvgWriter, XmlEscapeEscapesEachSpecialCharacter) {
  EXPECT_EQ(xml_escape("&"), "&amp;");
  EXPECT_EQ(xml_escape("<"), "&lt;");
  EXPECT_EQ(xml_escape(">"), "&gt;");
  EXPECT_EQ(xml_escape("\""), "&quot;");
  EXPECT_EQ(xml_escape("'"), "&#39;");
  EXPECT_EQ(xml_escape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped again: text is text
  EXPECT_EQ(xml_escape(""), "");
  EXPECT_EQ(xml_escape("plain text 123"), "plain text 123");
}

TEST(SvgWriter, XmlEscapeReplacesControlBytesButKeepsWhitespace) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("\t\n\r"), "\t\n\r");
  EXPECT_EQ(xml_escape(std::string("a\0b", 3)), "a" + fffd + "b");
  for (int c = 1; c < 0x20; ++c) {
    if (c == '\t' || c == '\n' || c == '\r') continue;
    EXPECT_EQ(xml_escape(std::string(1, static_cast<char>(c))), fffd) << c;
  }
  EXPECT_EQ(xml_escape("\x7f"), "\x7f");  // DEL is an XML 1.0 character
}

TEST(SvgWriter, XmlEscapeReplacesInvalidUtf8) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("\x80"), fffd);                      // a stray continuation byte
  EXPECT_EQ(xml_escape("\xff"), fffd);                      // never in UTF-8
  EXPECT_EQ(xml_escape("\xf8\x88\x80\x80\x80"), fffd + fffd + fffd + fffd + fffd);  // 5-byte form
  EXPECT_EQ(xml_escape("a\xc3"), "a" + fffd);               // truncated at the end
  EXPECT_EQ(xml_escape("\xc3<"), fffd + "&lt;");            // truncated before markup
  EXPECT_EQ(xml_escape("\xe2\x82x"), fffd + fffd + "x");    // truncated 3-byte sequence
  // Overlong encodings ('/' as 2, 3 and 4 bytes; NUL as 2) are rejected byte by byte.
  EXPECT_EQ(xml_escape("\xc0\xaf"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xc1\xbf"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xc0\x80"), fffd + fffd);
  EXPECT_EQ(xml_escape("\xe0\x80\xaf"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xf0\x80\x80\xaf"), fffd + fffd + fffd + fffd);
  // Surrogates (U+D800, U+DFFF), past U+10FFFF, and the non-characters U+FFFE / U+FFFF.
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xed\xbf\xbf"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xef\xbf\xbe"), fffd + fffd + fffd);
  EXPECT_EQ(xml_escape("\xef\xbf\xbf"), fffd + fffd + fffd);
  // Whatever comes in, what comes out is clean.
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(std::uniform_int_distribution<int>(0, 12)(rng), '\0');
    for (char& c : junk) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    const std::string out = xml_escape(junk);
    ASSERT_TRUE(clean_utf8(out, "\t\n\r")) << i;
    ASSERT_EQ(out.find('<'), std::string::npos);
  }
}

TEST(SvgWriter, XmlEscapeKeepsValidMultibyteCharacters) {
  for (const std::string ok : {"caf\xc3\xa9", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xe2\x82\xac", "\xed\x9f\xbf",
                               "\xee\x80\x80", "\xef\xbf\xbd", "\xf0\x90\x80\x80", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
                               "\xe2\x80\xa6 \xe6\x97\xa5\xe6\x9c\xac"}) {
    EXPECT_EQ(xml_escape(ok), ok);
  }
}

TEST(SvgWriter, ClipTextCutsWholeCharactersAndAddsAnEllipsis) {
  const std::string ellipsis = "\xE2\x80\xA6";
  EXPECT_EQ(clip_text("hello", 5), "hello");
  EXPECT_EQ(clip_text("hello", 10), "hello");
  EXPECT_EQ(clip_text("hello!", 5), "hell" + ellipsis);  // 5 characters, the last the ellipsis
  EXPECT_EQ(clip_text("hello", 1), ellipsis);
  EXPECT_EQ(clip_text("hello", 0), "");
  EXPECT_EQ(clip_text("", 0), "");
  EXPECT_EQ(clip_text("", 3), "");
  // Multibyte characters are never cut: "é" is 2 bytes, "€" 3, "😀" 4.
  const std::string text = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80xyz";  // é€😀xyz: 6 characters
  EXPECT_EQ(clip_text(text, 6), text);
  EXPECT_EQ(clip_text(text, 5), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80x" + ellipsis);
  EXPECT_EQ(clip_text(text, 4), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" + ellipsis);
  EXPECT_EQ(clip_text(text, 3), "\xc3\xa9\xe2\x82\xac" + ellipsis);
  EXPECT_EQ(clip_text(text, 2), "\xc3\xa9" + ellipsis);
  for (size_t n = 0; n <= 7; ++n) {
    const std::string clipped = clip_text(text, n);
    EXPECT_TRUE(clean_utf8(clipped)) << n;
    EXPECT_LE(text_width(clipped, 10), text_width(std::string(n, 'x'), 10) + 1e-9) << n;  // at most n characters
  }
  // Clipping to a width: nothing cut when it fits; otherwise within the width, ending in the ellipsis.
  EXPECT_EQ(clip_to_width("hello", 10, 1000), "hello");
  const std::string wide = clip_to_width(std::string(500, 'A') + "\xe4\xb8\xad", 12, 300);
  EXPECT_LE(text_width(wide, 12), 300 + 1e-9);
  EXPECT_GT(text_width(wide, 12), 280);
  EXPECT_EQ(wide.substr(wide.size() - ellipsis.size()), ellipsis);
  // Wrapping: at spaces, each line within the width, the last clipped when lines run out.
  const std::string reason = "max_chunks: infeasible batch: 6060800 padded tokens need 93 chunks of 65536 rows, but "
                             "max_chunks is 16; set max_chunks to at least 93 or buffer_token_size to at least 378800";
  const auto two = wrap_to_width(reason, 13, 400, 5);
  ASSERT_GE(two.size(), 3u);
  std::string joined;
  for (const std::string& l : two) {
    EXPECT_LE(text_width(l, 13), 400 + 1e-9) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, reason);  // nothing lost when the lines suffice
  const auto one = wrap_to_width(reason, 13, 400, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].substr(one[0].size() - ellipsis.size()), ellipsis);
  EXPECT_TRUE(wrap_to_width("", 13, 400, 3).empty());
  EXPECT_EQ(wrap_to_width(std::string(300, 'w'), 13, 100, 3).size(), 1u);  // one long word: clipped, not split
  // An invalid byte counts as one character and is not glued to its neighbours.
  EXPECT_EQ(clip_text("\xff\xffzz", 3), "\xff\xff" + ellipsis);
  EXPECT_EQ(xml_escape(clip_text(std::string(1000, 'a') + "\xc3", 999)), std::string(998, 'a') + ellipsis);
}

TEST(SvgWriter, SvgNumberHasAtMostTwoDecimalsAndNoTrailingZeros) {
  EXPECT_EQ(svg_number(12), "12");
  EXPECT_EQ(svg_number(100), "100");
  EXPECT_EQ(svg_number(0), "0");
  EXPECT_EQ(svg_number(3.5), "3.5");
  EXPECT_EQ(svg_number(3.25), "3.25");
  EXPECT_EQ(svg_number(3.14159), "3.14");
  EXPECT_EQ(svg_number(2.999), "3");
  EXPECT_EQ(svg_number(10.1), "10.1");
  EXPECT_EQ(svg_number(-7.5), "-7.5");
  EXPECT_EQ(svg_number(-0.001), "0");  // no "-0"
  EXPECT_EQ(svg_number(-0.0), "0");
  EXPECT_EQ(svg_number(1e6), "1000000");
  EXPECT_EQ(svg_number(std::nan("")), "0");
  EXPECT_EQ(svg_number(HUGE_VAL), "0");
  EXPECT_EQ(svg_number(-HUGE_VAL), "0");
}

TEST(SvgWriter, TextWidthCountsCharactersNotBytes) {
  EXPECT_DOUBLE_EQ(text_width("", 10), 0.0);
  EXPECT_DOUBLE_EQ(text_width("\xe2\x82\xac\xe2\x82\xac", 10), text_width("ab", 10));
  EXPECT_DOUBLE_EQ(text_width("abcd", 20), 2 * text_width("abcd", 10));
  // Generous for the labels: never narrower than DejaVu Sans draws them.
  for (const std::string label : {"s0 [0, 96)", "s12 [160, 208)", "s1 [1000000000, 1000001000)", "12 seqs", "s7"})
    EXPECT_GE(text_width(label, 11), dejavu_width(label, 11)) << label;
}

TEST(SvgWriter, WriterEscapesAttributesTextAndTitlesAndClosesEverything) {
  SvgWriter w(100.5, 50);
  w.open("g", {{"class", "a\"b"}});
  w.rect(1, 2, -3, 4, "#FFF\"", "tip <b>&");
  w.text(5, 6, "x < y & \x01", 12, {{"fill", "<red>"}});
  w.line(0, 0, 1.005, 2, "#000");
  w.element("desc", {}, "");
  w.open("g");
  const std::string svg = w.finish();
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_NE(svg.find("width=\"100.5\" height=\"50\" viewBox=\"0 0 100.5 50\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"a&quot;b\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"0\""), std::string::npos);  // a negative width is clamped
  EXPECT_NE(svg.find("fill=\"#FFF&quot;\"><title>tip &lt;b&gt;&amp;</title></rect>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"&lt;red&gt;\">x &lt; y &amp; \xEF\xBF\xBD</text>"), std::string::npos);
  EXPECT_NE(svg.find("<desc/>"), std::string::npos);
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>"));
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  if (const auto ok = parser_accepts(svg)) EXPECT_TRUE(*ok);
  SvgWriter inline_writer(10, 10);
  EXPECT_EQ(inline_writer.finish(false).rfind("<svg ", 0), 0u);
}

TEST(Palette, TolMutedColoursAndNeighboursNeverShareOne) {
  const std::vector<std::string> tol = {"#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE",
                                        "#882255", "#44AA99", "#999933", "#AA4499"};
  ASSERT_EQ(kSwatchCount, tol.size());
  for (size_t b = 0; b < 20; ++b) {
    EXPECT_EQ(sequence_swatch(b).fill, tol[b % tol.size()]) << b;
    EXPECT_NE(sequence_swatch(b).fill, sequence_swatch(b + 1).fill) << b;
    EXPECT_NE(sequence_swatch(b).fill, kUnusedFill);
    EXPECT_NE(sequence_swatch(b).fill, "#FFFFFF");
  }
  EXPECT_EQ(kUnusedFill, "#DDDDDD");
  EXPECT_EQ(kBufferEndStroke, "#000000");
}

}  // namespace
}  // namespace mlaplan::render
