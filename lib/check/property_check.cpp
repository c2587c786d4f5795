#include "mlaplan/check/property_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::check {

namespace {

struct Reporter {
  PropertyReport& report;
  size_t max_messages;
  template <typename... Args>
  void fail(fmt::format_string<Args...> f, Args&&... args) {
    if (report.messages.size() < max_messages) report.messages.push_back(fmt::format(f, std::forward<Args>(args)...));
    ++report.violations;
  }
};

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

}  // namespace

PropertyReport check_properties(const Batch& batch, const PlanTables& t, size_t max_messages) {
  PropertyReport report;
  Reporter r{report, max_messages};
  const uint32_t B = batch.batch_size(), M = batch.max_chunks;
  const int64_t N = batch.buffer_token_size;
  if (t.batch_size != B || t.max_chunks != M || t.buffer_row_offsets.size() != size_t{M} * (B + size_t{1}) ||
      t.cache_offsets.size() != size_t{M} * B || t.buffer_lengths.size() != M) {
    r.fail("tables have the wrong shape: want {} chunks x {} sequences", M, B);
    return report;
  }

  if (B == 0) {  // empty batch: every length is 0 and the single sentinel column is 0
    for (uint32_t c = 0; c < M; ++c) {
      if (t.buffer_lengths[c] != 0) r.fail("chunk {}: empty batch must have buffer_lengths 0, got {}", c, t.buffer_lengths[c]);
      if (t.row_offset(c, 0) != 0) r.fail("chunk {}: empty batch must have buffer_row_offsets 0, got {}", c, t.row_offset(c, 0));
    }
    return report;
  }

  std::vector<int64_t> S(B + 1, 0), L(B, 0);
  for (uint32_t b = 0; b < B; ++b) {
    L[b] = static_cast<int64_t>(batch.padded_length(b));
    S[b + 1] = S[b] + L[b];
  }
  const int64_t E = S[B];

  // One pass, row by row (the tables' memory order). `rows[b]` counts the rows sequence b got in
  // earlier chunks: its cache offset must equal that, and its total must come to L[b].
  std::vector<int64_t> rows(B, 0);
  for (uint32_t c = 0; c < M; ++c) {
    if (profile::stop_requested()) throw Interrupted("interrupted while checking the plan");  // seconds at the memory limit
    const int64_t base = int64_t{c} * N;
    const uint32_t* ro = &t.buffer_row_offsets[size_t{c} * (B + 1)];
    const uint32_t* co = &t.cache_offsets[size_t{c} * B];
    const int64_t want_len = E > base ? std::min(E - base, N) : -1;
    if (t.buffer_lengths[c] != want_len)
      r.fail("chunk {}: buffer_lengths must be min(E - c*N, N) = {} when used, else -1; got {}", c, want_len,
             t.buffer_lengths[c]);
    if (want_len >= 0 && ro[B] != static_cast<uint32_t>(want_len))
      r.fail("chunk {}: the sentinel column ({}) must equal the chunk's length {}", c, ro[B], want_len);
    for (uint32_t b = 0; b <= B; ++b) {
      const int64_t want = clamp64(S[b] - base, 0, N);
      if (ro[b] != want)
        r.fail("chunk {}, sequence {}: buffer_row_offsets must be clamp(S[b] - c*N, 0, N) = {}, got {}", c, b, want, ro[b]);
      if (b > 0 && ro[b] < ro[b - 1])
        r.fail("chunk {}, sequence {}: buffer_row_offsets decreases from {} to {}", c, b, ro[b - 1], ro[b]);
    }
    for (uint32_t b = 0; b < B; ++b) {
      const int64_t want = clamp64(base - S[b], 0, L[b]);
      if (co[b] != want)
        r.fail("chunk {}, sequence {}: cache_offsets must be clamp(c*N - S[b], 0, L[b]) = {}, got {}", c, b, want, co[b]);
      else if (co[b] != rows[b])
        r.fail("chunk {}, sequence {}: cache_offsets {} but earlier chunks gave it {} rows", c, b, co[b], rows[b]);
      rows[b] += int64_t{ro[b + 1]} - int64_t{ro[b]};
    }
  }
  for (uint32_t b = 0; b < B; ++b) {
    if (rows[b] != L[b]) r.fail("sequence {}: gets {} rows across all chunks, its padded length is {}", b, rows[b], L[b]);
  }
  return report;
}

}  // namespace mlaplan::check
