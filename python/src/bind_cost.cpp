// The cost model for the calibration (python/mlaplan/calibrate): its terms, counted by the same code
// `sweep --cost` runs, so a fitted file predicts what it was fitted on; the path each engine takes;
// and cost files read by the CLI's reader.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "bindings.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/cost/gpu.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan::python {

using namespace nb::literals;

namespace {

nb::dict features_dict(const cost::Features& f) {
  nb::dict d;
  for (size_t i = 0; i < cost::kTerms; ++i) d[cost::coefficient_name(static_cast<cost::Term>(i))] = f.values[i];
  return d;
}

// max_chunks 0: as many as max needs (priced from its closed form, so no table of them is made).
uint32_t as_many_as_needed(const Batch& b) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(plan_shape(b).min_max_chunks, 1, UINT32_MAX));
}

// The terms (and, with `eager`, its two clocks) of one layer, as cost_features and cost_launches
// count them: the path the engine dispatches the batch to on sm, the loop's refusals raised. Inside
// `interruptible`: guided:FILE reads its file, and a large batch takes a while.
policies::EnginePath layer_terms(Batch b, const std::string& policy, const cost::Geometry& g, uint32_t max_chunks,
                                bool unbounded, uint32_t sm, cost::Features& f, policies::EagerTime* eager) {
  using namespace mlaplan::policies;
  const Policy p = policy_named(policy);
  // sm: the GPU's compute capability x10, whose dispatch picks the path (0: the policy's own loop).
  const EnginePath path = unbounded ? unbounded_path(b, p, sm) : engine_path(b, p, sm);
  if (unbounded) {
    f = dispatched_unbounded_features(b, p, g, sm, nullptr, eager);
  } else if (path != EnginePath::chunked) {
    f = whole_context_features(b, g, eager);  // no refusal: the loop does not run
  } else if (p.kind == PolicyKind::max) {
    if (max_chunks == 0) b.max_chunks = as_many_as_needed(b);
    f = max_features(b, g, eager);  // its closed form, no tables; InfeasibleBatch past max_chunks
  } else {
    const PolicyOutcome o = policy_outcome(b, p);
    if (o.refused) throw InputError(o.why);
    f = policy_features(b, p, g, nullptr, nullptr, eager);
  }
  return path;
}

// The batch of a cost or path call (checked with the GIL, as host_batch reads the arrays).
Batch cost_batch(const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size,
                 uint32_t max_chunks) {
  return host_batch(cache, offsets, page_size, buffer_token_size, std::max(max_chunks, 1u));
}

nb::dict launches_dict(const cost::Clock& clock) {
  nb::dict d;
  for (size_t k = 0; k < cost::kLaunchKinds; ++k)
    d[cost::launch_kind_name(static_cast<cost::LaunchKind>(k))] = static_cast<uint64_t>(clock.launches[k]);
  return d;
}

// A finite number >= 0 at `key` of a {name: number} argument, or ValueError naming both.
double number_of(const nb::dict& d, const char* key, const char* what) {
  if (!d.contains(key)) throw InputError(fmt::format("{}: {} is missing; give every one, 0 where it costs nothing", what, key));
  double v = 0;
  if (!nb::try_cast<double>(d[key], v) || !std::isfinite(v) || v < 0)
    throw InputError(fmt::format("{}: {} is not a finite number >= 0", what, key));
  return v;
}

cost::Geometry geometry_of(uint32_t heads, uint32_t sms, uint32_t blocks_per_sm, uint32_t tile_queries,
                           const std::string& scheduler, uint64_t small_gemm_rows = 0) {
  cost::Geometry g{heads, sms, blocks_per_sm, tile_queries};
  g.small_gemm_rows = small_gemm_rows;
  if (!cost::scheduler_named(scheduler, g.scheduler))
    throw InputError("scheduler: grid (FlashAttention-2's), sorted or sectioned (FlashAttention-3's), not " + scheduler);
  if (heads == 0 || sms == 0 || blocks_per_sm == 0 || tile_queries == 0)
    throw InputError("heads, sms, blocks_per_sm, tile_queries: each is at least 1");
  return g;
}

}  // namespace

void bind_cost(nb::module_& m) {
  m.def("cost_terms", [] {
    nb::list out;
    for (size_t i = 0; i < cost::kTerms; ++i) {
      const auto t = static_cast<cost::Term>(i);
      out.append(nb::make_tuple(cost::coefficient_name(t), cost::term_unit(t)));
    }
    return out;
  });
  m.def(
      "cost_features",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t heads, uint32_t sms, uint32_t blocks_per_sm, uint32_t tile_queries, uint32_t max_chunks, bool unbounded,
         uint32_t sm, const std::string& scheduler, uint64_t small_gemm_rows) {
        const cost::Geometry g = geometry_of(heads, sms, blocks_per_sm, tile_queries, scheduler, small_gemm_rows);
        const Batch b = cost_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        cost::Features f;
        const policies::EnginePath path = interruptible_if(
            needs_worker(b, policy), [&] { return layer_terms(b, policy, g, max_chunks, unbounded, sm, f, nullptr); });
        nb::dict d = features_dict(f);
        if (sm != 0) d["path"] = policies::path_name(path);  // without a GPU every policy runs its loop
        return d;
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "heads"_a, "sms"_a = 132,
      "blocks_per_sm"_a = 1, "tile_queries"_a = 128, "max_chunks"_a = 0, "unbounded"_a = false, "sm"_a = 0,
      "scheduler"_a = "grid", "small_gemm_rows"_a = 0,
      "A cost model's terms for one layer of the batch under the policy, keyed by coefficient name (max_chunks 0: as "
      "many as max needs; unbounded: a buffer holding the batch whole), on the path the engine dispatches it to on a GPU "
      "of compute capability sm (x10: 90, 100; with sm, a 'path' key names it; 0: the policy's loop); scheduler: how "
      "the attention kernel hands out its blocks (grid: FlashAttention-2, sorted: FlashAttention-3); small_gemm_rows: "
      "the cost file's geometry.small_gemm_rows (0: none).");
  m.def(
      "cost_launches",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t heads, uint32_t sms, uint32_t blocks_per_sm, uint32_t tile_queries, uint32_t max_chunks, bool unbounded,
         uint32_t sm, const std::string& scheduler, bool pad_v, uint64_t small_gemm_rows) {
        const cost::Geometry g = geometry_of(heads, sms, blocks_per_sm, tile_queries, scheduler, small_gemm_rows);
        const std::array<double, cost::kTerms> none{};
        cost::HostCosts host;
        host.pad_v = pad_v;
        policies::EagerTime eager(none, host);
        const Batch b = cost_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        cost::Features f;
        interruptible_if(needs_worker(b, policy),
                         [&] { return layer_terms(b, policy, g, max_chunks, unbounded, sm, f, &eager); });
        return launches_dict(eager.clock);
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "heads"_a, "sms"_a = 132,
      "blocks_per_sm"_a = 1, "tile_queries"_a = 128, "max_chunks"_a = 0, "unbounded"_a = false, "sm"_a = 0,
      "scheduler"_a = "grid", "pad_v"_a = false, "small_gemm_rows"_a = 0,
      "The kernels one layer launches, per kind ({gather, up_projection, concat, attention, merge, fill: count}), as "
      "eager time (run/sweep --timing eager) counts them on the executor's loop, for the batch, policy and path "
      "cost_features prices; pad_v: the up-projection pads V (FlashAttention-2), one more concat per step.");
  m.def(
      "cost_eager",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         const nb::dict& coefficients, const nb::dict& launch_us, bool pad_v, uint32_t heads, uint32_t sms,
         uint32_t blocks_per_sm, uint32_t tile_queries, uint32_t sm, const std::string& scheduler, uint64_t small_gemm_rows) {
        const cost::Geometry g = geometry_of(heads, sms, blocks_per_sm, tile_queries, scheduler, small_gemm_rows);
        std::array<double, cost::kTerms> c{};
        for (size_t i = 0; i < cost::kTerms; ++i) {
          const auto t = static_cast<cost::Term>(i);
          // A term added after a file's calibration may be left out (0), as the file reader takes it.
          if (cost::optional_term(t) && !coefficients.contains(cost::coefficient_name(t))) continue;
          c[i] = number_of(coefficients, cost::coefficient_name(t), "coefficients");
        }
        cost::HostCosts host;
        host.pad_v = pad_v;
        for (size_t k = 0; k < cost::kLaunchKinds; ++k)
          host.us[k] = number_of(launch_us, cost::launch_kind_name(static_cast<cost::LaunchKind>(k)), "launch_us");
        policies::EagerTime eager(c, host);
        const Batch b = cost_batch(cache, offsets, page_size, buffer_token_size, 0);
        cost::Features f;
        interruptible_if(needs_worker(b, policy), [&] { return layer_terms(b, policy, g, 0, false, sm, f, &eager); });
        nb::dict d;
        d["eager_us"] = eager.clock.dev;
        d["device_us"] = eager.clock.busy;
        d["host_us"] = eager.clock.host;
        d["waited_us"] = eager.clock.waited();
        d["launches"] = launches_dict(eager.clock);
        return d;
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "coefficients"_a,
      "launch_us"_a, "pad_v"_a, "heads"_a, "sms"_a = 132, "blocks_per_sm"_a = 1, "tile_queries"_a = 128, "sm"_a = 0,
      "scheduler"_a = "grid", "small_gemm_rows"_a = 0,
      "One layer's eager time as `run --cost --timing eager` prices it, for the batch and policy on the path the engine "
      "takes on sm (as cost_features): the two clocks over its launches with the cost file's coefficients ({name: us}) "
      "and host costs ({kind: us per launch}); {eager_us, device_us (its launches' own), host_us (the host's dispatch), "
      "waited_us (the device's wait for the host), launches {kind: count}}.");
  m.def(
      "merges_per_query",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t max_chunks, uint32_t sm) {
        using namespace mlaplan::policies;
        Batch b = cost_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        QueryMerges q = interruptible_if(needs_worker(b, policy), [&] {
          const Policy p = policy_named(policy);
          if (p.kind == PolicyKind::max) {
            if (max_chunks == 0) b.max_chunks = as_many_as_needed(b);
            return dispatched_query_merges(b, p, sm);  // its closed form, no tables; InfeasibleBatch past max_chunks
          }
          if (engine_path(b, p, sm) == EnginePath::chunked) {
            const PolicyOutcome o = policy_outcome(b, p);
            if (o.refused) throw InputError(o.why);
          }
          return dispatched_query_merges(b, p, sm);
        });
        q.compact();
        nb::dict d;
        d["max"] = q.max();
        d["p99"] = q.quantile(0.99);
        nb::list h;
        for (const auto& [merges, rows] : q.counts) h.append(nb::make_tuple(merges, rows));
        d["histogram"] = h;
        return d;
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "max_chunks"_a = 0,
      "sm"_a = 0,
      "How many LSE merges each query row's running output goes through under the policy's loop, as run and sweep "
      "count them: {max, p99, histogram: [(merges, rows), ...]} (max_chunks 0: as many as max needs; sm: the GPU "
      "whose dispatch picks the path, 0: the loop).");
  m.def(
      "engine_path",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t sm) {
        using namespace mlaplan::policies;
        const Batch b = host_batch(cache, offsets, page_size, buffer_token_size, 1);
        const auto [path, reason] = interruptible_if(needs_worker(b, policy), [&] {
          const Policy p = policy_named(policy);
          const EnginePath e = engine_path(b, p, sm);
          return std::make_pair(std::string(path_name(e)), path_reason(b, p, sm));
        });
        return nb::make_tuple(path, reason);
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "sm"_a,
      "The path the policy's engine runs the batch on, on a GPU of compute capability sm (x10): (\"chunked\", "
      "\"one-shot\" or \"absorbed\", why).");
  m.def(
      "read_cost_model",
      [](const std::string& path) {
        const cost::CostModel c = interruptible([&] { return cost::read_cost_model(path); });
        nb::dict d, g;
        d["model"] = c.model;
        d["tp"] = c.tp;
        d["dtype"] = c.dtype;
        d["gpu"] = c.gpu;
        d["sm"] = c.sm;
        d["timing"] = c.timing;
        d["attention"] = c.attention;
        d["up_projection"] = c.up_projection;
        nb::list missed;
        for (const std::string& w : c.heldout_missed) missed.append(w);
        d["heldout_missed"] = missed;
        g["heads"] = c.geometry.heads;
        g["sms"] = c.geometry.sms;
        g["blocks_per_sm"] = c.geometry.blocks_per_sm;
        g["tile_queries"] = c.geometry.tile_queries;
        g["scheduler"] = cost::scheduler_name(c.geometry.scheduler);
        g["small_gemm_rows"] = c.geometry.small_gemm_rows;
        d["geometry"] = g;
        cost::Features f;
        for (size_t i = 0; i < cost::kTerms; ++i) f.values[i] = c.coefficients[i];
        d["coefficients"] = features_dict(f);
        if (c.host) {
          nb::dict h, us;
          h["holds_for"] = c.host->holds_for;
          h["pad_v"] = c.host->pad_v;
          for (size_t k = 0; k < cost::kLaunchKinds; ++k) us[cost::launch_kind_name(static_cast<cost::LaunchKind>(k))] = c.host->us[k];
          h["launch_us"] = us;
          if (c.host->probe_ms > 0) h["probe_ms"] = c.host->probe_ms;
          else h["probe_ms"] = nb::none();
          h["probe"] = c.host->probe;
          if (c.host->date.empty()) h["date"] = nb::none();
          else h["date"] = c.host->date;
          h["identified"] = c.host->identified;
          nb::list because;
          for (const std::string& r : c.host->unidentified_because) because.append(r);
          h["unidentified_because"] = because;
          d["host"] = h;
        } else {
          d["host"] = nb::none();
        }
        return d;
      },
      "path"_a,
      "A cost file read and checked as `run --cost` reads it (ValueError naming the file and field): model, tp, dtype, "
      "gpu, sm, timing, attention (kernels.attention: the kernel, as calibrate names it), geometry {heads, sms, blocks_per_sm, tile_queries, scheduler}, coefficients {name: us per unit}, "
      "host {holds_for, pad_v, launch_us {kind: us}, identified, unidentified_because} or None, heldout_missed (the "
      "workloads on which its own held-out check missed, with the targets missed).");
  m.def("gpu_key", [](const std::string& name) { return cost::gpu_key(name); }, "name"_a,
        "The key a GPU's name is filed under (costs/<key>/): \"h100\" for \"NVIDIA H100 80GB HBM3\", \"h100-pcie\" for "
        "the PCIe card; \"\" for no GPU's name.");
  m.def(
      "find_cost_file",
      [](const std::vector<std::string>& roots, const std::string& gpu, const std::string& model, uint32_t tp,
         const std::string& dtype, const std::string& attention, const std::string& up_projection) {
        return interruptible([&] {
          return cost::find_cost_file(roots, {gpu, model, tp, dtype, cost::stack_named(attention), up_projection},
                                      "gpu=" + gpu);
        });
      },
      "roots"_a, "gpu"_a, "model"_a, "tp"_a, "dtype"_a, "attention"_a, "up_projection"_a = "unfused",
      "The cost file for the GPU, model, TP, dtype, attention stack and loop (up_projection \"unfused\", the engines', "
      "or \"fused\", mlaplan's) under the first root that has one, as `--gpu` finds it (ValueError naming gpu= and "
      "the files there are).");
  m.def(
      "require_gpu",
      [](const std::string& path, const std::string& gpu) {
        interruptible([&] {  // reads the file: a FIFO waits for its writer
          cost::require_gpu(cost::read_cost_model(path), gpu, "gpu=");
          return true;
        });
      },
      "path"_a, "gpu"_a, "ValueError where the cost file was calibrated on another GPU than gpu (as `--gpu` refuses it).");
}

}  // namespace mlaplan::python
