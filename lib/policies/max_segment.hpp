// Pieces of the cost terms' walks that policy_cost.cpp (the loops), max_cost.cpp (MAX's chunks) and
// query_merges.cpp (merges per query row) share. Private to policies.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mlaplan/batch.hpp"
#include "mlaplan/cost/features.hpp"
#include "mlaplan/policies/policy_cost.hpp"

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
