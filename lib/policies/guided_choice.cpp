// guided's choice per batch (docs/policies.md): its candidates priced by its cost model, one by one,
// and the whole context at once where the batch fits the buffer; the cheapest runs.
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
  for (const Policy& c : candidates) {
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
  if (g.heads != h.heads || g.sms != h.sms || g.blocks_per_sm != h.blocks_per_sm || g.tile_queries != h.tile_queries ||
      g.scheduler != h.scheduler || a.coefficients != b.coefficients)
    return false;
  if (!eager) return true;
  return a.host && b.host && a.host->us == b.host->us && a.host->pad_v == b.host->pad_v;
}

}  // namespace mlaplan::policies
