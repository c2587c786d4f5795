// Batch sizes for `bench --sizes`: a comma list of values and ranges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlaplan::bench {

// "1,16,128", "1:1048576:x4" (1, 4, 16, ... 1048576: times 4), "64:1024:+64" (plus 64), or a mix
// such as "1,1024:4096:x2". Duplicates are dropped, order is kept. Throws InputError naming `option`.
// Values go from 1 to `max_value` (0: the largest batch size, 2^32 - 2).
std::vector<uint32_t> parse_sizes(const std::string& spec, const std::string& option = "--sizes", uint64_t max_value = 0);

}  // namespace mlaplan::bench
