// Byte counts for people: the buffer memory of run and sweep.
#pragma once

#include <cstdint>
#include <string>

namespace mlaplan::io {

// Binary units, 3 significant digits: "4.00 GiB", "64.0 KiB", "1.12 KiB", "512 B" (ties round to
// even, like printf; a value that would round to 1000 or more moves to the next unit: "0.98 MiB").
std::string format_bytes(uint64_t bytes);

}  // namespace mlaplan::io
