// What a sweep's chart says in words: the buffer sizes' tick labels, the series' names (recommend()'s
// groups) and the points' tooltips.
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/render/svg_writer.hpp"
#include "mlaplan/render/sweep_measure.hpp"

namespace mlaplan::render::sweep_detail {

std::string model_of(const SweepRow& r) {
  if (!r.model) return {};
  return fmt::format("{} TP{}", r.model->name, r.memory ? r.memory->tp : 1);
}

// recommend()'s group name ("max M=16 deepseek-v3 TP8"), so report.recommendations match by it.
std::string group_of(const SweepRow& r, bool with_model) {
  std::string g = r.policy.name();
  if (r.max_chunks) g += fmt::format(" M={}", *r.max_chunks);
  if (with_model && r.model) g += " " + model_of(r);
  return g;
}

namespace {

// What the ring means, said once for the legend and the tooltips.
std::string recommended_text(const RecommendOptions& rec) {
  const std::string q = sweeps::quantile_name(rec.quantile);
  if (rec.objective == sweeps::Objective::time)
    return fmt::format("the smallest buffer of its group whose {} step time is within {:g}% of the group's best", q,
                       100.0 * rec.within);
  return fmt::format("the smallest buffer of its group with at most {} iterations at {}", rec.max_iterations, q);
}

}  // namespace

std::string point_tip(const SweepRow& r, bool recommended, const std::optional<RecommendOptions>& rec) {
  std::string t = clip_text(r.setting(), kTipChars);
  t += fmt::format("\niterations per batch: p50 {}, p90 {}, p99 {}, max {} (mean {:.2f})", r.p50, r.p90, r.p99,
                   r.max_iterations, finite_or_zero(r.mean_iterations));
  t += fmt::format("\nmean fill {:.1f}%", 100.0 * finite_or_zero(r.mean_fill));
  t += fmt::format("\nrefused {:.2f}% ({} of {} batches)", 100.0 * r.refused_share(), r.refused, r.batches);
  if (r.refused > 0 && !r.first_refusal.empty()) t += "; the first: " + clip_text(r.first_refusal, kTipChars);
  if (r.memory)  // what the buffer holds: mlaplan's fused loop K and V alone, the engines' loop a K concat beside it
    t += r.fused_loop ? "\nmemory (mlaplan's fused loop): " + sweeps::fused_loop_parts(*r.memory, r.buffer_tokens)
                      : fmt::format("\nmemory: buffer {} + K concat {}", io::format_bytes(r.memory->kv_bytes(r.buffer_tokens)),
                                    io::format_bytes(r.memory->k_bytes(r.buffer_tokens)));
  if (recommended && rec) t += "\nrecommended: " + recommended_text(*rec);
  return t;
}

// A time point's tooltip: the setting, its step times and how much of them the iterations are.
std::string time_tip(const SweepRow& r, const sweeps::Recommendation* rec, const std::optional<RecommendOptions>& options) {
  const sweeps::TimeStats& t = *r.time;
  using sweeps::format_ms;
  std::string s = clip_text(r.setting(), kTipChars);
  // A quantile past the refused batches has no time: "none", and the count says why, in numbers.
  auto at = [&](double us) { return std::isinf(us) ? std::string("none") : format_ms(t.step_ms(us)); };
  s += fmt::format("\npredicted ms per step ({} layers): p50 {}, p99 {}, max {}", t.layers, at(t.p50_us), at(t.p99_us),
                   at(t.max_us));
  const double mean = sweeps::priced_mean_ms(r);
  if (!t.refused) s += fmt::format(" (mean {})", format_ms(t.step_ms(t.mean_us)));
  else
    s += fmt::format(" ({} refused{})", sweeps::refused_text(t.refused, r.batches),
                     std::isnan(mean) ? "" : fmt::format("; mean {} over the rest", format_ms(mean)));
  s += fmt::format("\nper-iteration share {:.1f}%, over bound {:.1f}% (against a buffer holding each batch whole)",
                   100.0 * finite_or_zero(t.iteration_share), 100.0 * finite_or_zero(t.over_lower_bound));
  if (t.eager)
    s += fmt::format("\nhost-bound {:.1f}% (eager timing: the share of the step the device waits for the host)",
                     100.0 * finite_or_zero(t.host_bound_share));
  s += fmt::format("\npath: {} (chunked {}, one-shot {}, absorbed {}){}", t.path(), t.on(policies::EnginePath::chunked),
                   t.on(policies::EnginePath::one_shot), t.on(policies::EnginePath::absorbed),
                   t.buffer_free ? ": the whole context at once, no buffer" : "");
  if (r.refused > 0)
    s += fmt::format("\nrefused {:.2f}% ({} of {} batches), counted as past every quantile", 100.0 * r.refused_share(), r.refused,
                     r.batches);
  if (rec && options) {
    s += "\nrecommended: " + recommended_text(*options);
    if (!rec->next_larger.empty()) s += "\nnext larger: " + clip_text(rec->next_larger, kTipChars);
  }
  return s;
}

}  // namespace mlaplan::render::sweep_detail
