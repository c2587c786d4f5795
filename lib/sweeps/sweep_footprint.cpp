// What a sweep holds in memory (sweep_footprint.hpp).
#include "mlaplan/sweeps/sweep_footprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::sweeps {

SweepShape sweep_shape(const SweepGrid& grid, bool gpu) {
  SweepShape s;
  s.costs = grid.costs.size();
  const uint64_t per_model = std::max<size_t>(1, grid.models.size()) * std::max<size_t>(1, grid.tps.size());
  for (const policies::Policy& p : grid.policies) {
    const uint64_t n = grid.buffer_tokens.size() * (p.kind == policies::PolicyKind::max ? grid.max_chunks.size() : 1) * per_model;
    s.settings += n;
    if (p.kind == policies::PolicyKind::max) s.max_settings += n;
  }
  s.threads = gpu ? 1 : std::min<uint64_t>(std::max(1u, std::thread::hardware_concurrency()), std::max<uint64_t>(1, s.settings));
  return s;
}

void SweepFootprint::add(const Batch& b) {
  batches += 1;
  sequences += b.batch_size();
  largest_batch = std::max<uint64_t>(largest_batch, b.batch_size());
}

void require_sweep_fits(const SweepShape& s, const SweepGrid& grid, const SweepFootprint& f, uint64_t limit,
                        const SweepLimitNames& names) {
  // Each term is far below 2^64 for any count that fits in memory at all; the product is capped.
  const long double held =
      static_cast<long double>(f.batches) * (sizeof(Batch) + 8.0L + s.bytes_per_batch()) + 8.0L * static_cast<long double>(f.sequences);
  if (held > static_cast<long double>(limit))
    throw InputError(fmt::format("{}: {} batches x {} settings take {} (the batches and an iteration count per batch and "
                                 "setting), above {}; sweep fewer batches or settings, or raise {}",
                                 names.batches, f.batches, s.settings,
                                 io::format_bytes(held >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(held)), names.limit,
                                 names.raise));
  if (s.max_settings == 0 || grid.max_chunks.empty()) return;
  const uint32_t most_m = *std::max_element(grid.max_chunks.begin(), grid.max_chunks.end());
  const uint64_t tables = table_bytes(f.largest_batch, most_m);
  if (tables > limit / s.threads)
    throw InputError(fmt::format("{}{}{}: batches of up to {} sequences in {} chunks take {} of tables on each of {} planning "
                                 "thread{}, above {}; lower {} to at most {} or raise {}",
                                 names.max_chunks, names.joined, most_m, f.largest_batch, most_m, io::format_bytes(tables), s.threads,
                                 s.threads == 1 ? "" : "s", names.limit, names.max_chunks,
                                 limit / s.threads / table_bytes(f.largest_batch, 1), names.raise));
}

}  // namespace mlaplan::sweeps
