// MAX's chunks counted in cost terms: cache and new tokens streamed together, per chunk one unmasked
// launch and one bottom-right causal launch for the queries inside the chunk's keys, all merged
// (python/mlaplan/prefill/schedule.py, _max_steps).
#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "max_segment.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

using cost::Features;
using cost::Geometry;
using cost::Launch;
using cost::Clock;
using cost::StepCounts;
using cost::Term;
using detail::eager_layer;
using detail::max_segment;
using detail::MaxSegment;

namespace {

// Max's chunk: segments (sequence, first position streamed, rows, first buffer row) in buffer order.
// Each launch's sequences are its segments in buffer order, with a sequence of keys and no queries
// wherever the buffer's rows skip ahead (past a segment's padding rows, or a segment the launch
// does not hold), as the executor lays them out.
class MaxChunk {
 public:
  MaxChunk(const Batch& b, const Geometry& g) : b_(b), g_(g), full_{Launch(g)}, causal_{Launch(g)} {}
  void add(uint32_t seq, uint64_t start, uint64_t rows, uint64_t at) {
    const MaxSegment s = max_segment(b_, seq, start, rows);
    if (!s.attended) return;
    const uint64_t q0 = b_.input_row_offsets[seq];  // the query row of position s.cached
    if (s.end <= s.cached) {
      full_.add(s.total - s.cached, s.end - start, false, at, q0);
      return;
    }
    causal_.add(s.end - s.first, s.end - start, true, at, q0 + s.first - s.cached);
    if (s.end < s.total) full_.add(s.total - s.end, s.end - start, false, at, q0 + s.end - s.cached);
  }
  void finish(Features& f) const {
    f[Term::merged_query] += static_cast<double>(full_.launch.queries() + causal_.launch.queries());
    full_.launch.finish(f);
    causal_.launch.finish(f);
  }
  // Eager: the chunk's step, `rows` gathered, as the executor runs it: the unmasked launch, then the
  // causal one, each with its query rows gathered first where they are not one run, each merged.
  void finish(Features& f, double rows, const EagerTime& e, Clock& clock) const {
    f[Term::merged_query] += static_cast<double>(full_.launch.queries() + causal_.launch.queries());
    Features one[2];
    full_.launch.finish(f, 1, &one[0]);
    causal_.launch.finish(f, 1, &one[1]);
    StepCounts s;
    s.gather = true;
    s.rows = rows;
    s.small_rows = cost::small_gemm(g_, rows);
    const Part* parts[2] = {&full_, &causal_};
    for (int i = 0; i < 2; ++i) {
      if (parts[i]->launch.queries() == 0) continue;
      s.attention[i] = &one[i];
      s.query_gather[i] = parts[i]->scattered;
      s.merged[i] = static_cast<double>(parts[i]->launch.queries());
    }
    s.overhead_us = e.coefficient(Term::iteration);
    clock.then(cost::eager_step(e.coefficients, e.host, s));
  }

 private:
  struct Part {
    Launch launch;
    bool any = false;
    uint64_t end = 0;  // the buffer row after the last segment's keys
    uint64_t next_query = 0;  // the query row after the last segment's
    bool scattered = false;   // its query rows are not one run: the executor gathers them
    void add(uint64_t queries, uint64_t keys, bool causal, uint64_t at, uint64_t query_row) {
      if (any && at > end) launch.add_gap();
      if (any && query_row != next_query) scattered = true;
      launch.add(queries, keys, causal);
      end = at + keys;
      next_query = query_row + queries;
      any = true;
    }
  };
  const Batch& b_;
  const Geometry& g_;
  Part full_, causal_;
};

// The output's "no keys" state filled, then the chunks.
Clock with_fill(const EagerTime& e, const Clock& chunks) {
  Clock c = cost::eager_fills(e.host, 1);
  c.then(chunks);
  return c;
}

}  // namespace

namespace {

// Max's terms over its chunks as `chunks` gives them (max_chunks_of, max_chunks_closed).
// `sink`, where given, gets each chunk's terms (graph timing).
template <typename Chunks>
Features priced_max(const Batch& b, const Geometry& g, EagerTime* eager, Chunks&& chunks, const ChunkSink* sink = nullptr) {
  Features f;
  f[Term::batch] = 1;
  Clock loop;  // eager: the chunks'
  std::optional<MaxChunk> chunk;
  chunk.emplace(b, g);
  chunks([&](uint32_t s, uint64_t start, uint64_t rows, uint64_t at) { chunk->add(s, start, rows, at); },
         [&](uint64_t length) {
           f[Term::iteration] += 1;
           f[Term::row] += static_cast<double>(length);
           cost::add_small_gemm(f, g, static_cast<double>(length));
           if (eager) {
             chunk->finish(f, static_cast<double>(length), *eager, loop);
           } else if (sink) {
             Features one;
             one[Term::iteration] = 1;
             one[Term::row] = static_cast<double>(length);
             cost::add_small_gemm(one, g, static_cast<double>(length));
             chunk->finish(one);
             chunk->finish(f);
             (*sink)(one, 1);
           } else {
             chunk->finish(f);
           }
           chunk.emplace(b, g);
         });
  if (eager) eager_layer(*eager, f, with_fill(*eager, loop));
  return f;
}

}  // namespace

Features max_features(const Batch& b, const MaxTablesView& t, const Geometry& g, EagerTime* eager) {
  return priced_max(b, g, eager, [&](auto&& segment, auto&& done) { detail::max_chunks_of(b, t, segment, done); });
}

Features max_features_by_chunk(const Batch& b, const MaxTablesView& t, const Geometry& g, const ChunkSink& sink) {
  return priced_max(
      b, g, nullptr, [&](auto&& segment, auto&& done) { detail::max_chunks_of(b, t, segment, done); }, &sink);
}

void detail::require_max_walk(const Batch& b) {
  const PlanShape shape = require_feasible(b);  // InfeasibleBatch past max_chunks, as the planners
  if (shape.chunks_used > kMaxWalkChunks)
    throw InputError(fmt::format("max: the batch's {} rows (padded to pages of {}) in a buffer of {} rows need {} chunks, "
                                 "more than the {} that are priced; raise buffer_token_size",
                                 shape.padded_tokens, b.page_size, b.buffer_token_size, shape.chunks_used, kMaxWalkChunks));
}

Features max_features(const Batch& b, const Geometry& g, EagerTime* eager) {
  detail::require_max_walk(b);
  return priced_max(b, g, eager, [&](auto&& segment, auto&& done) { detail::max_chunks_closed(b, segment, done); });
}

Features detail::max_unbounded_features(const Batch& b, const Geometry& g, EagerTime* eager) {
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
  cost::add_small_gemm(f, g, f[Term::row]);  // the one chunk's
  Clock loop;
  if (eager && f[Term::row] > 0) chunk.finish(f, f[Term::row], *eager, loop);
  else chunk.finish(f);
  if (eager) eager_layer(*eager, f, with_fill(*eager, loop));
  return f;
}

}  // namespace mlaplan::policies
