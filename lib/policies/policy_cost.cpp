// Each engine's chunked loop counted in cost terms. The patterns follow python/mlaplan/prefill/
// schedule.py, which runs them (and docs/prefill.md, which cites the engines' code):
//   vLLM packed      new tokens' causal step; per chunk only its own requests' queries, merged unless
//                    it is the first chunk and holds every query; a final merge of context into output.
//   vLLM even split  new tokens' step; every prefill's queries attend every chunk, the first chunk's
//                    output taken as it is, the others merged; the final merge.
//   SGLang           new tokens' step; every query attends and merges in every chunk.
//   TensorRT-LLM     (the SM100 loop) every query attends and merges in every chunk, then the new
//                    tokens' step merges too.
//   MAX              cache and new tokens streamed together: per chunk one unmasked launch and one
//                    bottom-right causal launch for the queries inside the chunk's keys, all merged.
//   whole context    (TensorRT-LLM below SM100, SGLang's one-shot and absorbed paths) one gather of every
//                    cached and new row and one causal launch over each sequence's new tokens.
#include "mlaplan/policies/policy_cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "max_segment.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

using cost::Features;
using cost::Geometry;
using cost::Launch;
using cost::Clock;
using cost::StepCounts;
using cost::Term;
using detail::eager_layer;
using detail::new_tokens;

namespace {

Policy even_split_policy() {
  Policy p;
  p.kind = PolicyKind::even_split;
  return p;
}

// The grid of a launch that holds every sequence's queries (the even split's and TensorRT-LLM's
// chunks): every sequence is in it, also one without keys in the chunk or without queries. Worked
// out once per batch, not per chunk.
struct AllQueriesGrid {
  uint64_t sequences = 0, most = 0, tiles = 0;
  static AllQueriesGrid of(const Batch& b, const Geometry& g) {
    AllQueriesGrid q;
    q.sequences = b.batch_size();
    for (uint32_t i = 0; i < b.batch_size(); ++i) {
      q.most = std::max<uint64_t>(q.most, b.input_length(i));
      q.tiles += g.tiles(b.input_length(i));
    }
    return q;
  }
  void set(Launch& launch) const { launch.set_grid(sequences, most, tiles); }
};

// The new tokens' own step: their latent rows up-projected and one causal launch over each sequence.
void new_tokens_step(const Batch& b, const Geometry& g, Features& f) {
  Launch launch(g);
  for (uint32_t i = 0; i < b.batch_size(); ++i) launch.add(b.input_length(i), b.input_length(i), true);
  launch.finish(f);
  f[Term::row] += static_cast<double>(new_tokens(b));
  cost::add_small_gemm(f, g, static_cast<double>(new_tokens(b)));
  f[Term::fixed_step] += 1;
}

// Eager time: the new tokens' step (its terms `ns`) as the executor runs it: its own rows (or, on the
// whole-context step a batch without context runs under SGLang and TensorRT-LLM, gathered), one
// causal launch, taken as it is or merged (TensorRT-LLM).
Clock new_step_clock(const EagerTime& e, const Features& ns, bool gather, bool merged) {
  StepCounts s;
  s.gather = gather;
  s.rows = ns[Term::row];
  s.small_rows = ns[Term::small_gemm_row];
  if (ns[Term::query] > 0) s.attention[0] = &ns;
  s.merged[0] = merged ? ns[Term::query] : 0;
  s.overhead_us = e.coefficient(Term::fixed_step);
  return cost::eager_step(e.coefficients, e.host, s);
}

// A chunk through the buffer: `rows` gathered, one launch (`launch`: its terms), merged or taken;
// `scattered`: its requests are not one run (a waves group a member skips), their queries gathered.
Clock chunk_clock(const EagerTime& e, const Geometry& g, double rows, const Features& launch, double merged,
                  bool scattered = false) {
  StepCounts s;
  s.gather = true;
  s.rows = rows;
  s.small_rows = cost::small_gemm(g, rows);
  if (launch[Term::query] > 0) s.attention[0] = &launch;
  s.query_gather[0] = scattered && s.attention[0];
  s.merged[0] = merged;
  s.overhead_us = e.coefficient(Term::iteration);
  return cost::eager_step(e.coefficients, e.host, s);
}

// Every prefill's queries attend every chunk of the even split (share rows of each context per
// chunk). Chunks with the same sequences in them cost the same, so they are counted in groups, from
// the last chunk down: a sequence is full-size in its chunks before its last, and its last holds
// what remains. A chunk's grid holds the sequences in batch order; where a block ends depends on the
// work ahead of it, kept per sequence in a Fenwick tree over batch order (O(B log B) in all).
// Eager: `chunks` gets the chunks' clock in chunk order (`takes_first`: vLLM takes chunk 0 as it is).
// `sink`, where given, gets the chunks' terms in chunk order (ChunkSink).
uint64_t even_split_all_queries(const Batch& b, uint64_t share, const Geometry& g, Features& f, EagerTime* eager,
                                bool takes_first, Clock* chunks_clock, const ChunkSink* sink) {
  struct Seq {
    uint32_t pos;       // among the sequences with context, in batch order
    uint64_t last;      // its last chunk
    uint64_t tiles;     // its query tiles (blocks of one head)
    double rem;         // pairs of one block in its last chunk
  };
  // A sweep calls this a million times: no allocation each time.
  thread_local std::vector<Seq> seqs;   // the sequences with context, by last chunk, last first
  thread_local std::vector<double> tree;  // Fenwick tree: each sequence's pairs in the chunk counted
  // Eager: each group of alike chunks, counted last first and clocked first first.
  struct Group {
    uint64_t from, times;
    Features launch;
    double rows;
  };
  thread_local std::vector<Group> groups;
  groups.clear();
  // Each group of alike chunks kept for eager time, the sink, or where a chunk's up-projection may be a
  // small GEMM (its rows decide).
  const bool per_chunk = eager || sink || g.small_gemm_rows > 0;
  seqs.clear();
  const double t = g.tile_queries, full = t * static_cast<double>(share);  // a full-size sequence's block
  for (uint32_t i = 0; i < b.batch_size(); ++i) {
    const uint64_t len = b.cache_lengths[i];
    if (len == 0) continue;
    const uint64_t last = detail::ceil_div(len, share) - 1;
    seqs.push_back({static_cast<uint32_t>(seqs.size()), last, g.tiles(b.input_length(i)),
                    t * static_cast<double>(len - last * share)});
  }
  if (seqs.empty()) return 0;
  std::sort(seqs.begin(), seqs.end(), [](const Seq& x, const Seq& y) { return x.last > y.last || (x.last == y.last && x.pos < y.pos); });
  tree.assign(seqs.size() + 1, 0.0);
  auto add = [&](uint32_t pos, double v) {
    for (size_t i = pos + size_t{1}; i < tree.size(); i += i & (~i + 1)) tree[i] += v;
  };
  auto ahead_through = [&](uint32_t pos) {  // pairs of the sequences up to and with `pos`
    double sum = 0;
    for (size_t i = pos + size_t{1}; i > 0; i -= i & (~i + 1)) sum += tree[i];
    return sum;
  };
  const uint64_t T = new_tokens(b), chunks = seqs.front().last + 1;
  const AllQueriesGrid grid = AllQueriesGrid::of(b, g);
  uint64_t full_tiles = 0;  // tiles of the sequences full-size in the chunks being counted
  uint64_t full_seqs = 0;   // those of them with queries
  int64_t last_full = -1;   // the last of them in batch order with queries
  uint64_t full_count = 0;  // every sequence full-size in the chunks being counted (eager: their rows)
  auto start = [&](Launch& launch) {
    launch.add_queries(T);
    grid.set(launch);
    if (full_tiles) launch.add_blocks(full, full_tiles, ahead_through(static_cast<uint32_t>(last_full)) - full, full_seqs);
  };
  size_t i = 0;
  uint64_t c = chunks;  // chunks c .. chunks - 1 are counted
  while (c > 0) {
    const uint64_t at = c - 1;
    if (i < seqs.size() && seqs[i].last == at) {  // chunk `at` ends these sequences
      const size_t from = i;
      for (; i < seqs.size() && seqs[i].last == at; ++i) add(seqs[i].pos, static_cast<double>(seqs[i].tiles) * seqs[i].rem);
      Launch launch(g);
      start(launch);
      for (size_t j = from; j < i; ++j) {
        const Seq& s = seqs[j];
        // One before the last full-size sequence ends before that one's last block does (it is no
        // longer), whatever ahead it is given: 0.
        const double ahead = static_cast<int64_t>(s.pos) > last_full ? ahead_through(s.pos) - s.rem : 0;
        launch.add_blocks(s.rem, s.tiles, ahead, s.tiles > 0);
      }
      if (per_chunk) {
        Group grp{at, 1, Features{}, static_cast<double>(full_count * share)};
        for (size_t j = from; j < i; ++j) grp.rows += seqs[j].rem / t;  // its last chunk's rows
        launch.finish(f, 1, &grp.launch);
        groups.push_back(grp);
      } else {
        launch.finish(f);
      }
      for (size_t j = from; j < i; ++j) {  // full-size in the chunks before
        add(seqs[j].pos, static_cast<double>(seqs[j].tiles) * (full - seqs[j].rem));
        full_tiles += seqs[j].tiles;
        full_seqs += seqs[j].tiles > 0;
        ++full_count;
        if (seqs[j].tiles) last_full = std::max<int64_t>(last_full, seqs[j].pos);  // one without queries has no blocks
      }
      c = at;
      continue;
    }
    const uint64_t next = i < seqs.size() ? seqs[i].last + 1 : 0;  // chunks next .. at hold only full sequences
    Launch launch(g);
    start(launch);
    if (per_chunk) {
      groups.push_back({next, c - next, Features{}, static_cast<double>(full_count * share)});
      launch.finish(f, c - next, &groups.back().launch);
    } else {
      launch.finish(f, c - next);
    }
    c = next;
  }
  for (const Group& grp : groups) cost::add_small_gemm(f, g, grp.rows, static_cast<double>(grp.times));
  if (eager) {
    const double T = static_cast<double>(new_tokens(b));
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
      uint64_t times = it->times;
      if (it->from == 0 && takes_first) {  // chunk 0's output is the context's state as it is
        chunks_clock->then(chunk_clock(*eager, g, it->rows, it->launch, 0));
        --times;
      }
      chunks_clock->then(chunk_clock(*eager, g, it->rows, it->launch, T), times);
    }
  }
  if (sink) {
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
      Features chunk = it->launch;
      chunk[Term::iteration] = 1;
      chunk[Term::row] = it->rows;
      cost::add_small_gemm(chunk, g, it->rows);
      uint64_t times = it->times;
      if (it->from == 0 && takes_first) {  // vLLM merges nothing into chunk 0's output (its final merge is the rest's)
        (*sink)(chunk, 1);
        --times;
      }
      chunk[Term::merged_query] = static_cast<double>(T);
      if (times) (*sink)(chunk, times);
    }
  }
  return chunks;
}

// Runs a walk, finishing each chunk's launch; `own`: only the chunk's requests' queries attend (vLLM
// packed), else every prefill's (TensorRT-LLM). Returns the chunk count and, through first_queries,
// how many queries the first chunk's launch read.
template <typename Walk>
uint64_t walked_chunks(const Batch& b, bool own, const Geometry& g, Features& f, uint64_t& first_queries,
                       uint64_t& largest_chunk, EagerTime* eager, Clock* chunks_clock, const ChunkSink* sink, Walk&& walk) {
  const uint64_t T = new_tokens(b);
  // Own queries: each launch counts its requests' grid as they are added.
  const AllQueriesGrid grid = own ? AllQueriesGrid{} : AllQueriesGrid::of(b, g);
  Launch launch(g);
  uint64_t current = std::numeric_limits<uint64_t>::max(), done = 0, rows = 0;
  // A long context streamed through many chunks makes the same one-piece launch again and again: it
  // is counted once and its terms added again. A chunk's first piece waits until a second comes.
  struct Piece {
    uint32_t seq = std::numeric_limits<uint32_t>::max();
    uint64_t len = 0;
    bool operator==(const Piece& o) const { return seq == o.seq && len == o.len; }
  };
  Piece first, repeated;  // the chunk's first piece; the last one-piece chunk counted
  uint32_t prev_seq = 0;
  bool scattered = false;  // the chunk's requests are not one run
  Features repeated_terms;
  Clock repeated_clock;  // eager: the repeated chunk's
  uint32_t pieces = 0;
  auto to_sink = [&](Features chunk, double chunk_rows) {  // the walk adds rows and iterations to `f` apart
    chunk[Term::iteration] = 1;
    chunk[Term::row] = chunk_rows;
    cost::add_small_gemm(chunk, g, chunk_rows);
    (*sink)(chunk, 1);
  };
  auto add = [&](const Piece& p) {
    if (own) launch.add(b.input_length(p.seq), p.len, false);
    else launch.add_work(b.input_length(p.seq), p.len, false);
  };
  auto close = [&] {
    if (current == std::numeric_limits<uint64_t>::max()) return;
    largest_chunk = std::max(largest_chunk, rows);
    const bool one = pieces == 1;
    pieces = 0;
    const double chunk_rows = static_cast<double>(rows);
    rows = 0;
    cost::add_small_gemm(f, g, chunk_rows);  // the chunk's up-projection (its rows are counted as the walk adds them)
    if (one && done > 0 && first == repeated) {
      ++done;
      f += repeated_terms;
      if (eager) chunks_clock->then(repeated_clock);
      if (sink) to_sink(repeated_terms, chunk_rows);
      return;
    }
    if (one) add(first);
    if (!own) {
      launch.add_queries(T);
      grid.set(launch);
    }
    if (done++ == 0) first_queries = launch.queries();
    Features terms;
    terms[Term::merged_query] = static_cast<double>(launch.queries());
    launch.finish(terms);
    f += terms;
    if (sink) {
      Features chunk = terms;
      // vLLM's packed loop takes a first chunk that holds every query as it is (policy_features).
      if (own && done == 1 && first_queries == T) chunk[Term::merged_query] = 0;
      to_sink(chunk, chunk_rows);
    }
    Clock clock;
    if (eager) {
      // vLLM's packed loop takes a first chunk that holds every query as it is (policy_features).
      const bool taken = own && done == 1 && first_queries == T;
      const bool gathered = own && scattered;
      clock = chunk_clock(*eager, g, chunk_rows, terms, terms[Term::merged_query], gathered);
      chunks_clock->then(taken ? chunk_clock(*eager, g, chunk_rows, terms, 0, gathered) : clock);  // a repeat of it merges
    }
    if (one) {
      repeated = first;
      repeated_terms = terms;
      repeated_clock = clock;
    }
    launch = Launch(g);
  };
  const uint64_t chunks = walk([&](uint64_t c, uint32_t seq, uint64_t, uint64_t len) {
    if (c != current) {
      close();
      current = c;
      scattered = false;
    } else if (seq != prev_seq + 1) {
      scattered = true;
    }
    prev_seq = seq;
    f[Term::row] += static_cast<double>(len);
    rows += len;
    const Piece p{seq, len};
    if (pieces++ == 0) {
      first = p;
      return;
    }
    if (pieces == 2) add(first);
    add(p);
  });
  close();
  return chunks;
}

}  // namespace

Features new_tokens_features(const Batch& b, const Geometry& g) {
  Features f;
  new_tokens_step(b, g, f);
  return f;
}

namespace {

// policy_features, and with `sink` each chunk's terms (ChunkSink).
Features loop_features(const Batch& b, const Policy& policy, const Geometry& g, PolicyOutcome* outcome,
                       const Features* new_step, EagerTime* eager, const ChunkSink* sink) {
  Features f;
  if (new_step) f = *new_step;
  else new_tokens_step(b, g, f);
  f[Term::batch] = 1;
  const double T = static_cast<double>(new_tokens(b));
  uint64_t context = 0;
  for (uint32_t len : b.cache_lengths) context += len;
  if (outcome && policy.kind == PolicyKind::even_split) *outcome = policy_outcome(b, policy);  // closed form, O(B)
  const bool vllm = policy.kind == PolicyKind::even_split ? policy.even_split == EvenSplitVariant::vllm
                                                           : policy.packed != PackedVariant::trtllm;
  if (eager) eager->clock = Clock{};
  if (context == 0) {  // no loop: the new tokens' step is the whole layer
    if (outcome) *outcome = PolicyOutcome{};
    // The executor runs it as the whole-context step (a gather) under SGLang and TensorRT-LLM.
    if (eager) eager_layer(*eager, f, new_step_clock(*eager, f, !vllm, false));
    return f;
  }
  Clock loop;  // eager: the chunks' clock

  uint64_t chunks = 0, first_queries = 0, largest = 0;
  if (policy.kind == PolicyKind::even_split) {
    std::string why;
    const uint64_t share = detail::even_split_share(b, policy.even_split, why);
    chunks = even_split_all_queries(b, share, g, f, eager, vllm, &loop, sink);
    for (uint32_t len : b.cache_lengths) f[Term::row] += len;
    // SGLang merges every chunk; vLLM takes the first chunk as it is and merges the others, then
    // merges the context into the output once more: the same count.
    f[Term::merged_query] += static_cast<double>(chunks) * T;
    if (policy.even_split == EvenSplitVariant::vllm) f[Term::fixed_step] += 1;  // the final merge
  } else if (policy.packed == PackedVariant::trtllm) {
    chunks = walked_chunks(b, false, g, f, first_queries, largest, eager, &loop, sink,
                           [&](auto&& emit) { return detail::walk_packed_trtllm(b, emit); });
    f[Term::merged_query] += T;  // the new tokens' step merges into the context's state
  } else {  // vLLM's packed loop, over packed's plan or waves'
    chunks = walked_chunks(b, true, g, f, first_queries, largest, eager, &loop, sink,
                           [&](auto&& emit) { return detail::walk_packed_loop(b, policy, emit); });
    if (first_queries == new_tokens(b)) f[Term::merged_query] -= T;  // a first chunk with every query is taken as it is
    f[Term::merged_query] += T;  // the final merge
    f[Term::fixed_step] += 1;
  }
  f[Term::iteration] = static_cast<double>(chunks);
  if (eager) {
    // The executor's order: vLLM and SGLang the new tokens' step (taken) first, then the chunks and
    // vLLM's final merge; TensorRT-LLM the chunks, then the new tokens' step merged in. A state that
    // starts empty is filled first: TensorRT-LLM's context, vLLM packed's unless chunk 0 is taken.
    const Features& ns = new_step ? *new_step : new_tokens_features(b, g);
    const bool trtllm = policy.kind == PolicyKind::packed && policy.packed == PackedVariant::trtllm;
    const bool packed_vllm = detail::runs_packed_loop(policy);
    Clock layer = cost::eager_fills(eager->host, trtllm || (packed_vllm && first_queries != new_tokens(b)));
    if (!trtllm) layer.then(new_step_clock(*eager, ns, false, false));
    layer.then(loop);
    if (trtllm) layer.then(new_step_clock(*eager, ns, false, true));
    if (vllm) {  // the final merge: context into output
      StepCounts m;
      m.up_projection = false;
      m.merged[0] = T;
      m.overhead_us = eager->coefficient(Term::fixed_step);
      layer.then(cost::eager_step(eager->coefficients, eager->host, m));
    }
    eager_layer(*eager, f, layer);
  }
  if (outcome && (policy.kind == PolicyKind::packed || policy.kind == PolicyKind::waves ||
                  policy.kind == PolicyKind::guided)) {  // the walk's own count: what policy_outcome walks for
    *outcome = PolicyOutcome{};
    outcome->chunks = chunks;
    outcome->payload_tokens = outcome->streamed_rows = context;
    outcome->largest_chunk = largest;
  }
  return f;
}

}  // namespace

Features policy_features(const Batch& b, const Policy& policy, const Geometry& g, PolicyOutcome* outcome,
                         const Features* new_step, EagerTime* eager) {
  return loop_features(b, policy, g, outcome, new_step, eager, nullptr);
}

Features policy_features_by_chunk(const Batch& b, const Policy& policy, const Geometry& g, const ChunkSink& sink) {
  return loop_features(b, policy, g, nullptr, nullptr, nullptr, &sink);
}

PolicyOutcome outcome_with_features(const Batch& b, const Policy& policy, const Geometry& g, Features& f,
                                    const Features* new_step, EagerTime* eager) {
  if (policy.kind == PolicyKind::packed || policy.kind == PolicyKind::waves || policy.kind == PolicyKind::guided) {
    uint64_t context = 0;
    for (uint32_t len : b.cache_lengths) context += len;
    // Where the policy refuses, policy_outcome says why; otherwise one walk gives both.
    if (!detail::too_many_chunks(context, b) && !detail::below_split_align(b, policy)) {
      PolicyOutcome o;
      f = policy_features(b, policy, g, &o, new_step, eager);
      return o;
    }
  }
  PolicyOutcome o = policy_outcome(b, policy);
  if (!o.refused) f = policy_features(b, policy, g, nullptr, new_step, eager);
  return o;
}

Features unbounded_features(const Batch& b, const Policy& policy, const Geometry& g, const Features* new_step,
                            EagerTime* eager) {
  if (policy.kind == PolicyKind::max) return detail::max_unbounded_features(b, g, eager);  // one chunk, no cap
  uint64_t total = 0, longest = 0, with_context = 0;
  for (uint32_t len : b.cache_lengths) {
    total += len;
    longest = std::max<uint64_t>(longest, len);
    with_context += len > 0;
  }
  uint64_t rows = total;  // packed: every context in one buffer
  // waves/even takes vLLM's even share: a buffer of `total` rows could split its longest context
  // (10,000 and 100 tokens: a share of 4,992), where any buffer it streams whole at gives one chunk.
  const bool even_shares = policy.kind == PolicyKind::waves && policy.waves_shares == WavesShares::even;
  if (policy.kind == PolicyKind::even_split || even_shares)
    rows = policy.even_split == EvenSplitVariant::sglang && !even_shares
               ? longest * b.batch_size()
               : with_context * detail::ceil_div(longest, b.page_size) * b.page_size;
  thread_local Batch wide;  // reused: a sweep asks this for every batch and policy
  wide.page_size = b.page_size;
  wide.max_chunks = b.max_chunks;
  wide.cache_lengths.assign(b.cache_lengths.begin(), b.cache_lengths.end());
  wide.input_row_offsets.assign(b.input_row_offsets.begin(), b.input_row_offsets.end());
  const uint64_t limit = std::numeric_limits<int32_t>::max() / b.page_size * b.page_size;
  wide.buffer_token_size = static_cast<uint32_t>(std::clamp<uint64_t>(rows, std::max<uint64_t>(b.page_size, 1), limit));
  return policy_features(wide, policy, g, nullptr, new_step, eager);
}

Features whole_context_features(const Batch& b, const Geometry& g, EagerTime* eager) {
  Features f;
  f[Term::batch] = 1;
  f[Term::fixed_step] = 1;  // one step, not an iteration through a buffer
  Launch launch(g);
  uint64_t rows = 0;
  for (uint32_t i = 0; i < b.batch_size(); ++i) {
    const uint64_t fresh = b.input_length(i), keys = uint64_t{b.cache_lengths[i]} + fresh;
    launch.add(fresh, keys, true);  // bottom-right causal: the last new token sees every key
    rows += keys;
  }
  Features one;
  launch.finish(f, 1, eager ? &one : nullptr);  // its output is the layer's: nothing merged
  f[Term::row] = static_cast<double>(rows);
  cost::add_small_gemm(f, g, f[Term::row]);  // one GEMM of every row
  if (eager) {  // one step: the gather, the up-projection, one launch, taken as it is
    StepCounts s;
    s.gather = true;
    s.rows = f[Term::row];
    s.small_rows = f[Term::small_gemm_row];
    if (one[Term::query] > 0) s.attention[0] = &one;
    s.overhead_us = eager->coefficient(Term::fixed_step);
    eager_layer(*eager, f, cost::eager_step(eager->coefficients, eager->host, s));
  }
  return f;
}

Features dispatched_features(const Batch& b, const Policy& policy, const Geometry& g, uint32_t sm, EnginePath* path,
                             const Features* new_step, EagerTime* eager) {
  const EnginePath p = engine_path(b, policy, sm);
  if (path) *path = p;
  return p == EnginePath::chunked ? policy_features(b, policy, g, nullptr, new_step, eager)
                                  : whole_context_features(b, g, eager);
}

Features dispatched_unbounded_features(const Batch& b, const Policy& policy, const Geometry& g, uint32_t sm,
                                       const Features* new_step, EagerTime* eager) {
  if (policy.kind == PolicyKind::guided) {
    // Its choice with a buffer that holds the batch whole, once: the whole context at once, or the
    // plan it chose, which streams every context whole (as at any buffer holding them).
    thread_local Batch wide;
    wide.page_size = b.page_size;
    wide.max_chunks = b.max_chunks;
    wide.cache_lengths.assign(b.cache_lengths.begin(), b.cache_lengths.end());
    wide.input_row_offsets.assign(b.input_row_offsets.begin(), b.input_row_offsets.end());
    wide.buffer_token_size = std::numeric_limits<int32_t>::max();
    const GuidedChoice choice = guided_choice(wide, policy);
    if (choice.one_shot) return whole_context_features(b, g, eager);
    return unbounded_features(b, choice.plan, g, new_step, eager);
  }
  if (unbounded_path(b, policy, sm) != EnginePath::chunked) return whole_context_features(b, g, eager);
  return unbounded_features(b, policy, g, new_step, eager);
}

bool streams_whole(const Batch& b, const Policy& policy) {
  const uint64_t n = b.buffer_token_size;
  uint64_t total = 0;
  switch (policy.kind) {
    case PolicyKind::max:  // the padded streams of cache and new tokens, one after another from row 0
      if (b.max_chunks == 0) return false;
      for (uint32_t s = 0; s < b.batch_size(); ++s) total += b.padded_length(s);
      return total <= n;
    case PolicyKind::guided:  // a candidate of two chunks may price below one: each batch is priced
      return false;
    case PolicyKind::waves:
      if (policy.waves_shares == WavesShares::even) return streams_whole(b, even_split_policy());
      [[fallthrough]];
    case PolicyKind::packed:  // no context is split: the walk never reads the buffer's size
      // waves: one chunk: every group ends in it, whole
      for (uint32_t len : b.cache_lengths) total += len;
      return total <= n && !detail::below_split_align(b, policy);
    case PolicyKind::even_split: {  // one chunk: a share that holds the longest context
      std::string why;
      const uint64_t share = detail::even_split_share(b, policy.even_split, why);
      for (uint32_t len : b.cache_lengths) total = std::max<uint64_t>(total, len);
      return share > 0 && share >= total;
    }
  }
  return false;
}

}  // namespace mlaplan::policies
