#include "mlaplan/io/json_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/profile/json_text.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::io {

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
    out += profile::json_text(v);
    return;
  }
  out += v.is_array() ? '[' : '{';
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (out.size() > limit) return;
    if (it != v.begin()) out += ',';
    if (v.is_object()) out += profile::json_text(nlohmann::json(it.key())) + ':';
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

nlohmann::json parse_json_strict(const std::string& text, const std::string& file) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> keys;  // the keys seen so far in each open object
  std::string duplicate;
  uint64_t events = 0;
  auto cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    // A 256 MiB file takes seconds to parse: Ctrl-C is seen inside it.
    if ((++events & 0xffff) == 0 && profile::stop_requested()) throw Interrupted(fmt::format("interrupted while reading {}", file));
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    json j = json::parse(text, cb);
    if (!duplicate.empty())
      throw InputError(fmt::format("{}: {}: key given twice in one object; keep one", file, duplicate));
    return j;
  } catch (const json::parse_error& e) {
    throw InputError(json_error_message(file, text, e.byte, e.what()));
  } catch (const json::out_of_range& e) {  // a number past double's range, such as 1e309
    throw InputError(json_error_message(file, e.what()));
  }
}

}  // namespace mlaplan::io
