// One wording for malformed JSON in every file mlaplan reads (scenarios, plan tables, model configs).
// A build-only header (detail/, never installed): it needs nlohmann/json.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace mlaplan::io {

// "file:LINE:COL: invalid JSON: <reason>" from the parser's 1-based byte offset into `text` (line and
// column are what editors understand) and its message, less nlohmann's "[json.exception...] ...: " preamble.
std::string json_error_message(const std::string& file, const std::string& text, size_t byte, const std::string& what);
// "file: invalid JSON: <reason>" where the parser gives no position (a number out of range, say).
std::string json_error_message(const std::string& file, const std::string& what);

// Parses `text`, the contents of `file` (a scenario, plan table or model config), as JSON: malformed
// JSON is an InputError worded as above, and so is a key given twice in one object ("file: KEY: key
// given twice in one object; keep one"): nlohmann keeps the last silently, which would hide a typo'd
// edit, and a gate could read a value other than the one its author checked. Ctrl-C is seen inside
// a long parse (Interrupted).
nlohmann::json parse_json_strict(const std::string& text, const std::string& file);

// A value as it appears in a message: its compact JSON text (as dump() writes it), cut to `max_chars`
// with "..." at the end. Unlike dump(), which recurses once per nesting level and overflows the stack
// on a value nested 100,000 deep, it stops writing (and descending) once it has enough.
std::string json_preview(const nlohmann::json& value, size_t max_chars = 40);

}  // namespace mlaplan::io
