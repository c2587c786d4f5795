#include "mlaplan/policies/policy_check.hpp"

#include <fmt/format.h>

namespace mlaplan::policies {

InvariantReport check_policy_invariants(const Batch& batch, const Policy& policy, const PlanTables& t,
                                        uint64_t chunks_used, size_t max_messages) {
  InvariantReport r;
  auto fail = [&](std::string message) {
    ++r.violations;
    if (r.messages.size() < max_messages) r.messages.push_back(std::move(message));
  };
  const uint32_t B = batch.batch_size();
  const uint64_t N = batch.buffer_token_size;
  if (t.batch_size != B || t.buffer_row_offsets.size() != size_t{t.max_chunks} * (B + size_t{1}) ||
      t.cache_offsets.size() != size_t{t.max_chunks} * B || t.buffer_lengths.size() != t.max_chunks) {
    fail(fmt::format("tables have the wrong shape for {} sequences and {} chunks", B, t.max_chunks));
    return r;
  }
  if (chunks_used > t.max_chunks) fail(fmt::format("{} chunks used but the tables hold {}", chunks_used, t.max_chunks));

  std::vector<uint64_t> streamed(B, 0);
  for (uint32_t c = 0; c < t.max_chunks; ++c) {
    const int32_t len = t.buffer_lengths[c];
    const bool used = c < chunks_used;
    if (used && (len < 1 || static_cast<uint64_t>(len) > N))
      fail(fmt::format("chunk {}: length {} is not in 1..{} (the buffer)", c, len, N));
    // The seed writes 0, not -1, for the chunks of an empty batch.
    const bool empty_batch_ok = B == 0 && len == 0;
    if (!used && len != -1 && !empty_batch_ok) fail(fmt::format("chunk {}: unused but its length is {}, not -1", c, len));
    if (t.row_offset(c, 0) != 0) fail(fmt::format("chunk {}, sequence 0: rows start at {}, not 0", c, t.row_offset(c, 0)));
    const uint64_t end = used ? static_cast<uint64_t>(len) : 0;
    if (t.row_offset(c, B) != end)
      fail(fmt::format("chunk {}: rows end at {}, not at the chunk's length {}", c, t.row_offset(c, B), end));
    for (uint32_t b = 0; b < B; ++b) {
      const uint32_t lo = t.row_offset(c, b), hi = t.row_offset(c, b + 1);
      if (hi < lo) {
        fail(fmt::format("chunk {}, sequence {}: rows [{}, {}) run backwards", c, b, lo, hi));
        continue;
      }
      if (t.cache_offset(c, b) != streamed[b])
        fail(fmt::format("chunk {}, sequence {}: reads from token {} but earlier chunks streamed {}", c, b,
                         t.cache_offset(c, b), streamed[b]));
      streamed[b] += hi - lo;
    }
  }
  for (uint32_t b = 0; b < B; ++b) {
    const uint64_t want = streamed_length(batch, policy, b);
    if (streamed[b] != want)
      fail(fmt::format("sequence {}: {} tokens streamed over all chunks, {} expected under {}", b, streamed[b], want,
                       policy.name()));
  }
  return r;
}

}  // namespace mlaplan::policies
