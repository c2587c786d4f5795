// MAX's chunks counted in cost terms: cache and new tokens streamed together, per chunk one unmasked
// launch and one bottom-right causal launch for the queries inside the chunk's keys, all merged
// (python/mlaplan/prefill/schedule.py, _max_steps).
#include <cstdint>

#include "max_segment.hpp"
#include "mlaplan/explore/policy_cost.hpp"

namespace mlaplan::explore {

using cost::Features;
using cost::Geometry;
using cost::Launch;
using cost::Term;
using detail::max_segment;
using detail::MaxSegment;

namespace {

// Max's chunk: segments (sequence, first position streamed, rows, first buffer row) in buffer order.
// Each launch's sequences are its segments in buffer order, with a sequence of keys and no queries
// wherever the buffer's rows skip ahead (past a segment's padding rows, or a segment the launch
// does not hold), as the executor lays them out.
class MaxChunk {
 public:
  MaxChunk(const Batch& b, const Geometry& g) : b_(b), full_{Launch(g)}, causal_{Launch(g)} {}
  void add(uint32_t seq, uint64_t start, uint64_t rows, uint64_t at) {
    const MaxSegment s = max_segment(b_, seq, start, rows);
    if (!s.attended) return;
    if (s.end <= s.cached) {
      full_.add(s.total - s.cached, s.end - start, false, at);
      return;
    }
    causal_.add(s.end - s.first, s.end - start, true, at);
    if (s.end < s.total) full_.add(s.total - s.end, s.end - start, false, at);
  }
  void finish(Features& f) const {
    f[Term::merged_query] += static_cast<double>(full_.launch.queries() + causal_.launch.queries());
    full_.launch.finish(f);
    causal_.launch.finish(f);
  }

 private:
  struct Part {
    Launch launch;
    bool any = false;
    uint64_t end = 0;  // the buffer row after the last segment's keys
    void add(uint64_t queries, uint64_t keys, bool causal, uint64_t at) {
      if (any && at > end) launch.add_gap();
      launch.add(queries, keys, causal);
      end = at + keys;
      any = true;
    }
  };
  const Batch& b_;
  Part full_, causal_;
};

}  // namespace

Features max_features(const Batch& b, const MaxTablesView& t, const Geometry& g) {
  Features f;
  f[Term::batch] = 1;
  const uint32_t B = b.batch_size();
  for (uint32_t c = 0; c < t.chunks; ++c) {
    if (t.lengths[c] <= 0) continue;
    f[Term::iteration] += 1;
    f[Term::row] += t.lengths[c];
    MaxChunk chunk(b, g);
    const uint32_t* rows = t.row_offsets + size_t{c} * (B + size_t{1});
    const uint32_t* cache = t.cache_offsets + size_t{c} * B;
    for (uint32_t s = 0; s < B; ++s)
      if (rows[s + 1] > rows[s]) chunk.add(s, cache[s], rows[s + 1] - rows[s], rows[s]);
    chunk.finish(f);
  }
  return f;
}

Features detail::max_unbounded_features(const Batch& b, const Geometry& g) {
  Features f;
  f[Term::batch] = 1;
  MaxChunk chunk(b, g);
  uint64_t at = 0;
  for (uint32_t s = 0; s < b.batch_size(); ++s) {
    const uint64_t len = b.padded_length(s);
    f[Term::row] += static_cast<double>(len);
    if (len) chunk.add(s, 0, len, at);
    at += len;
  }
  f[Term::iteration] = f[Term::row] > 0 ? 1 : 0;
  chunk.finish(f);
  return f;
}

}  // namespace mlaplan::explore
