// A compact SVG writer: elements, attributes and text with XML escaping done in one place, so a
// scenario name holding markup, quotes or control characters can never break a picture. No SVG
// library in Debian writes text that stays text (cairo turns it into glyph outlines, losing the
// <title> tooltips and selectable labels), so this is ours; its escaping is tested on hostile input.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlaplan::render {

// `text` fit for XML 1.0 character data or an attribute value: & < > " ' escaped, and every byte
// XML cannot carry (C0 controls other than tab, newline and return; invalid UTF-8) replaced by U+FFFD.
std::string xml_escape(std::string_view text);
// At most `max_chars` code points of UTF-8 `text`, ending in "…" when cut (never inside a character).
std::string clip_text(std::string_view text, size_t max_chars);
// A coordinate or length as SVG wants it: at most 2 decimals, no trailing zeros ("12", "3.5").
std::string svg_number(double value);

class SvgWriter {
 public:
  using Attrs = std::initializer_list<std::pair<std::string_view, std::string>>;

  SvgWriter(double width, double height, std::string_view font_family = "DejaVu Sans, Verdana, sans-serif");

  // <tag attrs...> ... close(): groups, links, patterns.
  void open(std::string_view tag, Attrs attrs = {});
  void close();
  // <tag attrs.../> or <tag attrs...>text</tag>; the text is escaped.
  void element(std::string_view tag, Attrs attrs, std::string_view text = {});
  // A rectangle with an optional tooltip (<title>, shown on hover by browsers and SVG viewers).
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view title = {}, Attrs extra = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1, Attrs extra = {});
  // Text at (x, y) (the baseline); `size` in px.
  void text(double x, double y, std::string_view content, double size = 12, Attrs extra = {});
  // Markup written as it is: only for literal, trusted snippets (pattern definitions).
  void raw(std::string_view markup);

  double width() const { return width_; }
  double height() const { return height_; }
  // The document: every open element closed. `standalone` adds the XML declaration a .svg file
  // carries; inline in HTML it is left out.
  std::string finish(bool standalone = true);

 private:
  void write_open(std::string_view tag, Attrs attrs, bool self_close);
  std::string out_;
  std::vector<std::string> open_;
  double width_, height_;
};

// Rough width in px of `text` at `size` px in a sans-serif font, for deciding whether a label fits
// (slightly generous, so a label judged to fit does fit).
double text_width(std::string_view text, double size);
// The longest start of `text` (ending in "…" when cut) whose text_width at `size` is within `px`.
std::string clip_to_width(std::string_view text, double size, double px);
// `text` broken at spaces into lines within `px`, at most `max_lines` (the last clipped with "…").
std::vector<std::string> wrap_to_width(std::string_view text, double size, double px, size_t max_lines);

}  // namespace mlaplan::render
