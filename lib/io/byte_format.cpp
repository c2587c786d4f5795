#include "mlaplan/io/byte_format.hpp"

#include <fmt/format.h>

namespace mlaplan::io {

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int k = 1;
  while (k < 6 && bytes >= (uint64_t{1} << (10 * (k + 1)))) ++k;
  for (;; ++k) {
    const unsigned __int128 unit = static_cast<unsigned __int128>(1) << (10 * k);
    // The fewest decimals (2, 1, 0) that keep three significant digits below 1000.
    for (int decimals = 2; decimals >= 0; --decimals) {
      const unsigned __int128 scale = decimals == 2 ? 100 : decimals == 1 ? 10 : 1;
      const unsigned __int128 scaled = static_cast<unsigned __int128>(bytes) * scale;
      uint64_t n = static_cast<uint64_t>(scaled / unit);
      const unsigned __int128 rem = scaled % unit;
      if (2 * rem > unit || (2 * rem == unit && (n & 1))) ++n;  // round half to even
      if (n >= 1000) continue;
      if (decimals == 2) return fmt::format("{}.{:02} {}", n / 100, n % 100, kUnits[k]);
      if (decimals == 1) return fmt::format("{}.{} {}", n / 10, n % 10, kUnits[k]);
      return fmt::format("{} {}", n, kUnits[k]);
    }
    if (k == 6) return fmt::format("{} {}", bytes >> 60, kUnits[6]);  // unreachable: 2^64 B is 16 EiB
  }
}

}  // namespace mlaplan::io
