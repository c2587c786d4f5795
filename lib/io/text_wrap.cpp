#include "mlaplan/io/text_wrap.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mlaplan::io {

namespace {

void wrap_one(std::string_view line, size_t width, size_t hang, size_t min_indent, std::string& out) {
  const size_t lead = line.find_first_not_of(' ') == std::string_view::npos ? 0 : line.find_first_not_of(' ');
  const std::string indent(std::max(lead + hang, min_indent), ' ');
  bool first = true;
  while (true) {
    const size_t room = first ? width : (width > indent.size() + 20 ? width - indent.size() : 20);
    if (line.size() <= room) break;
    // The last space within the room that is not part of the line's own indentation.
    size_t cut = line.rfind(' ', room);
    const size_t floor = first ? lead : 0;
    if (cut == std::string_view::npos || cut <= floor) cut = line.find(' ', room);  // a word longer than the room
    if (cut == std::string_view::npos) break;
    out.append(line.substr(0, cut));
    out += '\n';
    out += indent;
    line.remove_prefix(cut);
    line.remove_prefix(std::min(line.find_first_not_of(' '), line.size()));
    first = false;
  }
  out.append(line);
}

}  // namespace

std::string wrap_lines(std::string_view text, size_t width, size_t hang, size_t min_indent) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    wrap_one(text.substr(0, nl), width, hang, min_indent, out);
    if (nl == std::string_view::npos) break;
    out += '\n';
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::string format_rows(uint64_t rows) {
  if (rows >= (1u << 20) && rows % (1u << 20) == 0) return fmt::format("{}M", rows >> 20);
  if (rows >= 1024 && rows % 1024 == 0) return fmt::format("{}K", rows >> 10);
  return fmt::format("{}", rows);
}

}  // namespace mlaplan::io
