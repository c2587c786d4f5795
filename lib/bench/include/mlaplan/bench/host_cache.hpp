// The host's last-level cache, which a cold CPU sample evicts first.
#pragma once

#include <cstddef>
#include <string>

namespace mlaplan::bench {

// The size in bytes of the highest-level data or unified cache that sysfs lists for one CPU
// (`cpu_dir`: /sys/devices/system/cpu/cpuN); 0 where it lists none or cannot be read.
size_t sysfs_last_level_cache_bytes(const std::string& cpu_dir);

// What a cold sample overwrites to evict the last-level cache of the CPU this thread runs on: four
// times its size as sysfs gives it, else as sysconf does, else 32 MiB. sysfs first: a guest's sysconf
// can report the whole socket's L3 (384 MiB on an AMD EPYC guest whose core reads through a 32 MiB
// slice), which made each cold sample write 1.5 GiB where 128 MiB evicts the core's cache.
size_t host_flush_bytes();

}  // namespace mlaplan::bench
