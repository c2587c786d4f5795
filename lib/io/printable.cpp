#include "mlaplan/printable.hpp"

#include <fmt/format.h>

namespace mlaplan {

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

std::string printable_line(const std::string& text, size_t max_bytes) {
  std::string out = printable(text);
  if (out.size() > max_bytes) out = fmt::format("{}... ({} more bytes)", out.substr(0, max_bytes), out.size() - max_bytes);
  return out;
}

}  // namespace mlaplan
