#include "mlaplan/bench/size_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "mlaplan/errors.hpp"

namespace mlaplan::bench {

namespace {

constexpr uint64_t kMaxSize = std::numeric_limits<uint32_t>::max() - 1;  // B + 1 must fit in 32 bits

uint64_t parse_number(const std::string& text, const std::string& item, const std::string& option, uint64_t max_value) {
  if (text.empty())
    throw InputError(fmt::format("{}: '{}' has an empty part; write FIRST:LAST:xFACTOR or FIRST:LAST:+STEP, e.g. 1:1048576:x4",
                                 option, item));
  if (text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(fmt::format("{}: '{}' in '{}' is not a whole number; write e.g. 1,16,128 or 1:1048576:x4", option, text, item));
  // All digits: a value past max_value (however many digits) is out of range, not "not a number".
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > max_value)
    throw InputError(fmt::format("{}: {} is out of range; values go from 1 to {}", option, text, max_value));
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::vector<uint32_t> parse_sizes(const std::string& spec, const std::string& option, uint64_t max_value) {
  if (max_value == 0 || max_value > kMaxSize) max_value = kMaxSize;
  std::vector<uint32_t> sizes;
  auto add = [&sizes](uint64_t v) {
    if (std::find(sizes.begin(), sizes.end(), v) == sizes.end()) sizes.push_back(static_cast<uint32_t>(v));
  };
  for (const std::string& item : split(spec, ',')) {
    if (spec.empty()) throw InputError(fmt::format("{}: no values given; write e.g. 1,16,128 or 1:1048576:x4", option));
    if (item.empty())
      throw InputError(fmt::format("{}: '{}' has an empty item (two commas in a row, or one at an end); write e.g. "
                                   "1,16,128 or 1:1048576:x4",
                                   option, spec));
    const auto parts = split(item, ':');
    if (parts.size() == 1) {
      add(parse_number(item, item, option, max_value));
      continue;
    }
    if (parts.size() != 3 || parts[2].size() < 2 || (parts[2][0] != 'x' && parts[2][0] != '+'))
      throw InputError(fmt::format("{}: '{}' is not a range; write FIRST:LAST:xFACTOR or FIRST:LAST:+STEP, e.g. 1:1048576:x4", option, item));
    const uint64_t first = parse_number(parts[0], item, option, max_value), last = parse_number(parts[1], item, option, max_value);
    const uint64_t step = parse_number(parts[2].substr(1), item, option, max_value);
    if (last < first) throw InputError(fmt::format("{}: '{}' ends below its start; write FIRST:LAST with FIRST <= LAST", option, item));
    if (parts[2][0] == 'x' && step < 2) throw InputError(fmt::format("{}: '{}': the factor must be at least 2", option, item));
    for (uint64_t v = first; v <= last; v = parts[2][0] == 'x' ? v * step : v + step) {
      add(v);
      if (sizes.size() > 10000) throw InputError(fmt::format("{}: '{}' gives more than 10000 values; use a larger step", option, item));
    }
  }
  if (sizes.empty()) throw InputError(fmt::format("{}: no values given; write e.g. 1,16,128 or 1:1048576:x4", option));
  return sizes;
}

}  // namespace mlaplan::bench
