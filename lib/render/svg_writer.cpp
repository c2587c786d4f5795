#include "mlaplan/render/svg_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mlaplan::render {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid (overlongs,
// surrogates and code points past U+10FFFF included).
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;  // not XML characters either
  return n;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      default: break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      out += kReplacement;
      ++i;
      continue;
    }
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string clip_text(std::string_view text, size_t max_chars) {
  size_t chars = 0, i = 0, cut = std::string_view::npos;
  while (i < text.size()) {
    if (chars == max_chars) break;
    if (max_chars > 0 && chars == max_chars - 1) cut = i;  // where "…" goes if the text runs on
    const size_t n = utf8_length(text, i);
    i += n ? n : 1;  // an invalid byte counts as one character (xml_escape replaces it)
    ++chars;
  }
  if (i >= text.size()) return std::string(text);
  if (max_chars == 0) return {};
  return std::string(text.substr(0, cut)) + "\xE2\x80\xA6";  // U+2026
}

std::string svg_number(double value) {
  if (!std::isfinite(value)) return "0";
  std::string s = fmt::format("{:.2f}", value);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

double text_width(std::string_view text, double size) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    i += n ? n : 1;
    ++chars;
  }
  return static_cast<double>(chars) * size * 0.64;  // DejaVu Sans digits are 0.636 em; most letters less
}

std::string clip_to_width(std::string_view text, double size, double px) {
  if (text_width(text, size) <= px) return std::string(text);
  const double per_char = size * 0.64;
  const auto fit = static_cast<size_t>(std::max(px / per_char, 1.0));
  return clip_text(text, fit);
}

std::vector<std::string> wrap_to_width(std::string_view text, double size, double px, size_t max_lines) {
  std::vector<std::string> lines;
  if (max_lines == 0) return lines;
  std::string line;
  size_t i = 0;
  while (i < text.size()) {
    const size_t space = std::min(text.find(' ', i), text.size());
    const std::string_view word = text.substr(i, space - i);
    i = space + 1;
    const std::string longer = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (line.empty() || text_width(longer, size) <= px) {
      line = longer;
      continue;
    }
    if (lines.size() + 1 == max_lines) {  // the last line: the rest, clipped
      line = longer + (i < text.size() ? " " + std::string(text.substr(i)) : "");
      break;
    }
    lines.push_back(clip_to_width(line, size, px));
    line = std::string(word);
  }
  if (!line.empty()) lines.push_back(clip_to_width(line, size, px));
  return lines;
}

SvgWriter::SvgWriter(double width, double height, std::string_view font_family) : width_(width), height_(height) {
  out_ = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"{2}\">\n",
      svg_number(width), svg_number(height), xml_escape(font_family));
  open_.emplace_back("svg");
}

void SvgWriter::write_open(std::string_view tag, Attrs attrs, bool self_close) {
  out_ += '<';
  out_ += tag;
  for (const auto& [name, value] : attrs) {
    out_ += ' ';
    out_ += name;
    out_ += "=\"";
    out_ += xml_escape(value);
    out_ += '"';
  }
  out_ += self_close ? "/>\n" : ">";
}

void SvgWriter::open(std::string_view tag, Attrs attrs) {
  write_open(tag, attrs, false);
  out_ += '\n';
  open_.emplace_back(tag);
}

void SvgWriter::close() {
  if (open_.size() <= 1) return;  // the <svg> itself closes in finish()
  out_ += "</" + open_.back() + ">\n";
  open_.pop_back();
}

void SvgWriter::element(std::string_view tag, Attrs attrs, std::string_view text) {
  if (text.empty()) {
    write_open(tag, attrs, true);
    return;
  }
  write_open(tag, attrs, false);
  out_ += xml_escape(text);
  out_ += "</";
  out_ += tag;
  out_ += ">\n";
}

void SvgWriter::rect(double x, double y, double w, double h, std::string_view fill, std::string_view title, Attrs extra) {
  out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", svg_number(x), svg_number(y),
                      svg_number(std::max(w, 0.0)), svg_number(std::max(h, 0.0)), xml_escape(fill));
  for (const auto& [name, value] : extra) out_ += fmt::format(" {}=\"{}\"", name, xml_escape(value));
  if (title.empty()) {
    out_ += "/>\n";
  } else {
    out_ += "><title>" + xml_escape(title) + "</title></rect>\n";
  }
}

void SvgWriter::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width, Attrs extra) {
  out_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"", svg_number(x1),
                      svg_number(y1), svg_number(x2), svg_number(y2), xml_escape(stroke), svg_number(width));
  for (const auto& [name, value] : extra) out_ += fmt::format(" {}=\"{}\"", name, xml_escape(value));
  out_ += "/>\n";
}

void SvgWriter::text(double x, double y, std::string_view content, double size, Attrs extra) {
  out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\"", svg_number(x), svg_number(y), svg_number(size));
  for (const auto& [name, value] : extra) out_ += fmt::format(" {}=\"{}\"", name, xml_escape(value));
  out_ += ">" + xml_escape(content) + "</text>\n";
}

void SvgWriter::raw(std::string_view markup) { out_ += markup; }

std::string SvgWriter::finish(bool standalone) {
  while (open_.size() > 1) close();
  std::string doc = standalone ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : "";
  doc += out_;
  doc += "</svg>\n";
  return doc;
}

}  // namespace mlaplan::render
