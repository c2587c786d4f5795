// Each engine's policy, as the walks of policy_walk.hpp see it: the tables of `run` and the counters
// of `sweep`.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

namespace {

using namespace detail;

PolicyOutcome max_outcome(const Batch& batch) {
  const PlanShape shape = plan_shape(batch);
  PolicyOutcome o;
  o.payload_tokens = shape.input_tokens;
  o.streamed_rows = shape.padded_tokens;
  o.chunks = shape.feasible ? shape.chunks_used : shape.min_max_chunks;
  o.largest_chunk = std::min<uint64_t>(shape.padded_tokens, batch.buffer_token_size);
  if (!shape.feasible) {
    o.refused = true;
    o.why = fmt::format("max: the batch needs {} chunks but max_chunks is {}", shape.min_max_chunks, batch.max_chunks);
  }
  return o;
}

}  // namespace

uint64_t streamed_length(const Batch& batch, const Policy& policy, uint32_t b) {
  return policy.streams_new_tokens() ? batch.padded_length(b) : batch.cache_lengths[b];
}

PolicyOutcome policy_outcome(const Batch& batch, const Policy& policy) {
  if (policy.kind == PolicyKind::max) return max_outcome(batch);
  PolicyOutcome o;
  for (uint32_t len : batch.cache_lengths) o.payload_tokens += len;
  if (policy.kind == PolicyKind::even_split) {  // closed form: O(B) however many chunks
    const uint64_t share = even_split_share(batch, policy.even_split, o.why);
    if (share == 0) {
      o.refused = true;
      return o;
    }
    uint64_t longest = 0;
    for (uint32_t len : batch.cache_lengths) {
      longest = std::max<uint64_t>(longest, len);
      o.largest_chunk += std::min<uint64_t>(len, share);  // chunk 0 is the fullest
    }
    o.chunks = ceil_div(longest, share);
    o.streamed_rows = o.payload_tokens;
    return o;
  }
  if (too_many_chunks(o.payload_tokens, batch)) {
    o.refused = true;
    o.why = fmt::format("{}: {} context tokens in a buffer of {} rows need more than {} chunks; raise buffer_token_size",
                        policy.name(), o.payload_tokens, batch.buffer_token_size, kMaxWalkChunks);
    return o;
  }
  uint64_t current_chunk = 0, current_rows = 0;
  auto count = [&](uint64_t c, uint32_t, uint64_t, uint64_t len) {
    if (c != current_chunk) current_rows = 0;
    current_chunk = c;
    current_rows += len;
    o.streamed_rows += len;
    o.largest_chunk = std::max(o.largest_chunk, current_rows);
  };
  if (!walk(batch, policy, o.chunks, o.why, count)) o.refused = true;
  return o;
}

PolicyOutcome outcome_from_tables(const Batch& batch, const PlanTables& tables) {
  PolicyOutcome o = max_outcome(batch);
  o.chunks = 0;
  o.streamed_rows = 0;
  o.largest_chunk = 0;
  for (int32_t len : tables.buffer_lengths) {
    if (len <= 0) continue;
    ++o.chunks;
    o.streamed_rows += static_cast<uint64_t>(len);
    o.largest_chunk = std::max<uint64_t>(o.largest_chunk, static_cast<uint64_t>(len));
  }
  return o;
}

PolicyPlan plan_policy(const Batch& batch, const Policy& asked, const std::function<void(uint64_t, uint64_t)>& before_tables) {
  PolicyPlan p;
  if (asked.kind == PolicyKind::max) {
    const PlanShape shape = require_feasible(batch);  // InfeasibleBatch naming the fix, before the tables are weighed
    if (before_tables) before_tables(batch.max_chunks, shape.min_max_chunks);
    p.tables = plan_fast_cpu(batch, profile::stop_flag());
    p.outcome = outcome_from_tables(batch, p.tables);
    return p;
  }
  // guided: its choice made once, not again in each walk below. A batch too long to walk is refused
  // in guided's own name, and nothing is chosen for it.
  Policy policy = asked;
  if (asked.kind == PolicyKind::guided) {
    uint64_t context = 0;
    for (uint32_t len : batch.cache_lengths) context += len;
    if (!too_many_chunks(context, batch)) policy = guided_plan(batch, asked);
  }
  p.outcome = policy_outcome(batch, policy);
  if (p.outcome.refused) throw InputError(p.outcome.why);

  const uint32_t B = batch.batch_size();
  const uint64_t rows = std::max<uint64_t>(batch.max_chunks, p.outcome.chunks);
  if (rows * (uint64_t{B} + 1) > kMaxTableCells)
    throw InputError(fmt::format("{}: the plan's {} chunks x {} sequences are too many table cells to print; "
                                 "raise buffer_token_size",
                                 asked.name(), p.outcome.chunks, B));
  if (before_tables) before_tables(rows, p.outcome.chunks);
  PlanTables& t = p.tables;
  t = PlanTables(B, static_cast<uint32_t>(rows));
  std::fill(t.buffer_lengths.begin(), t.buffer_lengths.end(), -1);
  // Pieces arrive in chunk order and, within a chunk, in sequence order: each one's rows follow the
  // previous piece's, and every column between them is an empty run at the same offset.
  std::vector<uint64_t> consumed(B, 0);  // tokens of each sequence streamed by earlier chunks
  uint64_t chunk = 0, next_seq = 0, row = 0;
  auto close_until = [&](uint64_t c, uint64_t seq) {  // fill columns next_seq..seq-1 of chunk c as empty
    for (; next_seq < seq; ++next_seq) {
      t.row_offset(static_cast<uint32_t>(c), static_cast<uint32_t>(next_seq)) = static_cast<uint32_t>(row);
      t.cache_offset(static_cast<uint32_t>(c), static_cast<uint32_t>(next_seq)) = static_cast<uint32_t>(consumed[next_seq]);
    }
  };
  auto finish_chunk = [&](uint64_t c) {
    close_until(c, B);
    t.row_offset(static_cast<uint32_t>(c), B) = static_cast<uint32_t>(row);
    t.buffer_lengths[c] = static_cast<int32_t>(row);
  };
  auto emit = [&](uint64_t c, uint32_t b, uint64_t from, uint64_t len) {
    while (chunk < c) {
      finish_chunk(chunk);
      ++chunk;
      next_seq = 0;
      row = 0;
    }
    close_until(c, b);
    t.row_offset(static_cast<uint32_t>(c), b) = static_cast<uint32_t>(row);
    t.cache_offset(static_cast<uint32_t>(c), b) = static_cast<uint32_t>(from);
    next_seq = b + 1;
    row += len;
    consumed[b] = from + len;
  };
  uint64_t chunks = 0;
  std::string why;
  walk(batch, policy, chunks, why, emit);
  if (chunks > 0) finish_chunk(chunk);
  // Unused chunk rows, as the seed writes them: every sequence fully consumed, no rows.
  for (uint64_t c = chunks; c < rows; ++c) {
    if (profile::stop_requested()) throw Interrupted("interrupted while planning");
    for (uint32_t b = 0; b < B; ++b) {
      t.row_offset(static_cast<uint32_t>(c), b) = 0;
      t.cache_offset(static_cast<uint32_t>(c), b) = static_cast<uint32_t>(consumed[b]);
    }
    t.row_offset(static_cast<uint32_t>(c), B) = 0;
  }
  return p;
}

}  // namespace mlaplan::policies
