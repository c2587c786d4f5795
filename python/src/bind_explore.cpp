// The explorer: a sweep of a workload's batches over buffer sizes, chunk counts and policies, and a
// trace replayed through a prefix cache, with the CLI's memory limit and Ctrl-C (interruptible).
// The Python wrappers (mlaplan/__init__.py) check every argument's value first, by keyword.
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <variant>

#include "bindings.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_footprint.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/workloads/workload.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/replay/replay_source.hpp"

namespace mlaplan::python {

using namespace nb::literals;

namespace {

// A trace replayed through a prefix cache (mlaplan::replay), as gen and sweep --replay make it.
std::unique_ptr<workloads::RequestSource> replay_source(const std::string& path, const std::string& format, uint32_t block_size,
                                                      uint64_t cache_tokens, double step_ms, uint64_t max_model_len) {
  replay::ReplayOptions o;
  o.block_size = block_size;
  o.cache_tokens = cache_tokens;
  o.step_ms = step_ms;
  o.max_model_len = max_model_len;
  return std::make_unique<replay::ReplaySource>(
      std::make_unique<replay::TraceReader>(path, replay::parse_trace_format(format), block_size), o);
}

std::string limit_text(uint64_t limit) { return fmt::format("memory_limit={}", io::format_bytes(limit)); }

// Before forming: even batches of one sequence would pass the limit.
void require_batches_fit(size_t batches, const sweeps::SweepShape& s, uint64_t limit) {
  const long double least = static_cast<long double>(batches) * (sizeof(Batch) + 8.0L + 12.0L + s.bytes_per_batch());
  if (least > static_cast<long double>(limit))
    throw InputError(fmt::format("batches={}: {} batches x {} settings take at least {}, above {}; sweep fewer batches "
                                 "(about {} fit) or settings, or raise memory_limit",
                                 batches, batches, s.settings, io::format_bytes(static_cast<uint64_t>(std::min(least, 1.8e19L))),
                                 limit_text(limit), static_cast<uint64_t>(limit / (least / batches))));
}

nb::list rows_of(const sweeps::SweepResult& result) {
  using namespace mlaplan::policies;
  using namespace mlaplan::sweeps;
  nb::list rows;
  const bool timed = sweep_has_time(result), eager = sweep_has_eager(result);
  for (const SweepRow& r : result.rows) {
    nb::dict d;
    for (const SweepField& f : sweep_fields())
      if ((f.outputs & kSweepPython) && (timed || !f.timed) && (eager || !f.eager))
        d[f.key] = std::visit(
            [](const auto& v) -> nb::object {
              if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) return nb::none();
              else return nb::cast(v);
            },
            f.value(r));
    rows.append(d);
  }
  return rows;
}

}  // namespace

void bind_explore(nb::module_& m) {
  m.def(
      "sweep",
      [](const std::string& workload, size_t batches, uint64_t seed, uint32_t page_size, uint32_t token_budget,
         uint32_t max_sequences, const std::vector<uint32_t>& buffer_tokens, const std::vector<uint32_t>& max_chunks,
         const std::string& policies, const std::string& replay, const std::string& replay_format,
         uint32_t replay_block_size, uint64_t prefix_cache_tokens, double step_ms, const std::vector<std::string>& costs,
         uint64_t memory_limit, const std::string& timing, nb::object progress, uint64_t max_model_len,
         const std::string& context_model, nb::object stats) {
        using namespace mlaplan::models;
        using namespace mlaplan::workloads;
        using namespace mlaplan::policies;
        using namespace mlaplan::sweeps;
        if (timing != "graph" && timing != "eager") throw InputError("timing: \"" + timing + "\" is not graph or eager");
        if (timing == "eager" && costs.empty())
          throw InputError("timing: eager prices the host's dispatch with a cost file's host section; add cost=FILE");
        if (buffer_tokens.empty() || max_chunks.empty())
          throw InputError("buffer_tokens, max_chunks: give at least one value each");
        // Settings done and in all, for `progress`: set by the sweep's threads, read at each tick.
        std::atomic<size_t> done{0}, total{0};
        // max_model_len, or the context of the model named (sweep(model=...) as `sweep --model`): the
        // requests longer are dropped, and `stats` gets how many.
        if (!context_model.empty()) max_model_len = find_model_preset(context_model).max_context;
        uint64_t dropped = 0;
        std::function<void()> tick;
        if (!progress.is_none()) tick = [&] { progress(done.load(), total.load()); };
        // Everything from here reads files (guided:FILE, cost files, the trace: a FIFO blocks) or runs
        // long: on the worker, so that Ctrl-C stops it.
        const SweepResult result = interruptible(
            [&] {
              SweepGrid grid;
              grid.buffer_tokens = buffer_tokens;
              grid.max_chunks = max_chunks;
              grid.policies = parse_policies(policies, Policy{}, "policies");
              // Cost models: the sweep takes each file's model (a preset) and TP, as `sweep --cost` without --model.
              for (const std::string& path : costs) grid.costs.push_back(cost::read_cost_model(path));
              grid.eager = timing == "eager";  // before take_cost_models: it refuses a file without a host section
              // guided without its own file chooses by the one cost file, as the CLI's sweep does.
              // (It merges a policy that resolves to one given before it: guided under eager timing.)
              attach_guide(grid.policies, grid.costs, grid.eager, "policies", "cost=FILE");
              if (!grid.costs.empty()) {
                grid.dtype = parse_dtype(grid.costs.front().dtype);
                take_cost_models(grid, false);
              }
              const SweepShape shape = sweep_shape(grid);
              require_batches_fit(batches, shape, memory_limit);
              total = shape.settings;
              BatchFormation formation;
              formation.token_budget = token_budget;
              formation.max_sequences = max_sequences;
              formation.memory_limit = memory_limit;
              formation.bytes_per_batch = shape.bytes_per_batch();
              formation.memory_limit_text = limit_text(memory_limit);
              BatchSettings settings;
              settings.page_size = page_size;
              std::unique_ptr<RequestSource> source =
                  replay.empty() ? preset_source(find_workload_preset(workload), seed)
                                 : replay_source(replay, replay_format, replay_block_size, prefix_cache_tokens, step_ms,
                                                 max_model_len);  // the replay's own: dropped before the cache
              if (max_model_len && replay.empty()) source = capped_source(std::move(source), max_model_len, &dropped);
              const std::vector<Batch> formed = form_batches(*source, formation, settings, batches, seed);
              if (!replay.empty()) dropped = static_cast<const replay::ReplaySource&>(*source).stats().dropped;
              sweeps::SweepFootprint footprint;
              for (const Batch& b : formed) footprint.add(b);
              require_sweep_fits(shape, grid, footprint, memory_limit,
                                 {fmt::format("batches={}", formed.size()), "max_chunks", "=", limit_text(memory_limit),
                                  "memory_limit"});
              SweepOptions options;
              options.progress = [&](size_t d, size_t t) {
                done = d;
                total = t;
              };
              return run_sweep(formed, grid, options);
            },
            tick);
        if (!stats.is_none()) {
          stats["max_model_len"] = max_model_len;
          stats["dropped"] = dropped;
        }
        return rows_of(result);
      },
      "workload"_a, "batches"_a, "seed"_a, "page_size"_a, "token_budget"_a, "max_sequences"_a, "buffer_tokens"_a,
      "max_chunks"_a, "policies"_a, "replay"_a = "", "replay_format"_a = "auto", "replay_block_size"_a = 512,
      "prefix_cache_tokens"_a = 0, "step_ms"_a = 0.0, "costs"_a = std::vector<std::string>{},
      "memory_limit"_a = uint64_t{2} << 30, "timing"_a = "graph", "progress"_a = nb::none(),
      "max_model_len"_a = 0, "context_model"_a = "", "stats"_a = nb::none(),
      "A sweep of a workload preset's batches (or a trace replayed): one dict per (policy, buffer, M) setting. "
      "progress: None, or a callable given (settings done, settings in all) about every 50 ms while it runs.");

  m.def(
      "replay",
      [](const std::string& path, const std::string& format, uint32_t block_size, uint64_t cache_tokens, double step_ms,
         uint32_t token_budget, uint32_t max_sequences, uint64_t max_model_len, uint64_t memory_limit) {
        workloads::BatchFormation formation;
        formation.token_budget = token_budget;
        formation.max_sequences = max_sequences;
        formation.memory_limit = memory_limit;  // every step is held as a batch until the count
        formation.memory_limit_text = limit_text(memory_limit);
        formation.batches_given = false;  // the whole trace: SIZE_MAX below is no count the caller gave
        formation.limit_subject = "replay";  // every step is held as a batch only until it is counted
        formation.limit_fix = "give a larger token_budget (fewer steps) or raise memory_limit";
        std::unique_ptr<workloads::RequestSource> source;
        const size_t steps = interruptible([&] {
          source = replay_source(path, format, block_size, cache_tokens, step_ms, max_model_len);
          return workloads::form_batches(*source, formation, workloads::BatchSettings{}, SIZE_MAX, 0).size();
        });
        const auto& st = static_cast<const replay::ReplaySource&>(*source).stats();
        nb::dict d;
        d["steps"] = steps;
        d["requests"] = st.requests;
        d["dropped"] = st.dropped;
        d["input_tokens"] = st.input_tokens;
        d["cached_tokens"] = st.cached_tokens;
        d["hit_rate"] = st.hit_rate();
        d["evictions"] = st.evictions;
        d["cached_per_request"] = numpy_of(st.per_request_cached, {st.per_request_cached.size()});
        d["summary"] = st.describe();
        return d;
      },
      "path"_a, "format"_a = "auto", "block_size"_a = 512, "prefix_cache_tokens"_a = 0, "step_ms"_a = 0.0,
      "token_budget"_a = 8192, "max_sequences"_a = 256, "max_model_len"_a = 0, "memory_limit"_a = uint64_t{2} << 30,
      "Replays a trace through the prefix cache, in steps formed by the token budget: what it cached.");
}

}  // namespace mlaplan::python
