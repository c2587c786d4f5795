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

std::string shorten_path(std::string_view path, size_t width) {
  if (path.size() <= width) return std::string(path);
  constexpr std::string_view kGap = "...";
  const size_t first = path.find('/', path.front() == '/' ? 1 : 0);
  const std::string_view head = first == std::string_view::npos ? std::string_view() : path.substr(0, first + 1);
  size_t tail = path.rfind('/');  // the tail, path[tail..], starts at a '/' past the head
  if (tail != std::string_view::npos && tail >= head.size()) {
    while (tail > head.size()) {
      const size_t before = path.rfind('/', tail - 1);
      if (before == std::string_view::npos || before < head.size() ||
          head.size() + kGap.size() + (path.size() - before) > width)
        break;
      tail = before;
    }
    if (head.size() + kGap.size() + (path.size() - tail) <= width)
      return fmt::format("{}{}{}", head, kGap, path.substr(tail));
  }
  // One name too long: its start and its end, each cut at a UTF-8 character's first byte.
  auto starts_char = [&](size_t i) { return i >= path.size() || (static_cast<unsigned char>(path[i]) & 0xC0) != 0x80; };
  size_t keep_start = width > kGap.size() ? (width - kGap.size()) / 2 : 0;
  size_t end_from = path.size() - (width > kGap.size() ? width - kGap.size() - keep_start : 0);
  while (keep_start > 0 && !starts_char(keep_start)) --keep_start;
  while (!starts_char(end_from)) ++end_from;
  return fmt::format("{}{}{}", path.substr(0, keep_start), kGap, path.substr(end_from));
}

std::string format_rows(uint64_t rows) {
  if (rows >= (1u << 20) && rows % (1u << 20) == 0) return fmt::format("{}M", rows >> 20);
  if (rows >= 1024 && rows % 1024 == 0) return fmt::format("{}K", rows >> 10);
  return fmt::format("{}", rows);
}

}  // namespace mlaplan::io
