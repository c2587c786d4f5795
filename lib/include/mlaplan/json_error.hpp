// One wording for malformed JSON in every file mlaplan reads (scenarios, plan tables, model configs).
#pragma once

#include <cstddef>
#include <string>

namespace mlaplan {

// "file:LINE:COL: invalid JSON: <reason>" from the parser's 1-based byte offset into `text` (line and
// column are what editors understand) and its message, less nlohmann's "[json.exception...] ...: " preamble.
std::string json_error_message(const std::string& file, const std::string& text, size_t byte, const std::string& what);

}  // namespace mlaplan
