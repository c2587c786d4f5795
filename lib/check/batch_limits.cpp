#include "mlaplan/check/batch_limits.hpp"

#include <algorithm>

namespace mlaplan::check {

namespace {

std::vector<uint32_t> sorted_unique(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool admits_value(const std::vector<uint32_t>& allowed, uint32_t v) {
  return allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), v);
}

}  // namespace

BatchLimits BatchLimits::of(std::vector<uint32_t> page_sizes, std::vector<uint32_t> max_chunks) {
  return BatchLimits{sorted_unique(std::move(page_sizes)), sorted_unique(std::move(max_chunks))};
}

bool BatchLimits::admits_page_size(uint32_t p) const { return admits_value(page_sizes, p); }
bool BatchLimits::admits_max_chunks(uint32_t m) const { return admits_value(max_chunks, m); }

}  // namespace mlaplan::check
