#include "mlaplan/cost/features.hpp"

#include <algorithm>
#include <cmath>

namespace mlaplan::cost {

const char* coefficient_name(Term t) {
  switch (t) {
    case Term::batch: return "per_batch_us";
    case Term::fixed_step: return "per_fixed_step_us";
    case Term::iteration: return "per_iteration_us";
    case Term::row: return "per_row_us";
    case Term::query: return "per_query_us";
    case Term::merged_query: return "per_merged_query_us";
    case Term::mpair: return "per_mpair_us";
    case Term::idle_mpair: return "per_idle_mpair_us";
    case Term::block: return "per_block_us";
    case Term::empty_block: return "per_empty_block_us";
  }
  return "";
}

const char* term_unit(Term t) {
  switch (t) {
    case Term::batch: return "batch (once per layer)";
    case Term::fixed_step: return "step that is not an iteration (the new tokens' step, a final merge)";
    case Term::iteration: return "iteration through the buffer";
    case Term::row: return "row gathered and up-projected";
    case Term::query: return "query row read by an attention launch";
    case Term::merged_query: return "query row merged by log-sum-exp";
    case Term::mpair: return "million query-key pairs computed (in whole query tiles)";
    case Term::idle_mpair: return "million pair-times of block slots left idle";
    case Term::block: return "(query tile, head) block that computes";
    case Term::empty_block: return "block of a launch's grid with no queries";
  }
  return "";
}

Features& Features::operator+=(const Features& o) {
  for (size_t i = 0; i < kTerms; ++i) values[i] += o.values[i];
  return *this;
}

void Launch::add_work(uint64_t queries, uint64_t keys, bool causal) {
  if (queries == 0 || keys == 0) return;
  if (!causal) {
    add_work_many(g_->tile_rows(queries), keys);
    return;
  }
  // Tile i holds queries [i t, (i + 1) t) and computes the keys up to its last row's diagonal,
  // k - q + (i + 1) t; the last tile, whole too, computes all k.
  const double q = static_cast<double>(queries), k = static_cast<double>(keys), t = g_->tile_queries;
  const double full = static_cast<double>(g_->tiles(queries) - 1);
  const double offset = std::max(0.0, k - q);
  work_ += t * full * offset + t * t * full * (full + 1) / 2 + t * k;
  tiles_ += full + 1;
  longest_ = std::max(longest_, t * k);
}

void Launch::add_work_many(uint64_t tile_rows_sum, uint64_t keys) {
  if (tile_rows_sum == 0 || keys == 0) return;
  const double k = static_cast<double>(keys);
  work_ += static_cast<double>(tile_rows_sum) * k;
  tiles_ += static_cast<double>(g_->tiles(tile_rows_sum));  // a sum of whole tiles' rows
  longest_ = std::max(longest_, g_->tile_queries * k);
}

void Launch::finish(Features& f, uint64_t times) const {
  if (queries_ == 0 || times == 0) return;
  const double n = static_cast<double>(times);
  // The blocks run in waves of `slots`: the launch lasts at least its longest block and at least its
  // waves, each as long as the mean block (exact where the blocks are alike: 160 equal blocks on 132
  // slots take two blocks' time, not 1.2). Per head, the slots' share of that not spent on work is idle.
  double idle = 0;
  if (tiles_ > 0) {
    const double slots = g_->slots(), heads = g_->heads, blocks = tiles_ * heads;
    // One wave (most of a sweep's launches): the longest block is at least the mean one.
    const double span = blocks <= slots ? longest_ : std::max(longest_, std::ceil(blocks / slots) * work_ / tiles_);
    idle = std::max(0.0, span * (slots / heads) - work_);
  }
  f[Term::query] += n * static_cast<double>(queries_);
  f[Term::mpair] += n * work_ * 1e-6;
  f[Term::idle_mpair] += n * idle * 1e-6;
  const double heads = g_->heads;
  f[Term::block] += n * tiles_ * heads;
  f[Term::empty_block] += n * heads * static_cast<double>(sequences_ * most_tiles_ - grid_tiles_);
}

}  // namespace mlaplan::cost
