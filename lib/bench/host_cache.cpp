#include "mlaplan/bench/host_cache.hpp"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <string>

namespace mlaplan::bench {

namespace {

bool read_word(const std::string& path, std::string& out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> out);
}

// sysfs writes a cache size as "32768K" (also "1M", or a plain byte count): 0 where it is not one.
size_t parse_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 12 || text.size() > digits + 1) return 0;
  const size_t value = std::stoull(text.substr(0, digits));
  if (value > (size_t{1} << 34)) return 0;  // no cache is 16 Gi units: not a size
  if (text.size() == digits) return value;
  switch (text[digits]) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return 0;
  }
}

}  // namespace

size_t sysfs_last_level_cache_bytes(const std::string& cpu_dir) {
  int best_level = 0;
  size_t best = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = cpu_dir + "/cache/index" + std::to_string(i);
    std::string level, type, size;
    if (!read_word(dir + "/level", level)) continue;
    if (!read_word(dir + "/type", type) || type == "Instruction" || !read_word(dir + "/size", size)) continue;
    const int l = (level.size() == 1 && std::isdigit(static_cast<unsigned char>(level[0]))) ? level[0] - '0' : 0;
    const size_t bytes = parse_size(size);
    if (l > best_level && bytes > 0) {
      best_level = l;
      best = bytes;
    }
  }
  return best;
}

size_t host_flush_bytes() {
  const int cpu = ::sched_getcpu();
  size_t llc = cpu >= 0 ? sysfs_last_level_cache_bytes("/sys/devices/system/cpu/cpu" + std::to_string(cpu)) : 0;
  if (llc == 0) {
    const long reported = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    llc = reported > 0 ? static_cast<size_t>(reported) : size_t{32} << 20;
  }
  return 4 * llc;
}

}  // namespace mlaplan::bench
