// Each engine's policy as one walk over the batch that emits (chunk, sequence, first token, length)
// pieces in order; the same walk feeds the tables of `run` and the counters of `sweep`.
#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/errors.hpp"
#include "mlaplan/explore/policy.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::explore {

namespace {

// Past this many chunks a plan is not worth walking piece by piece (and no engine would run it).
constexpr uint64_t kMaxWalkChunks = uint64_t{1} << 24;

uint64_t round_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t ceil_div(uint64_t v, uint64_t a) { return (v + a - 1) / a; }

// vLLM plan_mla_context_chunks without DCP: contexts packed in request order into chunks of at most
// W rows; a context that does not fit is split at the largest multiple of `align` that fits (and
// leaves at least one token for later), never at zero; a request without context ends the chunk.
// Returns the number of chunks.
template <typename Emit>
uint64_t walk_packed_vllm(const Batch& batch, uint64_t align, Emit&& emit) {
  const uint64_t W = batch.buffer_token_size;
  const uint64_t max_split_chunk = round_down(W, align);  // > 0: checked by the caller
  const uint32_t B = batch.batch_size();
  uint64_t chunk = 0;
  uint32_t b = 0;
  uint64_t start = 0;  // tokens of sequence b already streamed by earlier chunks
  while (b < B) {
    if (batch.cache_lengths[b] == 0) {
      ++b;
      continue;
    }
    uint64_t rows = 0;
    while (b < B && batch.cache_lengths[b] > 0) {
      const uint64_t remaining = batch.cache_lengths[b] - start;
      if (rows + remaining > W) {
        const uint64_t limit = std::min(max_split_chunk, round_down(remaining - 1, align));
        const uint64_t split = round_down(std::min(limit, W - rows), align);
        if (split > 0) {
          emit(chunk, b, start, split);
          start += split;
        }
        break;
      }
      emit(chunk, b, start, remaining);
      rows += remaining;
      ++b;
      start = 0;
    }
    ++chunk;
  }
  return chunk;
}

// TensorRT-LLM pre_process_for_chunked_prefill: every cached token packed contiguously into chunks
// of exactly W rows (the last one partial), no alignment, requests without context skipped.
template <typename Emit>
uint64_t walk_packed_trtllm(const Batch& batch, Emit&& emit) {
  const uint64_t W = batch.buffer_token_size;
  uint64_t chunk = 0, remain = W, total = 0;
  for (uint32_t b = 0; b < batch.batch_size(); ++b) {
    uint64_t left = batch.cache_lengths[b], start = 0;
    total += left;
    while (left > 0) {
      const uint64_t used = std::min(remain, left);
      emit(chunk, b, start, used);
      start += used;
      left -= used;
      remain -= used;
      if (remain == 0) {
        ++chunk;
        remain = W;
      }
    }
  }
  return ceil_div(total, W);
}

// The even split: chunk i streams tokens [i * share, (i + 1) * share) of every context, in order.
template <typename Emit>
uint64_t walk_even_split(const Batch& batch, uint64_t share, Emit&& emit) {
  uint64_t longest = 0;
  for (uint32_t len : batch.cache_lengths) longest = std::max<uint64_t>(longest, len);
  const uint64_t chunks = longest ? ceil_div(longest, share) : 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    for (uint32_t b = 0; b < batch.batch_size(); ++b) {
      const uint64_t from = c * share, len = batch.cache_lengths[b];
      if (from < len) emit(c, b, from, std::min(share, len - from));
    }
  }
  return chunks;
}

// The even split's share per sequence, or 0 with `why` set when the engine would refuse the batch.
uint64_t even_split_share(const Batch& batch, EvenSplitVariant variant, std::string& why) {
  const uint64_t W = batch.buffer_token_size;
  uint64_t with_context = 0;
  for (uint32_t len : batch.cache_lengths) with_context += len > 0;
  if (with_context == 0) return W;  // nothing to stream; any share plans zero chunks
  if (variant == EvenSplitVariant::sglang) {
    const uint64_t n = batch.batch_size();
    const uint64_t share = W / n;
    if (share == 0)
      why = fmt::format("even-split/sglang: {} rows / {} sequences leaves each sequence 0 rows; raise buffer_token_size "
                        "to at least {}",
                        W, n, n);
    return share;
  }
  const uint64_t share = round_down(W / with_context, batch.page_size);
  if (share == 0)
    why = fmt::format("even-split/vllm: {} rows / {} sequences with context, rounded down to pages of {}, leaves 0 rows "
                      "(vLLM asserts max_context_chunk > 0); raise buffer_token_size to at least {}",
                      W, with_context, batch.page_size, with_context * batch.page_size);
  return share;
}

uint64_t packed_align(const Batch& batch, const Policy& policy) {
  return policy.split_align ? policy.split_align : batch.page_size;
}

// Runs the policy's walk; returns false with `why` set for a batch the engine would refuse.
template <typename Emit>
bool walk(const Batch& batch, const Policy& policy, uint64_t& chunks, std::string& why, Emit&& emit) {
  switch (policy.kind) {
    case PolicyKind::packed:
      if (policy.packed == PackedVariant::trtllm) {
        chunks = walk_packed_trtllm(batch, emit);
        return true;
      } else {
        const uint64_t align = packed_align(batch, policy);
        if (batch.buffer_token_size < align) {
          why = fmt::format("packed: buffer_token_size {} is below the split alignment {} (vLLM asserts "
                            "max_context_chunk > 0); raise buffer_token_size or lower --split-align",
                            batch.buffer_token_size, align);
          return false;
        }
        chunks = walk_packed_vllm(batch, align, emit);
        return true;
      }
    case PolicyKind::even_split: {
      const uint64_t share = even_split_share(batch, policy.even_split, why);
      if (share == 0) return false;
      chunks = walk_even_split(batch, share, emit);
      return true;
    }
    case PolicyKind::max:
      break;
  }
  return false;
}

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
  if (o.payload_tokens / batch.buffer_token_size > kMaxWalkChunks) {
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

PolicyPlan plan_policy(const Batch& batch, const Policy& policy) {
  PolicyPlan p;
  if (policy.kind == PolicyKind::max) {
    p.tables = plan_fast_cpu(batch, profile::stop_flag());  // throws InfeasibleBatch naming the fix
    p.outcome = outcome_from_tables(batch, p.tables);
    return p;
  }
  p.outcome = policy_outcome(batch, policy);
  if (p.outcome.refused) throw InputError(p.outcome.why);

  const uint32_t B = batch.batch_size();
  const uint64_t rows = std::max<uint64_t>(batch.max_chunks, p.outcome.chunks);
  if (rows * (uint64_t{B} + 1) > kMaxTableCells)
    throw InputError(fmt::format("{}: the plan's {} chunks x {} sequences are too many table cells to print; "
                                 "raise buffer_token_size",
                                 policy.name(), p.outcome.chunks, B));
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

}  // namespace mlaplan::explore
