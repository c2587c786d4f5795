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
    case Term::sequence: return "per_sequence_us";
    case Term::causal_block: return "per_causal_block_us";
    case Term::small_gemm_row: return "per_small_gemm_row_us";
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
    case Term::sequence: return "sequence of a launch with queries and keys";
    case Term::causal_block: return "(query tile, head) block of a causal launch";
    case Term::small_gemm_row: return "row up-projected by a GEMM of at most geometry.small_gemm_rows rows";
  }
  return "";
}

Features& Features::operator+=(const Features& o) {
  for (size_t i = 0; i < kTerms; ++i) values[i] += o.values[i];
  return *this;
}

}  // namespace mlaplan::cost
