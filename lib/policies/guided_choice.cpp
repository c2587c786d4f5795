// guided's choice per batch (docs/policies.md): its candidates priced by its cost model, one by one,
// and the whole context at once where the batch fits the buffer; the cheapest runs.
#include <limits>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "max_segment.hpp"
#include "policy_walk.hpp"

namespace mlaplan::policies {

using cost::Features;

detail::GuidedChoice detail::guided_choice(const Batch& b, const Policy& guided) {
  if (!guided.guide)
    throw InputError("guided: it chooses each batch's plan by a cost model; give --cost FILE, or name the file: "
                     "guided:COST.json");
  const cost::CostModel& m = *guided.guide;
  const std::vector<Policy> candidates = guided_candidates(guided);
  const Features ns = new_tokens_features(b, m.geometry);
  auto price = [&](auto&& features) {
    if (!guided.guide_eager) return m.predict_us(features(nullptr));
    EagerTime e(m);
    features(&e);
    return e.clock.dev;
  };
  GuidedChoice choice{candidates[1], false};  // waves, which plans every batch
  double best = std::numeric_limits<double>::infinity();
  for (const Policy& c : candidates) {
    std::string why;
    if (detail::below_split_align(b, c)) continue;
    if (c.kind == PolicyKind::waves && c.waves_shares == WavesShares::even &&
        detail::even_split_share(b, EvenSplitVariant::vllm, why) == 0)
      continue;
    const double us = price([&](EagerTime* e) { return policy_features(b, c, m.geometry, nullptr, &ns, e); });
    if (us < best) {
      best = us;
      choice.plan = c;
    }
  }
  uint64_t total = detail::new_tokens(b);
  for (uint32_t len : b.cache_lengths) total += len;
  if (total <= b.buffer_token_size &&
      price([&](EagerTime* e) { return whole_context_features(b, m.geometry, e); }) < best) {
    choice.plan = candidates[1];
    choice.one_shot = true;
  }
  return choice;
}

}  // namespace mlaplan::policies
