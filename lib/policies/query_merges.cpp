// Merges per query row (QueryMerges): how many times each new token's running output is merged by
// log-sum-exp under each engine's loop, as the executor merges it (Schedule.merges_per_query).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "max_segment.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

using detail::max_segment;
using detail::MaxSegment;
using detail::new_tokens;

void QueryMerges::add(uint64_t merges, uint64_t rows) {
  if (rows == 0) return;
  sorted_ = sorted_ && (counts.empty() || counts.back().first < merges);
  counts.emplace_back(merges, rows);
  if (counts.size() >= (size_t{1} << 16)) fold();  // a sweep adds every batch's: keep it small
}

void QueryMerges::add(const QueryMerges& other) {
  for (const auto& [m, r] : other.counts) add(m, r);
  for (uint64_t m = 0; m < other.dense_.size(); ++m) add(m, other.dense_[m]);
}

void QueryMerges::fold() {
  size_t out = 0;
  for (const auto& [m, r] : counts) {
    if (m < kDense) {
      if (dense_.size() <= m) dense_.resize(m + 1);
      dense_[m] += r;
    } else {
      counts[out++] = {m, r};
    }
  }
  counts.resize(out);
  sorted_ = false;
  compact_sparse();
}

void QueryMerges::compact_sparse() {
  if (sorted_) return;
  std::sort(counts.begin(), counts.end());
  size_t out = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (out > 0 && counts[out - 1].first == counts[i].first) counts[out - 1].second += counts[i].second;
    else counts[out++] = counts[i];
  }
  counts.resize(out);
  sorted_ = true;
}

void QueryMerges::compact() {
  if (sorted_ && dense_.empty()) return;
  fold();  // `counts` keeps the large counts only, sorted
  std::vector<std::pair<uint64_t, uint64_t>> all;
  all.reserve(dense_.size() + counts.size());
  for (uint64_t m = 0; m < dense_.size(); ++m)
    if (dense_[m] > 0) all.emplace_back(m, dense_[m]);
  all.insert(all.end(), counts.begin(), counts.end());
  counts.swap(all);
  dense_.clear();
  sorted_ = true;
}

uint64_t QueryMerges::rows() const {
  uint64_t n = 0;
  for (const auto& c : counts) n += c.second;
  for (uint64_t r : dense_) n += r;
  return n;
}

uint64_t QueryMerges::max() const {
  // dense_ ends at the largest count folded into it (fold grows it to that count only).
  uint64_t m = dense_.empty() ? 0 : dense_.size() - 1;
  for (const auto& c : counts) m = std::max(m, c.first);
  return m;
}

uint64_t QueryMerges::quantile(double q) {
  compact();
  const uint64_t n = rows();
  if (n == 0) return 0;
  // Nearest rank, as the CLI's other quantiles (and the executor's merge_stats).
  const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))), 1, n);
  uint64_t seen = 0;
  for (const auto& [m, r] : counts) {
    seen += r;
    if (seen >= rank) return m;
  }
  return counts.back().first;
}

void add_policy_query_merges(QueryMerges& q, const Batch& b, const Policy& policy) {
  const uint64_t T = new_tokens(b);
  uint64_t context = 0;
  for (uint32_t len : b.cache_lengths) context += len;
  if (context == 0) {  // no loop: the new tokens' step is the whole layer, taken as it is
    q.add(0, T);
    return;
  }
  if (policy.kind == PolicyKind::even_split) {
    // Every query attends every chunk. SGLang takes the new tokens' output and merges each chunk; vLLM
    // takes the first chunk and merges the others and, at the end, the context into the output: the
    // same count, as policy_features prices it.
    std::string why;
    const uint64_t share = detail::even_split_share(b, policy.even_split, why);
    uint64_t longest = 0;
    for (uint32_t len : b.cache_lengths) longest = std::max<uint64_t>(longest, len);
    q.add(share ? detail::ceil_div(longest, share) : 0, T);
    return;
  }
  if (policy.packed == PackedVariant::trtllm) {  // every query merges every chunk, then the new tokens' step
    uint64_t chunks = 0;
    if (b.buffer_token_size > 0) chunks = detail::ceil_div(context, b.buffer_token_size);
    q.add(chunks + 1, T);
    return;
  }
  // vLLM's packed loop (packed and waves): only the chunk's own requests attend it, and every row
  // merges once more at the end; the first chunk is taken as it is where it holds every query (policy_features' first_queries).
  struct Seq {
    uint64_t chunks = 0;
    bool first = false;  // in the first chunk
  };
  thread_local std::vector<Seq> seqs;
  seqs.assign(b.batch_size(), Seq{});
  uint64_t first_queries = 0;
  detail::walk_packed_loop(b, policy, [&](uint64_t c, uint32_t seq, uint64_t, uint64_t) {
    ++seqs[seq].chunks;  // the walk emits a sequence once per chunk
    if (c == 0) {
      seqs[seq].first = true;
      first_queries += b.input_length(seq);
    }
  });
  const bool taken = first_queries == T;
  for (uint32_t i = 0; i < b.batch_size(); ++i) q.add(seqs[i].chunks + 1 - (taken && seqs[i].first), b.input_length(i));
}

QueryMerges policy_query_merges(const Batch& b, const Policy& policy) {
  QueryMerges q;
  add_policy_query_merges(q, b, policy);
  return q;
}

namespace {

// Max's merges over its chunks as `chunks` gives them (max_chunks_of, max_chunks_closed).
template <typename Chunks>
void add_max_merges(QueryMerges& q, const Batch& b, Chunks&& chunks) {
  const uint32_t B = b.batch_size();
  // Per sequence, the positions from which its queries attend each chunk: a query at position p
  // merges once for each chunk whose segment it attends (first <= p). Kept as (sequence, position)
  // pairs in one reused vector: a sweep asks this for every batch, where a vector per sequence
  // was a fifth of its time in allocations.
  thread_local std::vector<std::pair<uint32_t, uint64_t>> from;
  from.clear();
  chunks(
      [&](uint32_t s, uint64_t start, uint64_t rows, uint64_t) {
        const MaxSegment seg = max_segment(b, s, start, rows);
        if (seg.attended) from.emplace_back(s, seg.first);
      },
      [](uint64_t) {});
  std::sort(from.begin(), from.end());
  size_t i = 0;
  for (uint32_t s = 0; s < B; ++s) {
    uint64_t at = b.cache_lengths[s];  // the first query's position
    const uint64_t total = at + b.input_length(s);
    for (uint64_t k = 0;; ++k) {  // positions at .. next - 1 attend k chunks
      const bool more = i < from.size() && from[i].first == s;
      const uint64_t next = more ? from[i++].second : total;
      q.add(k, next - at);
      at = next;
      if (!more) break;
    }
  }
}

}  // namespace

void add_max_query_merges(QueryMerges& q, const Batch& b, const MaxTablesView& t) {
  add_max_merges(q, b, [&](auto&& segment, auto&& done) { detail::max_chunks_of(b, t, segment, done); });
}

QueryMerges max_query_merges(const Batch& b) {
  detail::require_max_walk(b);
  QueryMerges q;
  add_max_merges(q, b, [&](auto&& segment, auto&& done) { detail::max_chunks_closed(b, segment, done); });
  return q;
}

QueryMerges max_query_merges(const Batch& b, const MaxTablesView& t) {
  QueryMerges q;
  add_max_query_merges(q, b, t);
  return q;
}

QueryMerges dispatched_query_merges(const Batch& b, const Policy& policy, uint32_t sm, const MaxTablesView* max_tables) {
  if (policy.kind == PolicyKind::max) return max_tables ? max_query_merges(b, *max_tables) : max_query_merges(b);
  if (engine_path(b, policy, sm) != EnginePath::chunked) {  // the whole context at once: its output is the layer's
    QueryMerges q;
    q.add(0, new_tokens(b));
    return q;
  }
  return policy_query_merges(b, policy);
}

}  // namespace mlaplan::policies
