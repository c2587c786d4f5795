// JSON text of a document that may carry user strings (file names, scenario names, commands, model
// names). Here, in the lowest layer that writes JSON, so every writer above (check, io, bench,
// policies, sweeps) shares it. A build-only header (detail/, never installed): it needs nlohmann/json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mlaplan::profile {

// j.dump(indent), except that a byte that is not valid UTF-8 (a Latin-1 file name, say) is written
// as U+FFFD: plain dump() throws type_error.316 on it and turns a finished command into an internal
// error. Valid text is written byte for byte as dump() writes it.
template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace mlaplan::profile
