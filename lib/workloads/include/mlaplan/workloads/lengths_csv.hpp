// Request lengths from a CSV file (`--lengths FILE.csv`): a header naming the two columns
// cached_tokens and new_tokens (in either order), then one request per row. See docs/workloads.md.
#pragma once

#include <string>
#include <vector>

#include "mlaplan/workloads/workload.hpp"

namespace mlaplan::workloads {

// The format:
//   - the header `cached_tokens,new_tokens` (either order, ASCII case-insensitive), exactly these
//     two columns;
//   - one row per request: two whole numbers, cached_tokens >= 0 and new_tokens >= 1, their sum
//     below 2^31;
//   - blank lines and lines starting with `#` are skipped anywhere; spaces around a field are
//     ignored; a field may be "double-quoted"; CRLF line ends and a UTF-8 byte order mark are
//     accepted.
// Every problem is one InputError "path:LINE: column: problem; fix" (LINE counts every line from
// 1), or "path: no requests; add rows of cached_tokens,new_tokens" when there is no row at all.
std::vector<Request> parse_lengths_csv(const std::string& text, const std::string& path);

// Reads the file, then parse_lengths_csv. An unreadable file is an InputError naming the path.
std::vector<Request> read_lengths_csv(const std::string& path);

}  // namespace mlaplan::workloads
