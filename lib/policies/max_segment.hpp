// Pieces of the cost terms' walks that policy_cost.cpp (the loops), max_cost.cpp (MAX's chunks) and
// query_merges.cpp (merges per query row) share. Private to policies.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/features.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "stop_poll.hpp"

namespace mlaplan::policies::detail {

inline uint64_t new_tokens(const Batch& b) { return uint64_t{b.input_row_offsets.back()} - b.input_row_offsets.front(); }

// A max chunk's segment of a sequence (its positions start .. start + rows - 1, padding past the end):
// the keys that are real tokens end at `end`, and the queries at positions first .. total - 1 attend
// them (a position p sees keys at positions <= p), none where `attended` is false. MaxChunk prices the
// launches and max_query_merges counts the merges from this one definition.
struct MaxSegment {
  uint64_t cached, total, end, first;
  bool attended;
};
inline MaxSegment max_segment(const Batch& b, uint32_t seq, uint64_t start, uint64_t rows) {
  MaxSegment s;
  s.cached = b.cache_lengths[seq];
  s.total = s.cached + b.input_length(seq);
  s.end = std::min(start + rows, s.total);
  s.first = std::max(s.cached, start);  // queries before `start` see none of these keys
  s.attended = s.end > start && s.total > s.cached;
  return s;
}

// Max's chunks with rows, in order, each as its segments in buffer order, segment(sequence, first
// position streamed, rows, first buffer row), then done(its rows). From a plan's tables:
template <typename Segment, typename Done>
void max_chunks_of(const Batch& b, const MaxTablesView& t, Segment&& segment, Done&& done) {
  const uint32_t B = b.batch_size();
  StopPoll poll;
  for (uint32_t c = 0; c < t.chunks; ++c) {
    poll(B + uint64_t{1});
    if (t.lengths[c] <= 0) continue;
    const uint32_t* rows = t.row_offsets + size_t{c} * (B + size_t{1});
    const uint32_t* cache = t.cache_offsets + size_t{c} * B;
    for (uint32_t s = 0; s < B; ++s)
      if (rows[s + 1] > rows[s]) segment(s, cache[s], rows[s + 1] - rows[s], rows[s]);
    done(static_cast<uint64_t>(t.lengths[c]));
  }
}

// ... or from the closed form the fast planner writes them by, without tables (a batch of 2^31
// tokens at a buffer of one row asked for 16 GiB of them): chunk c holds rows [cN, cN + N) of the
// sequences' padded streams laid end to end. O(chunks + B).
template <typename Segment, typename Done>
void max_chunks_closed(const Batch& b, Segment&& segment, Done&& done) {
  const uint64_t N = b.buffer_token_size, B = b.batch_size();
  uint64_t end = 0;  // of every stream
  for (uint32_t s = 0; s < B; ++s) end += b.padded_length(s);
  StopPoll poll;
  uint32_t first = 0;      // the first sequence whose stream ends past the chunk's first row
  uint64_t first_at = 0;   // where its stream starts
  for (uint64_t lo = 0; lo < end; lo += N) {
    const uint64_t hi = std::min(lo + N, end);
    uint64_t at = first_at;
    for (uint32_t s = first; s < B && at < hi; ++s) {
      poll();
      const uint64_t len = b.padded_length(s);
      if (len > 0 && at + len > lo) {
        const uint64_t from = std::max(at, lo);
        segment(s, from - at, std::min(at + len, hi) - from, from - lo);
      }
      at += len;
    }
    while (first < B && first_at + b.padded_length(first) <= hi) first_at += b.padded_length(first++);
    poll();
    done(hi - lo);
  }
}

// Refuses a batch whose closed-form chunks are not walked: past its max_chunks (InfeasibleBatch, as
// the planners) or more than kMaxWalkChunks of them (InputError naming buffer_token_size).
void require_max_walk(const Batch& b);

// Eager time: the layer's clock, per_batch_us on the device before its first launch (the fixed
// launches every batch pays), then its steps.
inline void eager_layer(EagerTime& e, const cost::Features& f, const cost::Clock& steps) {
  cost::Clock c;
  c.dev = c.busy = e.coefficient(cost::Term::batch) * f[cost::Term::batch];
  c.then(steps);
  e.clock = c;
}

// Max's terms with one chunk holding every sequence's padded stream from position 0 and no cap on
// chunks (max_cost.cpp): unbounded_features' for max.
cost::Features max_unbounded_features(const Batch& b, const cost::Geometry& g, EagerTime* eager);

}  // namespace mlaplan::policies::detail
