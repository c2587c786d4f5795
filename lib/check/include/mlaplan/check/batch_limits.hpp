// The page sizes and max_chunks a planner can take. Most planners take any; one built for fixed
// values (MAX's kernel makes both compile-time) is checked only on batches it admits: fuzzing draws
// them, shrinking keeps to them, and verify skips scenarios outside them.
#pragma once

#include <cstdint>
#include <vector>

#include "mlaplan/batch.hpp"

namespace mlaplan::check {

struct BatchLimits {
  std::vector<uint32_t> page_sizes;  // sorted, unique; empty means any
  std::vector<uint32_t> max_chunks;  // likewise

  // Sorts and deduplicates both lists.
  static BatchLimits of(std::vector<uint32_t> page_sizes, std::vector<uint32_t> max_chunks);

  bool any() const { return page_sizes.empty() && max_chunks.empty(); }
  bool admits_page_size(uint32_t p) const;
  bool admits_max_chunks(uint32_t m) const;
  bool admits(const Batch& b) const { return admits_page_size(b.page_size) && admits_max_chunks(b.max_chunks); }
};

}  // namespace mlaplan::check
