#include "mlaplan/cost/eager.hpp"

namespace mlaplan::cost {

const char* launch_kind_name(LaunchKind k) {
  switch (k) {
    case LaunchKind::gather: return "gather";
    case LaunchKind::up_projection: return "up_projection";
    case LaunchKind::concat: return "concat";
    case LaunchKind::attention: return "attention";
    case LaunchKind::merge: return "merge";
    case LaunchKind::fill: return "fill";
  }
  return "";
}

double attention_us(const std::array<double, kTerms>& c, const Features& f) {
  double us = 0;
  for (Term t : {Term::query, Term::mpair, Term::idle_mpair, Term::block, Term::empty_block, Term::sequence})
    us += c[static_cast<size_t>(t)] * f[t];
  return us;
}

Clock eager_step(const std::array<double, kTerms>& c, const HostCosts& host, const StepCounts& s) {
  const double row_us = c[static_cast<size_t>(Term::row)] * s.rows;
  const uint32_t concats = s.up_projection ? 1 + host.pad_v : 0;
  uint32_t launches = (s.gather ? 1 : 0) + (s.up_projection ? 1 : 0) + concats;
  for (int i = 0; i < 2; ++i)
    launches += (s.attention[i] != nullptr) * (1 + s.query_gather[i]) + (s.merged[i] > 0);
  const double spread = launches ? s.overhead_us / launches : 0;
  Clock k;
  if (launches == 0) {  // nothing launched: the overhead is device time on its own
    k.dev = k.busy = s.overhead_us;
    return k;
  }
  if (s.gather) k.launch(LaunchKind::gather, host.of(LaunchKind::gather), 0.2 * row_us + spread);
  if (s.up_projection) {
    k.launch(LaunchKind::up_projection, host.of(LaunchKind::up_projection), (s.gather ? 0.4 : 0.6) * row_us + spread);
    for (uint32_t i = 0; i < concats; ++i) k.launch(LaunchKind::concat, host.of(LaunchKind::concat), 0.4 * row_us / concats + spread);
  }
  for (int i = 0; i < 2; ++i) {
    if (!s.attention[i]) continue;
    if (s.query_gather[i]) k.launch(LaunchKind::gather, host.of(LaunchKind::gather), spread);
    k.launch(LaunchKind::attention, host.of(LaunchKind::attention), attention_us(c, *s.attention[i]) + spread);
  }
  for (double m : s.merged)
    if (m > 0) k.launch(LaunchKind::merge, host.of(LaunchKind::merge), c[static_cast<size_t>(Term::merged_query)] * m + spread);
  return k;
}

Clock eager_fills(const HostCosts& host, uint32_t states) {
  Clock k;
  for (uint32_t i = 0; i < 2 * states; ++i) k.launch(LaunchKind::fill, host.of(LaunchKind::fill), 0);
  return k;
}

}  // namespace mlaplan::cost
