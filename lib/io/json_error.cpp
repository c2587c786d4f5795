#include "mlaplan/json_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace mlaplan {

namespace {

// nlohmann's message less its "[json.exception.parse_error.101] parse error at ...: " preamble.
std::string reason_of(const std::string& what) {
  const auto p = what.find("] ");
  std::string reason = p == std::string::npos ? what : what.substr(p + 2);
  if (auto q = reason.find(": "); q != std::string::npos && reason.compare(0, 11, "parse error") == 0) reason = reason.substr(q + 2);
  return reason;
}

// Appends `v`'s compact JSON text to `out` until `out` holds more than `limit` characters. Every
// level writes at least one character, so the recursion is at most `limit` deep.
void preview_into(const nlohmann::json& v, std::string& out, size_t limit) {
  if (out.size() > limit) return;
  if (!v.is_structured()) {
    out += v.dump();
    return;
  }
  out += v.is_array() ? '[' : '{';
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (out.size() > limit) return;
    if (it != v.begin()) out += ',';
    if (v.is_object()) out += nlohmann::json(it.key()).dump() + ':';
    preview_into(it.value(), out, limit);
  }
  out += v.is_array() ? ']' : '}';
}

}  // namespace

std::string json_preview(const nlohmann::json& value, size_t max_chars) {
  std::string s;
  preview_into(value, s, max_chars);
  if (s.size() > max_chars) s = s.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return s;
}

std::string json_error_message(const std::string& file, const std::string& what) {
  return fmt::format("{}: invalid JSON: {}", file, reason_of(what));
}

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
  return fmt::format("{}:{}:{}: invalid JSON: {}", file, line, col, reason_of(what));
}

}  // namespace mlaplan
