#include "mlaplan/fast_cpu_planner.hpp"

#include <algorithm>
#include <cstring>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan {

void plan_fast_cpu_into(const Batch& batch, PlanTablesView out, std::vector<uint32_t>& starts, const std::atomic<bool>* stop) {
  require_feasible(batch);
  const uint32_t B = batch.batch_size();
  const uint32_t M = batch.max_chunks;
  const uint64_t N = batch.buffer_token_size;
  const size_t row = size_t{B} + 1;

  if (B == 0) {  // the seed's empty-batch kernel: lengths 0, the other tables zeroed
    std::fill_n(out.buffer_row_offsets, M, 0u);
    std::fill_n(out.buffer_lengths, M, 0);
    return;
  }

  // S[b] for b in 0..B (S[B] = E, the sentinel column). validate_batch guarantees E < 2^32.
  starts.resize(row);
  uint32_t s = 0;
  for (uint32_t b = 0; b < B; ++b) {
    starts[b] = s;
    s += static_cast<uint32_t>(batch.padded_length(b));
  }
  starts[B] = s;
  const uint64_t E = s;
  const uint32_t* S = starts.data();

  // S is non-decreasing, so each clamp is a constant prefix, a middle band and a constant suffix:
  // find the band by binary search and fill the rest at memset speed.
  for (uint32_t c = 0; c < M; ++c) {
    if (stop && stop->load(std::memory_order_relaxed)) throw Interrupted("interrupted while planning");
    const uint64_t lo = uint64_t{c} * N;  // chunk c holds padded rows [lo, lo + N)
    const uint64_t hi = lo + N;
    uint32_t* ro = out.buffer_row_offsets + size_t{c} * row;
    uint32_t* co = out.cache_offsets + size_t{c} * B;

    // Past the end (lo >= E) every row is the same: offsets 0, every sequence consumed (L[b]), length
    // -1. A batch using few of many chunks copies the first such row instead of computing each.
    if (c > 0 && lo - N >= E) {
      std::memcpy(ro, ro - row, row * sizeof(uint32_t));
      std::memcpy(co, co - B, size_t{B} * sizeof(uint32_t));
      out.buffer_lengths[c] = -1;
      continue;
    }

    // buffer_row_offsets[c][b] = clamp(S[b] - lo, 0, N) over b = 0..B.
    const size_t zero_end = std::upper_bound(S, S + row, lo, [](uint64_t v, uint32_t x) { return v < x; }) - S;
    const size_t band_end = std::lower_bound(S + zero_end, S + row, hi, [](uint32_t x, uint64_t v) { return x < v; }) - S;
    std::fill(ro, ro + zero_end, 0u);
    for (size_t b = zero_end; b < band_end; ++b) ro[b] = static_cast<uint32_t>(S[b] - lo);
    std::fill(ro + band_end, ro + row, static_cast<uint32_t>(N));

    // cache_offsets[c][b] = clamp(lo - S[b], 0, L[b]) with L[b] = S[b+1] - S[b]: sequences that end
    // by lo are fully consumed, those starting at or after lo untouched, at most one straddles lo.
    const size_t done_end = std::upper_bound(S + 1, S + row, lo, [](uint64_t v, uint32_t x) { return v < x; }) - (S + 1);
    for (size_t b = 0; b < done_end; ++b) co[b] = S[b + 1] - S[b];
    size_t rest = done_end;
    if (rest < B && S[rest] < lo) {  // the straddling sequence
      co[rest] = static_cast<uint32_t>(lo - S[rest]);
      ++rest;
    }
    std::fill(co + rest, co + B, 0u);

    out.buffer_lengths[c] = E > lo ? static_cast<int32_t>(std::min<uint64_t>(E - lo, N)) : -1;
  }
}

PlanTables plan_fast_cpu(const Batch& batch, const std::atomic<bool>* stop) {
  require_feasible(batch);  // before allocating tables for a batch that is refused anyway
  PlanTables t(batch.batch_size(), batch.max_chunks);
  std::vector<uint32_t> starts;
  plan_fast_cpu_into(batch, {t.buffer_row_offsets.data(), t.cache_offsets.data(), t.buffer_lengths.data()}, starts, stop);
  return t;
}

}  // namespace mlaplan
