// guided's choice per batch (docs/policies.md): its candidates priced by its cost model, one by one,
// and the whole context at once where the batch fits the buffer; the cheapest runs.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "max_segment.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

using cost::Features;

namespace {

// The groups of two or more sequences that a waves candidate (proportional shares) streams across a
// chunk boundary, as (first, last) sequence pairs: they alone tell its plan from another threshold's.
// walk_waves fills every chunk to W rows before the next, so each group starts where the tokens
// before it end, whatever the grouping; a group that ends in the chunk it starts in streams its
// members whole, as groups of one would; and one sequence alone takes the chunk's rest in any group
// of one. O(B), against the walk and pricing of O(pieces) that it spares.
void crossing_groups(const Batch& b, const Policy& p, std::vector<uint32_t>& out) {
  out.clear();
  const uint64_t W = b.buffer_token_size, B = b.batch_size();
  uint64_t rows = 0;  // of the current chunk taken
  uint32_t s = 0;
  detail::StopPoll poll;
  while (s < B) {
    uint64_t blocks = 0, rest = 0, members = 0;
    uint32_t first = 0, last = 0;
    for (; s < B; ++s) {
      poll();
      const uint64_t len = b.cache_lengths[s];
      if (len == 0) continue;
      if (members > 0 && detail::waves_group_full(p, blocks)) break;
      if (members++ == 0) first = s;
      last = s;
      rest += len;
      blocks += detail::waves_blocks(b, p, s);
    }
    if (members == 0) break;
    if (rest <= W - rows) {
      rows += rest;
    } else {
      if (members > 1) {
        out.push_back(first);
        out.push_back(last);
      }
      rows = (rest - (W - rows) - 1) % W + 1;  // the last chunk it reaches
    }
    if (rows == W) rows = 0;
  }
}

// Which candidates (guided_candidates' order) plan this batch as an earlier one does, piece for
// piece, so price alike: `same[j]` is true for those. Where the buffer holds every context, every
// waves threshold streams them whole in one chunk, and so do packed (its contexts one run: a request
// without context ends its chunk) and waves/even (a share that holds the longest).
void same_plans(const Batch& b, const std::vector<Policy>& candidates, uint64_t context, std::vector<bool>& same) {
  thread_local std::vector<std::vector<uint32_t>> crossing;
  same.assign(candidates.size(), false);
  crossing.resize(candidates.size());
  const bool fits = context <= b.buffer_token_size;
  bool packed_one_chunk = false;  // candidate 0, packed, is that one chunk
  if (fits && !detail::below_split_align(b, candidates[0])) {
    size_t runs = 0;
    for (size_t i = 0; i < b.cache_lengths.size(); ++i)
      runs += b.cache_lengths[i] > 0 && (i == 0 || b.cache_lengths[i - 1] == 0);
    packed_one_chunk = runs <= 1;
  }
  for (size_t j = 0; j < candidates.size(); ++j) {
    const Policy& c = candidates[j];
    if (c.kind != PolicyKind::waves) continue;
    if (c.waves_shares == WavesShares::even) {
      std::string why;
      uint64_t longest = 0;
      for (uint32_t len : b.cache_lengths) longest = std::max<uint64_t>(longest, len);
      same[j] = fits && detail::even_split_share(b, EvenSplitVariant::vllm, why) >= longest && (packed_one_chunk || j > 1);
      continue;
    }
    if (fits) {  // nothing crosses a chunk: the one chunk
      same[j] = packed_one_chunk || j > 1;
      continue;
    }
    crossing_groups(b, c, crossing[j]);
    for (size_t i = 0; i < j && !same[j]; ++i)
      same[j] = candidates[i].kind == PolicyKind::waves && candidates[i].waves_shares != WavesShares::even &&
                crossing[i] == crossing[j];
  }
}

}  // namespace

GuidedChoice guided_choice(const Batch& b, const Policy& guided) {
  if (!guided.guide)
    throw InputError("guided: it chooses each batch's plan by a cost model; give --cost FILE, or name the file: "
                     "guided:COST.json");
  const cost::CostModel& m = *guided.guide;
  // The candidates, made once per thread and launch shape (all they take of the model): a sweep asks
  // for a choice per batch and buffer, where building nine policies each time was a tenth of it.
  thread_local std::vector<Policy> candidates;
  thread_local std::array<uint32_t, 3> made_for{};
  const std::array<uint32_t, 3> shape{m.geometry.heads, m.geometry.sms * m.geometry.blocks_per_sm, m.geometry.tile_queries};
  if (candidates.empty() || made_for != shape) {
    candidates = guided_candidates(guided);
    made_for = shape;
  }
  GuidedChoice choice{candidates[1]};  // waves, which plans every batch
  uint64_t context = 0;
  for (uint32_t len : b.cache_lengths) context += len;
  if (detail::too_many_chunks(context, b)) return choice;  // every candidate refuses it: nothing to price
  choice.priced = true;
  const Features ns = new_tokens_features(b, m.geometry);
  std::optional<EagerTime> eager;
  if (guided.guide_eager) eager.emplace(m);
  double best = std::numeric_limits<double>::infinity();
  // A candidate whose plan an earlier one has is priced alike, and the strict `<` below keeps the
  // earlier: it is not priced again (a sweep's floor was all nine, every batch and buffer).
  thread_local std::vector<bool> same;
  same_plans(b, candidates, context, same);
  for (size_t j = 0; j < candidates.size(); ++j) {
    if (same[j]) continue;
    const Policy& c = candidates[j];
    std::string why;
    if (detail::below_split_align(b, c)) continue;
    if (c.kind == PolicyKind::waves && c.waves_shares == WavesShares::even &&
        detail::even_split_share(b, EvenSplitVariant::vllm, why) == 0)
      continue;
    PolicyOutcome o;
    const Features f = policy_features(b, c, m.geometry, &o, &ns, eager ? &*eager : nullptr);
    const double us = eager ? eager->clock.dev : m.predict_us(f);
    if (us < best) {
      best = us;
      choice.plan = c;
      choice.terms = f;
      choice.outcome = o;
      if (eager) choice.clock = eager->clock;
    }
  }
  if (context + detail::new_tokens(b) <= b.buffer_token_size) {
    const Features whole = whole_context_features(b, m.geometry, eager ? &*eager : nullptr);
    if ((eager ? eager->clock.dev : m.predict_us(whole)) < best) {
      choice.plan = candidates[1];
      choice.one_shot = true;
    }
  }
  return choice;
}

Policy detail::guided_plan(const Batch& b, const Policy& guided) { return guided_choice(b, guided).plan; }

bool same_pricing(const cost::CostModel& a, const cost::CostModel& b, bool eager) {
  const cost::Geometry &g = a.geometry, &h = b.geometry;
  if (!g.same_terms(h) || a.coefficients != b.coefficients) return false;
  if (!eager) return true;
  return a.host && b.host && a.host->us == b.host->us && a.host->pad_v == b.host->pad_v;
}

}  // namespace mlaplan::policies
