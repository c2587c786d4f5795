// Reading the files mlaplan parses (scenarios, plan tables, lengths CSVs, model configs) with one set
// of refusals: a folder, an unreadable path, and anything past a size cap, so an endless device such
// as /dev/zero or a wrong multi-gigabyte file fails at once instead of filling memory.
#pragma once

#include <cstddef>
#include <string>

namespace mlaplan::io {

inline constexpr size_t kMaxInputBytes = size_t{256} << 20;

// The whole file. Throws InputError "PATH: problem; give WHAT" for a folder, a path that cannot be
// opened or read, or a file of more than `limit` bytes.
std::string read_input_file(const std::string& path, const std::string& what, size_t limit = kMaxInputBytes);

}  // namespace mlaplan::io
