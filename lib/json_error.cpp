#include "mlaplan/json_error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mlaplan {

std::string json_error_message(const std::string& file, const std::string& text, size_t byte, const std::string& what) {
  const size_t pos = std::min<size_t>(byte ? byte - 1 : 0, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  std::string reason = what;
  if (auto p = reason.find(": "); p != std::string::npos) reason = reason.substr(p + 2);
  return fmt::format("{}:{}:{}: invalid JSON: {}", file, line, col, reason);
}

}  // namespace mlaplan
