// What one MLA layer's chunked prefill does, counted in the units a cost model charges for: the
// iterations, the rows gathered and up-projected, the query-key pairs the attention computes and the
// SM time its launches leave idle, the queries each launch reads and the queries merged by LSE.
// docs/cost-model.md defines each term; policies/policy_cost.hpp counts them for every policy.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <limits>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mlaplan::cost {

// How a varlen launch hands its (query tile, head) blocks to the GPU's slots.
enum class Scheduler : uint8_t {
  // FlashAttention-2: a grid of (tile, sequence, head), the tile fastest, each sequence given the most
  // queries' tiles (those past its queries exit at once); blocks go out in grid order as slots free.
  grid,
  // FlashAttention-3 on SM90: a persistent kernel, one CTA per slot, taking tiles from a counter;
  // only a sequence's own tiles exist, and the sequences are sorted longest first
  // (hopper/tile_scheduler.hpp, VarlenDynamicPersistentTileScheduler; flash_prepare_scheduler.cu).
  // Each sequence's blocks taken at their mean length.
  sorted,
  // The same, and a causal launch's tiles as the kernel hands them out: head section by L2 head section,
  // longest first within each (l2_section_heads); where a causal sequence of several tiles takes more
  // than one section, the launch is scheduled block by block in that order (Launch::sectioned_span).
  sectioned,
};

// The attention kernel's launch geometry on one GPU: how many thread blocks run at once and how many
// queries one block takes. FlashAttention-style kernels run one block per (query tile, head).
struct Geometry {
  uint32_t heads = 1;          // local heads (num_heads / TP)
  uint32_t sms = 132;          // streaming multiprocessors (132 on an H100/H200 SXM)
  uint32_t blocks_per_sm = 1;  // resident blocks per SM for the attention kernel
  uint32_t tile_queries = 128; // queries per block (kBlockM)
  Scheduler scheduler = Scheduler::grid;
  // Up-projections (one GEMM: a chunk's rows, the new tokens', the whole context's) of at most this many
  // rows also pay per_small_gemm_row_us a row: on an H100 at TP 1, larger ones ran 12% faster a row
  // (docs/cost-model.md, "The terms"). 0: no GEMM is small (a file without the term).
  uint64_t small_gemm_rows = 0;

  // Two geometries count the same terms for every batch.
  bool same_terms(const Geometry& o) const {
    return heads == o.heads && sms == o.sms && blocks_per_sm == o.blocks_per_sm && tile_queries == o.tile_queries &&
           scheduler == o.scheduler && small_gemm_rows == o.small_gemm_rows;
  }
  double slots() const { return static_cast<double>(sms) * blocks_per_sm; }
  // A sequence's query tiles: a block computes every row of its tile, also the rows past the
  // sequence's last query. Tiles are powers of two in every kernel calibrated: a shift instead of a
  // division, which a sweep with a cost model does a billion times.
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
  sequence,        // sequences of a launch that compute (queries and keys): FlashAttention-3's cost per sequence
  causal_block,    // blocks of a causal launch: each runs its diagonal key blocks masked
  small_gemm_row,  // rows up-projected by a GEMM of at most Geometry::small_gemm_rows rows (also counted in row)
};
inline constexpr size_t kTerms = 13;
// Terms a cost file may leave out (taken as 0): those added after files without them were written.
inline constexpr bool optional_term(Term t) {
  return t == Term::block || t == Term::empty_block || t == Term::sequence || t == Term::causal_block ||
         t == Term::small_gemm_row;
}

// FlashAttention-3 hands a causal sequence's tiles out one section of heads at a time, longest tile
// first within it, as many heads to a section as keep its K and V in an 8 MiB share of L2: the
// largest of 16, 8, 4, 2, 1 whose key blocks (kBlockN 128 rows of d + dv = 192 + 128 bf16 values, as
// MLA's prefill has) number at most 8 MiB / (128 x 320 x 2 bytes) = 102 (flash_prepare_scheduler.cu,
// get_nheads_in_l2; tile_scheduler.hpp, VarlenDynamicPersistentTileScheduler with LPT).
inline constexpr uint64_t kL2KeyBlockRows = 128, kL2KeyBlocks = 102;
inline uint32_t l2_section_heads(uint64_t keys, uint32_t heads) {
  const uint64_t blocks = std::max<uint64_t>(1, (keys + kL2KeyBlockRows - 1) / kL2KeyBlockRows);
  uint32_t h = 16;
  while (h > 1 && h * blocks > kL2KeyBlocks) h /= 2;
  return std::min(h, heads);
}

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

// Of one up-projection GEMM of `rows` rows, those that count as small (Geometry::small_gemm_rows): all or none.
inline double small_gemm(const Geometry& g, double rows) {
  return rows > 0 && rows <= static_cast<double>(g.small_gemm_rows) ? rows : 0;
}
// The same GEMM, `times` alike, counted in Term::small_gemm_row; its rows themselves are counted in Term::row
// where the caller counts them.
inline void add_small_gemm(Features& f, const Geometry& g, double rows, double times = 1) {
  f[Term::small_gemm_row] += small_gemm(g, rows) * times;
}

// Counts one attention launch, one sequence at a time: its queries, its keys and whether the mask is
// causal (bottom-right aligned: the last query sees every key). The launch's blocks are (query tile,
// head) pairs, each computing its whole tile against the keys up to its last row's diagonal. Its grid
// is FlashAttention-2's varlen grid, (tile, sequence, head) with the tile fastest: the most queries'
// tiles for every sequence and head, those past a sequence's queries exiting at once. The GPU hands
// the blocks out in that order, each to the first slot that frees; the launch lasts until its last
// block ends (span()), and what the slots do not fill of that is idle. Sequences are added in the
// grid's order.
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
  void add_work(uint64_t queries, uint64_t keys, bool causal) {
    if (queries == 0 || keys == 0) return;
    ++working_;
    if (g_->scheduler == Scheduler::sectioned) add_sorted_seq(queries, keys, causal);
    if (causal) add_causal(queries, keys);
    else add_run(static_cast<double>(g_->tile_queries) * static_cast<double>(keys), 0, g_->tiles(queries));
  }
  // `count` blocks of one head with `pairs` each, of `sequences` sequences, added in bulk where the
  // launch's sequences are too many to add one at a time (the even split's chunks): `ahead`, the pairs
  // of the head's blocks dispatched before the last of them. Their queries and grid are added apart.
  void add_blocks(double pairs, uint64_t count, double ahead, uint64_t sequences) {
    working_ += sequences;
    bulk_ = true;  // no sequence to schedule tile by tile (the even split's are not causal)
    add_run(pairs, 0, count, ahead);
  }
  // Adds the launch, repeated `times` times, to `f`: its queries, pairs and idle pairs (nothing for
  // a launch without queries). `one`, where given, gets one launch's terms added (eager time prices
  // each launch; `f` is summed as without it).
  void finish(Features& f, uint64_t times = 1, Features* one = nullptr) const;
  uint64_t queries() const { return queries_; }
  // How long the launch lasts, in pairs of one block slot. One wave: its longest block; equal
  // blocks: whole waves of them; otherwise when the last head's latest-ending block ends, each
  // block starting as the work handed out before it drains through the slots (docs/cost-model.md).
  double span() const;

 private:
  void add_to_grid(uint64_t sequences, uint64_t queries) {
    const uint64_t tiles = g_->tiles(queries);
    sequences_ += sequences;
    most_tiles_ = std::max(most_tiles_, tiles);
    grid_tiles_ += tiles;
  }

  // Tile i holds queries [i t, (i + 1) t) and computes the keys up to its last row's diagonal,
  // k - q + (i + 1) t; the last tile, whole too, computes all k.
  void add_causal(uint64_t queries, uint64_t keys) {
    const double k = static_cast<double>(keys), t = g_->tile_queries;
    const double offset = std::max(0.0, k - static_cast<double>(queries));
    causal_tiles_ += static_cast<double>(g_->tiles(queries));
    add_run(t * (offset + t), t * t, g_->tiles(queries) - 1);
    add_run(t * k, 0, 1);
  }
  // Inline: a sweep adds a billion. A run of `count` blocks of one head, first, first + step, ...,
  // the last not shorter than the others: where its last block ends is kept (as work ahead of it
  // in the head, plus its length times the slots), the only one of the run span() needs.
  void add_run(double first, double step, uint64_t count) {
    const double c = static_cast<double>(count);
    add_run(first, step, count, work_ + (step == 0 ? first * (c - 1) : (first + first + step * (c - 2)) / 2 * (c - 1)));
  }
  // The same, with `ahead` the pairs of the head's blocks dispatched before the run's last.
  void add_run(double first, double step, uint64_t count, double ahead) {
    if (count == 0) return;
    const double c = static_cast<double>(count), last = first + step * (c - 1);
    if ((step != 0 && count > 1) || (tiles_ > 0 && first != longest_)) alike_ = false;
    peak_ = std::max(peak_, ahead + last * g_->slots());
    if (g_->scheduler != Scheduler::grid) add_sorted_run((first + last) / 2, c);
    squares_ += c * first * first;
    if (step != 0) squares_ += first * step * c * (c - 1) + step * step * (c - 1) * c * (2 * c - 1) * (1.0 / 6);
    work_ += (first + last) / 2 * c;
    tiles_ += c;
    longest_ = std::max(longest_, last);
  }

  const Geometry* g_;
  uint64_t queries_ = 0;
  uint64_t working_ = 0; // sequences with queries and keys
  double work_ = 0;      // pairs summed over the blocks of one head
  double longest_ = 0;   // the largest block's pairs
  double tiles_ = 0;     // blocks of one head that compute something (query tiles with keys)
  double squares_ = 0;   // the blocks' pairs squared, summed (one head)
  double peak_ = 0;      // the latest-ending block of a head: work ahead of it + its pairs x slots
  // The sorted scheduler's runs: (a block's mean pairs, blocks of one head), one per sequence; the
  // first few inline (a packed chunk holds one to three), the rest on the heap.
  static constexpr size_t kInlineRuns = 8;
  struct Run {
    double pairs, blocks;
  };
  std::array<Run, kInlineRuns> inline_runs_{};
  size_t n_runs_ = 0;
  std::vector<Run> more_runs_;
  void add_sorted_run(double pairs, double count) {
    if (n_runs_ < kInlineRuns) inline_runs_[n_runs_] = {pairs, count};
    else more_runs_.push_back({pairs, count});
    ++n_runs_;
  }
  double sorted_span() const;
  // The sorted scheduler's sequences as added, for a launch whose causal tiles go out section by
  // section (sectioned_): its span is then that order's schedule, block by block (sectioned_span).
  struct Seq {
    uint64_t queries, keys;
    bool causal;
  };
  std::array<Seq, kInlineRuns> inline_seqs_{};
  size_t n_seqs_ = 0;
  std::vector<Seq> more_seqs_;
  void add_sorted_seq(uint64_t queries, uint64_t keys, bool causal) {
    if (n_seqs_ < kInlineRuns) inline_seqs_[n_seqs_] = {queries, keys, causal};
    else more_seqs_.push_back({queries, keys, causal});
    ++n_seqs_;
    // Its tiles differ and run head section by head section: the longest of a later section start
    // after an earlier section's shortest, which no run at the mean length shows.
    if (causal && g_->tiles(queries) > 1 && l2_section_heads(keys, g_->heads) < g_->heads) sectioned_ = true;
  }
  double sectioned_span() const;
  bool sectioned_ = false;
  bool bulk_ = false;      // blocks added in bulk (add_blocks): no sequences to schedule one by one
  double causal_tiles_ = 0;  // query tiles (of one head) of the causal sequences
  bool alike_ = true;    // every block has the same pairs
  // The grid: its sequences, the tiles each has (the most queries'), and the tiles holding queries.
  uint64_t sequences_ = 0, most_tiles_ = 0, grid_tiles_ = 0;
};

// Inline: a sweep finishes a launch per chunk, for every batch and setting.
inline double Launch::span() const {
  if (tiles_ == 0) return 0;
  const double slots = g_->slots(), heads = g_->heads, blocks = tiles_ * heads;
  if (blocks <= slots) return longest_;                     // one wave: the longest block
  if (alike_) return std::ceil(blocks / slots) * longest_;  // whole waves of equal blocks
  if (g_->scheduler != Scheduler::grid)
    return std::max(sectioned_ && !bulk_ ? sectioned_span() : sorted_span(), longest_);
  // Unequal blocks handed out in grid order as slots free. The last head's block j starts once the
  // work before it (every earlier head's, and the head's own ahead of j) has drained through the
  // slots, less what the blocks then running still have to do: on average half a block of the
  // length-biased mean, sum d^2 / sum d (renewal theory's mean residual). A run's last block ends
  // last of its run, so add_run keeps that one. The launch lasts at least its longest block and the
  // work spread evenly.
  const double residual = squares_ / work_ / 2;
  const double end = ((heads - 1) * work_ + peak_) / slots - residual;
  return std::max({longest_, work_ * heads / slots, end});
}

namespace detail {

// Slots that free at the same time: (that time, how many).
using SlotGroup = std::pair<double, double>;

// Adds `slots` slots freeing at `at` to the live groups, groups[head..], kept sorted by time. A new
// time is one of the latest, so the place is sought from the back.
inline void add_slots(std::vector<SlotGroup>& groups, size_t head, double at, double slots) {
  size_t i = groups.size();
  while (i > head && groups[i - 1].first >= at) --i;  // the first live group freeing at `at` or later
  if (i < groups.size() && groups[i].first == at) {
    groups[i].second += slots;
    return;
  }
  groups.emplace_back();
  for (size_t k = groups.size() - 1; k > i; --k) groups[k] = groups[k - 1];
  groups[i] = {at, slots};
}

}  // namespace detail

// The sorted scheduler (FlashAttention-3): the sequences' blocks handed out longest first, each to
// the slot that frees first. Simulated run by run over groups of slots that free at the same time
// (at most one group per slot, and whole waves of a run added at once), each sequence's blocks taken
// at their mean length.
inline double Launch::sorted_span() const {
  const double slots = g_->slots(), heads = g_->heads;
  if (n_runs_ == 1)  // one sequence: whole waves, and a last part-wave if blocks are left
    return std::ceil(inline_runs_[0].blocks * heads / slots) * inline_runs_[0].pairs;
  thread_local std::vector<Run> runs;
  thread_local std::vector<detail::SlotGroup> groups;  // sorted by time; groups[head..] are live
  // Longest first. For as many runs as std::sort leaves to its insertion sort (16), that sort here,
  // on the way in: a launch holds 11 at short-chat's mean, and the copy and sort were a fifth of this.
  const size_t inline_n = std::min(n_runs_, kInlineRuns);
  if (n_runs_ <= 16) {
    runs.resize(n_runs_);
    for (size_t i = 0; i < n_runs_; ++i) {
      const Run r = i < inline_n ? inline_runs_[i] : more_runs_[i - inline_n];
      size_t j = i;
      for (; j > 0 && runs[j - 1].pairs < r.pairs; --j) runs[j] = runs[j - 1];
      runs[j] = r;
    }
  } else {
    runs.assign(inline_runs_.begin(), inline_runs_.begin() + static_cast<std::ptrdiff_t>(inline_n));
    runs.insert(runs.end(), more_runs_.begin(), more_runs_.end());
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.pairs > b.pairs; });
  }
  // A block starts when the earliest slot frees, no later than the slots' mean time, which is at most
  // all the launch's work but the block's own spread evenly (list scheduling's bound, Graham's). So
  // once the latest slot frees after that plus the next run's block, no block left ends later, and
  // the span is known. The margin keeps that so through the simulation's rounding, so the answer is
  // the one the whole simulation gives. Short-chat's launches stop after 7 of their 11 runs at the mean.
  double work = 0;
  for (const Run& r : runs) work += r.pairs * r.blocks;
  const double even = work * heads / slots, late = 1 - 1 / slots;
  groups.assign(1, {0.0, slots});
  size_t head = 0;
  for (const auto& [d, per_head] : runs) {
    if (groups.back().first > (even + d * late) * (1 + 1e-9)) break;
    double left = per_head * heads;
    while (left > 0) {
      // The band: the groups that free within one block of the earliest. The scan stops once they
      // hold more slots than blocks are left, for then this is the run's last, partial round.
      const double reach = groups[head].first + d;
      size_t end = head;
      double band = 0;
      for (; end < groups.size() && groups[end].first < reach; ++end)
        if ((band += groups[end].second) > left) break;
      if (band > left) {
        // One block to each slot of the earliest-freeing groups, groups[head..end), and the rest to
        // some of groups[end]'s: all of them free again past the band.
        const double rest = left - (band - groups[end].second);
        const size_t first = head;
        head = end;
        for (size_t i = first; i < end; ++i) detail::add_slots(groups, head, groups[i].first + d, groups[i].second);
        if (rest > 0) {
          groups[head].second -= rest;
          detail::add_slots(groups, head, groups[head].first + d, rest);
        }
        break;
      }
      // Whole rounds over the band: each of its slots takes a block per round, as long as no later
      // group frees before a round's last block starts (slots busy with a long sequence's blocks
      // take none of a short one's meanwhile).
      double rounds = std::floor(left / band);
      if (end < groups.size()) rounds = std::min(rounds, std::floor((groups[end].first - groups[end - 1].first) / d));
      if (rounds > 0) {
        for (size_t i = head; i < end; ++i) groups[i].first += rounds * d;
        left -= rounds * band;
        continue;
      }
      // A later group frees before a whole round: the earliest group's slots take a block each.
      const auto [at, taken] = groups[head];
      ++head;
      detail::add_slots(groups, head, at + d, taken);
      left -= taken;
    }
  }
  return groups.back().first;  // the latest: groups stay sorted
}

// The sorted scheduler where a causal sequence's heads run in L2 sections (l2_section_heads): the
// sequences in FlashAttention-3's order (causal: the most keys past the queries first, by key and
// query blocks; else the most key blocks; ties in batch order: a stable merge sort), each causal
// sequence section by section, its tiles longest first, a section's heads taking each tile in turn;
// every block to the slot that frees first (a heap). Tile by tile: the tiles of a causal sequence
// differ, and which ends last depends on each one's length.
inline double Launch::sectioned_span() const {
  const double t = g_->tile_queries;
  const uint32_t heads = g_->heads;
  thread_local std::vector<Seq> seqs;
  seqs.assign(inline_seqs_.begin(), inline_seqs_.begin() + static_cast<std::ptrdiff_t>(std::min(n_seqs_, kInlineRuns)));
  seqs.insert(seqs.end(), more_seqs_.begin(), more_seqs_.end());
  auto key = [&](const Seq& s) {
    const int64_t n = static_cast<int64_t>((s.keys + kL2KeyBlockRows - 1) / kL2KeyBlockRows * kL2KeyBlockRows);
    return s.causal ? n - static_cast<int64_t>(g_->tiles(s.queries) * g_->tile_queries) : n;
  };
  std::stable_sort(seqs.begin(), seqs.end(), [&](const Seq& a, const Seq& b) { return key(a) > key(b); });
  // A sweep prices the same launch again and again (the one-shot step at every buffer, the new tokens'
  // step under every policy): each schedule is worked out once per thread, keyed by the geometry and
  // the sequences in order.
  thread_local std::vector<uint64_t> id;
  id.assign({heads, static_cast<uint64_t>(g_->slots()), g_->tile_queries});
  for (const Seq& s : seqs) {
    id.push_back(s.queries << 1 | static_cast<uint64_t>(s.causal));
    id.push_back(s.keys);
  }
  struct Hash {
    size_t operator()(const std::vector<uint64_t>& v) const {
      uint64_t h = 1469598103934665603ull;
      for (uint64_t x : v) h = (h ^ x) * 1099511628211ull;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  thread_local std::unordered_map<std::vector<uint64_t>, double, Hash> known;
  if (const auto it = known.find(id); it != known.end()) return it->second;
  if (known.size() >= (1u << 16)) known.clear();  // bounded: a long sweep's batches rarely repeat
  // The slots' free times, kept sorted. A list of blocks (a section of a causal sequence, longest tile
  // first; a sequence's equal blocks) goes out P at a time: block i to the i-th slot to free, as list
  // scheduling does as long as no block placed before it ends before that slot frees (checked; the
  // kernel's sections pass it wherever tried). The new ends are sorted (a section's come out longest
  // first: reversed, an insertion sort has little to do) and merged with the slots left. Where the
  // check fails, the rest of the part goes block by block to a heap. A heap for every block cost a
  // sweep 3-4x its time; this, about one pass over the slots per part.
  const size_t P = static_cast<size_t>(g_->slots());
  thread_local std::vector<double> free_tl, ends_tl, merged_tl, list_tl;
  std::vector<double>&free = free_tl, &ends = ends_tl, &merged = merged_tl, &list = list_tl;
  free.assign(P, 0.0);
  ends.resize(P);
  merged.resize(P);
  double end = 0;
  auto place = [&](const double* b, size_t m) {
    for (size_t c = 0; c < m; c += P) {
      const size_t k = std::min(P, m - c);
      double first_end = std::numeric_limits<double>::infinity();
      size_t i = 0;
      for (; i < k && free[i] <= first_end; ++i) {
        ends[i] = free[i] + b[c + i];
        first_end = std::min(first_end, ends[i]);
      }
      for (size_t j = 0; j < i; ++j) end = std::max(end, ends[j]);
      if (i == k) {
        if (k > 1 && ends[0] > ends[k - 1]) std::reverse(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(k));
        for (size_t j = 1; j < k; ++j) {  // insertion sort: nearly sorted already
          const double v = ends[j];
          size_t h = j;
          for (; h > 0 && ends[h - 1] > v; --h) ends[h] = ends[h - 1];
          ends[h] = v;
        }
        std::merge(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(k), free.begin() + static_cast<std::ptrdiff_t>(k),
                   free.end(), merged.begin());
        free.swap(merged);
        continue;
      }
      // A block placed ends before the next slot frees: the rest of the part block by block.
      std::copy(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(i), free.begin());
      std::make_heap(free.begin(), free.end(), std::greater<>());
      for (size_t j = i; j < k; ++j) {
        std::pop_heap(free.begin(), free.end(), std::greater<>());
        free.back() += b[c + j];
        end = std::max(end, free.back());
        std::push_heap(free.begin(), free.end(), std::greater<>());
      }
      std::sort(free.begin(), free.end());
    }
  };
  for (const Seq& s : seqs) {
    const uint64_t n = g_->tiles(s.queries);
    const double k = static_cast<double>(s.keys);
    if (!s.causal) {
      list.assign(n * heads, t * k);
      place(list.data(), list.size());
      continue;
    }
    const double offset = std::max(0.0, k - static_cast<double>(s.queries));
    const uint32_t section = l2_section_heads(s.keys, heads);
    for (uint32_t h0 = 0; h0 < heads; h0 += section) {
      const uint32_t in = std::min(section, heads - h0);
      list.assign(in, t * k);  // the last tile, whole
      for (uint64_t i = n - 1; i-- > 0;) list.insert(list.end(), in, t * (offset + static_cast<double>(i + 1) * t));
      place(list.data(), list.size());
    }
  }
  known.emplace(id, end);
  return end;
}

inline void Launch::finish(Features& f, uint64_t times, Features* one) const {
  if (queries_ == 0 || times == 0) return;
  const double n = static_cast<double>(times), heads = g_->heads;
  // Per head, the slots' share of the span not spent on work is idle.
  const double idle = tiles_ > 0 ? std::max(0.0, span() * (g_->slots() / heads) - work_) : 0;
  f[Term::query] += n * static_cast<double>(queries_);
  f[Term::mpair] += n * work_ * 1e-6;
  f[Term::idle_mpair] += n * idle * 1e-6;
  f[Term::block] += n * tiles_ * heads;
  f[Term::sequence] += n * static_cast<double>(working_);
  f[Term::causal_block] += n * causal_tiles_ * heads;
  if (g_->scheduler == Scheduler::grid)  // the sorted scheduler makes no tiles past a sequence's queries
    f[Term::empty_block] += n * heads * static_cast<double>(sequences_ * most_tiles_ - grid_tiles_);
  if (one) {
    Features& o = *one;
    o[Term::query] += static_cast<double>(queries_);
    o[Term::mpair] += work_ * 1e-6;
    o[Term::idle_mpair] += idle * 1e-6;
    o[Term::block] += tiles_ * heads;
    o[Term::sequence] += static_cast<double>(working_);
    o[Term::causal_block] += causal_tiles_ * heads;
    if (g_->scheduler == Scheduler::grid) o[Term::empty_block] += heads * static_cast<double>(sequences_ * most_tiles_ - grid_tiles_);
  }
}

}  // namespace mlaplan::cost
