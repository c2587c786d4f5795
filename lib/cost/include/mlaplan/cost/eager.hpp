// Eager time: a layer's prefill as an engine runs it without CUDA graphs, the host's dispatch
// included. Two clocks (docs/cost-model.md, "Eager time"): the host issues launch k after its
// dispatch cost h_k; the device starts it once it is issued and the previous kernel has ended:
//   t_host += h_k;  t_dev = max(t_dev, t_host) + d_k;     the layer ends at t_dev.
// d_k is the graph model's terms apportioned to the launches they belong to; h_k is per launch kind,
// fitted on the executor's eager runs by the two clocks (python -m mlaplan.calibrate, its host section).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/cost/features.hpp"

namespace mlaplan::cost {

// The kernels the executor's loop launches (python/mlaplan/prefill/executor.py, execute).
enum class LaunchKind : uint8_t {
  gather,         // index_select of cache rows into the buffer (and of MAX's scattered query rows)
  up_projection,  // the kv_b_proj linear
  concat,         // K's concat of k_nope and k_pe, and V's padding where the kernel needs it
  attention,      // one varlen attention launch with queries
  merge,          // one log-sum-exp merge of a launch's output into the running state
  fill,           // a state created as "no keys" (zeros, LSE -inf): two per such state
};
inline constexpr size_t kLaunchKinds = 6;
// "gather", "up_projection", "concat", "attention", "merge", "fill": the names a cost file's
// host.launch_us and mlaplan.cost_launches use.
const char* launch_kind_name(LaunchKind k);

// A cost file's host section: the host's dispatch cost per launch kind, on the CPU, torch and
// executor it was measured with (holds_for).
struct HostCosts {
  std::array<double, kLaunchKinds> us{};  // microseconds of host time per launch of each kind
  bool pad_v = false;                     // the up-projection pads V (FlashAttention-2): one more concat per step
  std::string holds_for;                  // "Intel Xeon ..., torch 2.11.0, mlaplan.prefill's executor loop"
  std::string date;                       // when its runs were timed ("": not recorded; the file's date then)
  // The host's speed the costs are stated at, in ms of its probe (the fit's runs' median): `probe`
  // says which, "cpu" (mlaplan.prefill.cpu_speed's fixed Python loop; a file that names none) or
  // "dispatch" (a small layer's issue time, mlaplan.prefill.dispatch_probe). Dispatch scales with it,
  // so a run probed at p costs us x p / probe_ms; 0: not recorded (the costs as they are).
  double probe_ms = 0;
  std::string probe = "cpu";
  // Whether the calibration's runs pin these costs down (host.identified; a file without it: true).
  // False: they only bound them, so eager time may not choose by them (gpu.hpp, require_identified_host);
  // unidentified_because says why, in calibrate's words.
  bool identified = true;
  std::vector<std::string> unidentified_because;
  double of(LaunchKind k) const { return us[static_cast<size_t>(k)]; }
};

// Both clocks of a run of launches that started with both at 0, and the device's busy time: composed
// in order (then), so that a run of identical steps costs O(1), not one update per launch.
struct Clock {
  double host = 0;  // when the last launch was issued
  double dev = 0;   // when the last launch ended (>= host)
  double busy = 0;  // the launches' own device time
  std::array<double, kLaunchKinds> launches{};

  void launch(LaunchKind k, double h, double d) {
    host += h;
    dev = std::max(dev, host) + d;
    busy += d;
    launches[static_cast<size_t>(k)] += 1;
  }
  // `b` run `times` times after this. With L = dev - host, one run of b maps L to
  // max(L + D - H, G - H) (H, D, G: b's host, busy and dev), so n runs give
  // max(L + n (D - H), G - H + max(0, (n - 1) (D - H))).
  void then(const Clock& b, uint64_t times = 1) {
    if (times == 0) return;
    const double n = static_cast<double>(times), delta = b.busy - b.host;
    const double lag = std::max(dev - host + n * delta, b.dev - b.host + std::max(0.0, (n - 1) * delta));
    host += n * b.host;
    dev = host + lag;
    busy += n * b.busy;
    for (size_t i = 0; i < kLaunchKinds; ++i) launches[i] += n * b.launches[i];
  }
  // The time the device waited for the host: the layer's time less its launches' own.
  double waited() const { return std::max(0.0, dev - busy); }
};

// One step of the loop as the executor runs it, in the terms' counts: what eager_step turns into
// launches. The step's own overhead (per_iteration_us for a chunk, per_fixed_step_us for a fixed
// step, per_batch_us added to the layer's first step) is spread evenly over its launches: graph
// timing charges it to the step as a whole (launch gaps, small kernels), not to one kernel.
struct StepCounts {
  bool gather = false;          // the step gathers cache rows (the new tokens' step takes its own rows)
  bool up_projection = true;    // the step up-projects rows (false: vLLM's final merge, a merge only)
  double rows = 0;              // rows gathered and up-projected
  double small_rows = 0;        // of them, those of a small GEMM (Term::small_gemm_row): rows or 0
  const Features* attention[2] = {nullptr, nullptr};  // each attention launch's terms (its own terms only)
  double merged[2] = {0, 0};    // each merge's query rows (0: taken as it is, no merge)
  bool query_gather[2] = {false, false};  // the launch's query rows are gathered first (MAX's scattered ones)
  double overhead_us = 0;
};

// The device time of an attention launch: the attention terms of `launch` times their coefficients.
inline double attention_us(const std::array<double, kTerms>& c, const Features& f) {
  double us = 0;
  for (Term t : {Term::query, Term::mpair, Term::idle_mpair, Term::block, Term::empty_block, Term::sequence,
                 Term::causal_block})
    us += c[static_cast<size_t>(t)] * f[t];
  return us;
}

// The step's launches, in the executor's order (gather, up-projection, concat(s), per launch its
// query gather and attention, then the merges), as a Clock started at 0. Rows' time is apportioned
// gather 0.2, up-projection 0.4, concat 0.4 (bytes each moves per row at DeepSeek-V3 TP 8; not
// fitted, graph timing cannot tell them apart), the gather's share to the up-projection where the
// step gathers nothing.
// Inline: a sweep runs it once per chunk of every batch and setting (eager timing's cost there).
[[gnu::always_inline]] inline Clock eager_step(const std::array<double, kTerms>& c, const HostCosts& host, const StepCounts& s) {
  const double row_us = c[static_cast<size_t>(Term::row)] * s.rows + c[static_cast<size_t>(Term::small_gemm_row)] * s.small_rows;
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

// Two "no keys" states' fills: new_zeros and full.
Clock eager_fills(const HostCosts& host, uint32_t states);

}  // namespace mlaplan::cost
