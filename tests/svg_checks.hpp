// Reading an SVG back, for the tests of the pictures (lib/render): SvgWriter writes one element per
// line with attributes always double-quoted, so the drawn elements are read with a few finds; an XML
// parser's verdict where one is installed; clean UTF-8; and text widths in DejaVu Sans.
#pragma once

#include <stdlib.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlaplan::test {

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

inline std::string unescape(std::string_view s) {
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
inline std::vector<Element> drawn_elements(const std::string& svg) {
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

inline size_t count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Advance widths of DejaVu Sans (the picture's first font), in em, for the characters labels use;
// anything else counts as a full em so that an unexpected character cannot pass by being narrow.
inline double dejavu_width(std::string_view text, double size) {
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
inline std::optional<bool> parser_accepts(const std::string& doc) {
  const bool xmllint = std::system("command -v xmllint >/dev/null 2>&1") == 0;
  const bool python = !xmllint && std::system("command -v python3 >/dev/null 2>&1") == 0;
  if (!xmllint && !python) return std::nullopt;
  char dir_template[] = "/tmp/mlaplan_plan_svg_XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) return std::nullopt;
  const std::filesystem::path file = std::filesystem::path(dir) / "picture.svg";
  std::ofstream(file, std::ios::binary) << doc;
  const std::string command = xmllint ? "xmllint --noout '" + file.string() + "' 2>/dev/null"
                                      : "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" +
                                            file.string() + "' 2>/dev/null";
  const bool ok = std::system(command.c_str()) == 0;
  std::filesystem::remove_all(dir);
  return ok;
}

// Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF) with no C0 control byte but
// `allowed`.
inline bool clean_utf8(const std::string& s, std::string_view allowed = "\n") {
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

}  // namespace mlaplan::test
