// What one MLA layer's chunked prefill does, counted in the units a cost model charges for: the
// iterations, the rows gathered and up-projected, the query-key pairs the attention computes and the
// SM time its launches leave idle, the queries each launch reads and the queries merged by LSE.
// docs/cost-model.md defines each term; explore/policy_cost.hpp counts them for every policy.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace mlaplan::cost {

// The attention kernel's launch geometry on one GPU: how many thread blocks run at once and how many
// queries one block takes. FlashAttention-style kernels launch one block per (query tile, head).
struct Geometry {
  uint32_t heads = 1;          // local heads (num_heads / TP)
  uint32_t sms = 132;          // streaming multiprocessors (132 on an H100/H200 SXM)
  uint32_t blocks_per_sm = 1;  // resident blocks per SM for the attention kernel
  uint32_t tile_queries = 128; // queries per block (kBlockM)

  double slots() const { return static_cast<double>(sms) * blocks_per_sm; }
  // A sequence's queries rounded up to whole tiles: a block computes every row of its tile, also
  // the rows past the sequence's last query.
  uint64_t tile_rows(uint64_t queries) const {
    const uint64_t t = tile_queries;
    // Tiles are powers of two in every kernel calibrated: a mask instead of a division, which a
    // sweep with a cost model does a billion times.
    return (t & (t - 1)) == 0 ? (queries + t - 1) & ~(t - 1) : (queries + t - 1) / t * t;
  }
  // The tiles themselves: tile_rows / tile_queries, a shift where the tile is a power of two.
  uint64_t tiles(uint64_t queries) const {
    const uint64_t t = tile_queries;
    return (t & (t - 1)) == 0 ? (queries + t - 1) >> __builtin_ctzll(t) : (queries + t - 1) / t;
  }
};

// The model's terms in the cost file's order; Features holds one value per term.
enum class Term : uint8_t {
  batch,           // 1 per layer and batch: the fixed launches every batch pays
  fixed_step,      // steps that are not iterations: the new tokens' own step, vLLM's final merge
  iteration,       // iterations through the buffer (the sweep's count)
  row,             // rows gathered from the cache and up-projected (new tokens' rows included)
  query,           // query rows read by attention launches (every launch, also where a query sees no key)
  merged_query,    // query rows merged into a running output by LSE
  mpair,           // millions of query-key pairs the attention computes, in whole query tiles
  idle_mpair,      // millions of pair-times the launches leave the GPU's block slots idle
  block,           // (query tile, head) blocks that compute: each loads its tile and writes its output
  empty_block,     // blocks of a launch's grid past a sequence's queries, which exit at once
};
inline constexpr size_t kTerms = 10;
// Terms a cost file may leave out (taken as 0): those added after files without them were written.
inline constexpr bool optional_term(Term t) { return t == Term::block || t == Term::empty_block; }

// The name of a term's coefficient in a cost file: "per_iteration_us", ...
const char* coefficient_name(Term t);
// What one unit of the term is, for help texts and docs: "iteration through the buffer", ...
const char* term_unit(Term t);

struct Features {
  std::array<double, kTerms> values{};

  double& operator[](Term t) { return values[static_cast<size_t>(t)]; }
  double operator[](Term t) const { return values[static_cast<size_t>(t)]; }
  Features& operator+=(const Features& o);
};

// Counts one attention launch, one sequence at a time: its queries, its keys and whether the mask is
// causal (bottom-right aligned: the last query sees every key). The launch's blocks are (query tile,
// head) pairs, each computing its whole tile against the keys up to its last row's diagonal; the
// launch takes at least its longest block and at least its waves of blocks over the block slots,
// each wave as long as the mean block, and what the slots do not fill of that is idle. Its grid is
// FlashAttention-2's varlen grid: the most queries' tiles for every sequence and head.
class Launch {
 public:
  explicit Launch(const Geometry& g) : g_(&g) {}
  // A sequence's queries attending its keys: the launch's own sequence.
  void add(uint64_t queries, uint64_t keys, bool causal) {
    add_queries(queries);
    add_work(queries, keys, causal);
    add_to_grid(1, queries);
  }
  // A sequence of the launch with keys and no queries (a gap in the buffer's keys, MAX).
  void add_gap() { add_to_grid(1, 0); }
  // The grid of a launch whose sequences are every sequence of the batch, whatever its keys:
  // `sequences`, the most queries one has, and their tiles (Geometry::tiles), summed.
  void set_grid(uint64_t sequences, uint64_t most_queries, uint64_t tiles) {
    sequences_ = sequences;
    most_tiles_ = g_->tiles(most_queries);
    grid_tiles_ = tiles;
  }
  // Queries the launch reads (every sequence's, also one with no keys in it).
  void add_queries(uint64_t queries) { queries_ += queries; }
  // The work of a sequence whose queries are counted by add_queries.
  void add_work(uint64_t queries, uint64_t keys, bool causal);
  // The work of sequences that all see `keys` keys without a mask: their queries in whole tiles
  // (Geometry::tile_rows), summed.
  void add_work_many(uint64_t tile_rows_sum, uint64_t keys);
  // Adds the launch, repeated `times` times, to `f`: its queries, pairs and idle pairs (nothing for
  // a launch without queries).
  void finish(Features& f, uint64_t times = 1) const;
  uint64_t queries() const { return queries_; }

 private:
  void add_to_grid(uint64_t sequences, uint64_t queries) {
    const uint64_t tiles = g_->tiles(queries);
    sequences_ += sequences;
    most_tiles_ = std::max(most_tiles_, tiles);
    grid_tiles_ += tiles;
  }

  const Geometry* g_;
  uint64_t queries_ = 0;
  double work_ = 0;      // pairs summed over the blocks of one head
  double longest_ = 0;   // the largest block's pairs
  double tiles_ = 0;     // blocks of one head that compute something (query tiles with keys)
  // The grid: its sequences, the tiles each has (the most queries'), and the tiles holding queries.
  uint64_t sequences_ = 0, most_tiles_ = 0, grid_tiles_ = 0;
};

}  // namespace mlaplan::cost
