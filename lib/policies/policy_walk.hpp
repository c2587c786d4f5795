// Each engine's policy as one walk over the batch that emits (chunk, sequence, first token, length)
// pieces in chunk order and, within a chunk, in sequence order: the one definition the tables of
// `run`, the counters of `sweep` and the cost terms (policy_cost.cpp) all read. Private to policies.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/policies/policy.hpp"
#include "stop_poll.hpp"

namespace mlaplan::policies::detail {

// Past this many chunks a plan is not worth walking piece by piece (and no engine would run it).
constexpr uint64_t kMaxWalkChunks = uint64_t{1} << 24;

inline uint64_t round_down(uint64_t v, uint64_t a) { return v / a * a; }
inline uint64_t ceil_div(uint64_t v, uint64_t a) { return (v + a - 1) / a; }

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
  StopPoll poll;
  while (b < B) {
    poll();
    if (batch.cache_lengths[b] == 0) {
      ++b;
      continue;
    }
    uint64_t rows = 0;
    while (b < B && batch.cache_lengths[b] > 0) {
      poll();
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
  StopPoll poll;
  for (uint32_t b = 0; b < batch.batch_size(); ++b) {
    uint64_t left = batch.cache_lengths[b], start = 0;
    total += left;
    poll();
    while (left > 0) {
      poll();
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
  StopPoll poll;
  for (uint64_t c = 0; c < chunks; ++c) {
    poll(batch.batch_size() + uint64_t{1});
    for (uint32_t b = 0; b < batch.batch_size(); ++b) {
      const uint64_t from = c * share, len = batch.cache_lengths[b];
      if (from < len) emit(c, b, from, std::min(share, len - from));
    }
  }
  return chunks;
}

// How full the waves of a launch with `blocks` (query tile, head) blocks are, on `slots` slots at once.
inline double wave_fill(uint64_t blocks, uint64_t slots) {
  return blocks == 0 ? 0.0 : static_cast<double>(blocks) / static_cast<double>(slots * ceil_div(blocks, slots));
}

// mlaplan's waves policy (docs/policies.md). Contexts in request order, every chunk full (W rows, the
// last one partial): as TensorRT-LLM packs them, ceil(context / W) chunks. But a sequence does not
// stream alone when its (query tile, head) blocks would leave the launch's waves less than
// kWavesFill full: it streams as one group with the next sequences with context, until the group's
// blocks fill them, and each chunk's rows go to the group's members in proportion to what each has
// left, so that the members end in the same chunk (the next group then takes that chunk's rest).
// A sequence that fills the waves alone is streamed as packed streams it: few merges. The pieces
// of a chunk are in sequence order; a member whose share rounds to 0 rows is not in that chunk.
// Returns the number of chunks. O(B + chunks x group) in time, O(group) in memory.
constexpr double kWavesFill = 0.9;
// Whether a group with `blocks` blocks fills the launch's waves enough to stream without the next
// sequence (a threshold past 1 counts waves).
inline bool waves_group_full(const Policy& policy, uint64_t blocks) {
  const uint64_t slots = policy.waves_slots;
  return (policy.waves_fill > 1 ? static_cast<double>(blocks) / static_cast<double>(slots) : wave_fill(blocks, slots)) >=
         policy.waves_fill;
}
inline uint64_t waves_blocks(const Batch& batch, const Policy& policy, uint32_t b) {
  return ceil_div(batch.input_length(b), policy.waves_tile) * policy.waves_heads;
}
template <typename Emit>
uint64_t walk_waves(const Batch& batch, const Policy& policy, Emit&& emit) {
  const uint64_t W = batch.buffer_token_size, B = batch.batch_size();
  thread_local std::vector<uint32_t> group;  // the members, in order
  thread_local std::vector<uint64_t> left;   // what each has left
  thread_local std::vector<uint64_t> share;
  uint64_t chunk = 0, rows = 0;  // rows of the current chunk taken
  uint32_t b = 0;
  StopPoll poll;
  while (b < B) {
    group.clear();
    left.clear();
    uint64_t blocks = 0, rest = 0;
    for (; b < B; ++b) {
      poll();
      const uint64_t len = batch.cache_lengths[b];
      if (len == 0) continue;
      if (!group.empty() && waves_group_full(policy, blocks)) break;
      group.push_back(b);
      left.push_back(len);
      rest += len;
      blocks += waves_blocks(batch, policy, b);
    }
    if (group.empty()) break;
    const size_t n = group.size();
    share.assign(n, 0);
    while (rest > 0) {
      poll(n);  // a group of a million sequences through thousands of chunks: O(chunks x group)
      const uint64_t room = W - rows;
      if (rest <= room) {  // the group ends in this chunk
        for (size_t j = 0; j < n; ++j)
          if (left[j] > 0) emit(chunk, group[j], batch.cache_lengths[group[j]] - left[j], left[j]);
        rows += rest;
        rest = 0;
        break;
      }
      uint64_t given = 0;
      // room x left / rest, rounded down; the rounding's rows below. room < 2^31 (a buffer's rows) and
      // left < 2^32 (a context): the product fits 64 bits, whose division is several times 128 bits'.
      for (size_t j = 0; j < n; ++j) {
        share[j] = room * left[j] / rest;
        given += share[j];
      }
      for (size_t j = 0; j < n && given < room; ++j) {
        const uint64_t more = std::min(room - given, left[j] - share[j]);
        share[j] += more;
        given += more;
      }
      for (size_t j = 0; j < n; ++j) {
        if (share[j] == 0) continue;
        emit(chunk, group[j], batch.cache_lengths[group[j]] - left[j], share[j]);
        left[j] -= share[j];
      }
      rest -= room;
      ++chunk;
      rows = 0;
    }
    if (rows == W) {
      ++chunk;
      rows = 0;
    }
  }
  return rows > 0 ? chunk + 1 : chunk;
}

// The even split's share per sequence, or 0 with `why` set when the engine would refuse the batch.
inline uint64_t even_split_share(const Batch& batch, EvenSplitVariant variant, std::string& why) {
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

inline uint64_t packed_align(const Batch& batch, const Policy& policy) {
  return policy.split_align ? policy.split_align : batch.page_size;
}

// The two refusals of a packed plan, one definition each (policy_outcome words them): more chunks
// than are worth walking, and vLLM's split with a buffer below one alignment.
inline bool too_many_chunks(uint64_t context_tokens, const Batch& batch) {
  return context_tokens / batch.buffer_token_size > kMaxWalkChunks;
}
inline bool below_split_align(const Batch& batch, const Policy& policy) {
  return policy.kind == PolicyKind::packed && policy.packed == PackedVariant::vllm &&
         batch.buffer_token_size < packed_align(batch, policy);
}

// vLLM's packed loop (each chunk's own requests attend it) runs over packed's plan, waves' and guided's.
inline bool runs_packed_loop(const Policy& p) {
  return (p.kind == PolicyKind::packed && p.packed == PackedVariant::vllm) || p.kind == PolicyKind::waves ||
         p.kind == PolicyKind::guided;
}

// guided's choice: policy_cost.hpp's guided_choice (guided_choice.cpp).
Policy guided_plan(const Batch& batch, const Policy& guided);

// The walk of a policy for which runs_packed_loop holds.
template <typename Emit>
uint64_t walk_packed_loop(const Batch& batch, const Policy& policy, Emit&& emit) {
  if (policy.kind == PolicyKind::guided) return walk_packed_loop(batch, guided_plan(batch, policy), emit);
  if (policy.kind == PolicyKind::waves && policy.waves_shares == WavesShares::even) {
    std::string why;  // the even split's share, which a buffer of at least one page per context never makes 0
    const uint64_t share = std::max<uint64_t>(even_split_share(batch, EvenSplitVariant::vllm, why), 1);
    return walk_even_split(batch, share, emit);
  }
  return policy.kind == PolicyKind::waves ? walk_waves(batch, policy, emit)
                                          : walk_packed_vllm(batch, packed_align(batch, policy), emit);
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
        if (below_split_align(batch, policy)) {
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
    case PolicyKind::waves:
      if (policy.waves_shares == WavesShares::even && even_split_share(batch, EvenSplitVariant::vllm, why) == 0) {
        why.replace(0, std::string("even-split/vllm").size(), "waves/even");
        return false;
      }
      [[fallthrough]];
    case PolicyKind::guided:
      chunks = walk_packed_loop(batch, policy, emit);
      return true;
    case PolicyKind::max:
      break;
  }
  return false;
}

}  // namespace mlaplan::policies::detail
