#include "mlaplan/bench/size_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "mlaplan/errors.hpp"

namespace mlaplan::bench {

namespace {

constexpr uint64_t kMaxSize = std::numeric_limits<uint32_t>::max() - 1;  // B + 1 must fit in 32 bits

uint64_t parse_number(const std::string& text, const std::string& item) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 10)
    throw InputError(fmt::format("--sizes: '{}' in '{}' is not a whole number; write e.g. 1,16,128 or 1:1048576:x4", text, item));
  const uint64_t v = std::stoull(text);
  if (v < 1 || v > kMaxSize) throw InputError(fmt::format("--sizes: {} is out of range; batch sizes go from 1 to {}", v, kMaxSize));
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

std::vector<uint32_t> parse_sizes(const std::string& spec) {
  std::vector<uint32_t> sizes;
  auto add = [&sizes](uint64_t v) {
    if (std::find(sizes.begin(), sizes.end(), v) == sizes.end()) sizes.push_back(static_cast<uint32_t>(v));
  };
  for (const std::string& item : split(spec, ',')) {
    const auto parts = split(item, ':');
    if (parts.size() == 1) {
      add(parse_number(item, item));
      continue;
    }
    if (parts.size() != 3 || parts[2].size() < 2 || (parts[2][0] != 'x' && parts[2][0] != '+'))
      throw InputError(fmt::format("--sizes: '{}' is not a range; write FIRST:LAST:xFACTOR or FIRST:LAST:+STEP, e.g. 1:1048576:x4", item));
    const uint64_t first = parse_number(parts[0], item), last = parse_number(parts[1], item);
    const uint64_t step = parse_number(parts[2].substr(1), item);
    if (last < first) throw InputError(fmt::format("--sizes: '{}' ends below its start; write FIRST:LAST with FIRST <= LAST", item));
    if (parts[2][0] == 'x' && step < 2) throw InputError(fmt::format("--sizes: '{}': the factor must be at least 2", item));
    for (uint64_t v = first; v <= last; v = parts[2][0] == 'x' ? v * step : v + step) {
      add(v);
      if (sizes.size() > 10000) throw InputError(fmt::format("--sizes: '{}' gives more than 10000 sizes; use a larger step", item));
    }
  }
  if (sizes.empty()) throw InputError("--sizes: no sizes given; write e.g. 1,16,128 or 1:1048576:x4");
  return sizes;
}

}  // namespace mlaplan::bench
