#include "mlaplan/sweeps/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include "mlaplan/cost/gpu.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "sweep_bounds.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::sweeps {

namespace {

using namespace detail;

constexpr uint32_t kRefused = std::numeric_limits<uint32_t>::max();

// The nearest-rank quantile of unsorted values, by selection (O(n), where sorting 100,000 per row
// was a tenth of a sweep with --cost).
template <typename T>
T select_rank(std::vector<T>& v, double q) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

// Max planned by the fast CPU planner into buffers reused across batches.
class CpuMaxPlanner {
 public:
  policies::PolicyOutcome operator()(const Batch& b, policies::MaxTablesView& view) {
    const PlanShape shape = plan_shape(b);
    if (!shape.feasible) return policies::policy_outcome(b, policies::Policy{});
    const uint32_t m = b.max_chunks;
    const size_t cells = m * (size_t{b.batch_size()} + 1);
    if (rows_.size() < cells) rows_.resize(cells);
    if (cache_.size() < cells) cache_.resize(cells);
    lengths_.resize(m);
    plan_fast_cpu_into(b, {rows_.data(), cache_.data(), lengths_.data()}, starts_, profile::stop_flag());
    policies::PolicyOutcome o = policies::policy_outcome(b, policies::Policy{});  // payload and refusal from the shape...
    o.chunks = o.streamed_rows = o.largest_chunk = 0;  // ...the rest from the planned tables
    for (int32_t len : lengths_) {
      if (len <= 0) continue;
      ++o.chunks;
      o.streamed_rows += static_cast<uint64_t>(len);
      o.largest_chunk = std::max<uint64_t>(o.largest_chunk, static_cast<uint64_t>(len));
    }
    view = {rows_.data(), cache_.data(), lengths_.data(), m};
    return o;
  }

 private:
  std::vector<uint32_t> rows_, cache_, starts_;
  std::vector<int32_t> lengths_;
};

using MaxPlan = std::function<policies::PolicyOutcome(const Batch&, policies::MaxTablesView&)>;

// Per cost model, the sums a TimeStats is made of.
struct TimeSums {
  double total = 0, iteration = 0, iterations = 0, waited = 0;
  uint64_t planned = 0, unbuffered = 0;  // unbuffered: batches on a path without a buffer
  uint64_t unbuffered_rows = 0;          // the most rows of those
};

void finish_times(Evaluated& e, const std::vector<TimeSums>& sums) {
  for (size_t k = 0; k < e.times.size(); ++k) {
    TimeStats& t = e.times[k];
    const TimeSums& s = sums[k];
    t.cost = k;
    // A mean over only the batches a setting plans would compare unlike with unlike: with any batch
    // refused there is none (+inf, shown as refused).
    t.mean_us = t.refused ? std::numeric_limits<double>::infinity()
                              : s.planned ? s.total / static_cast<double>(s.planned) : 0;
    t.iteration_share = s.total > 0 ? s.iteration / s.total : 0;
    t.host_bound_share = s.total > 0 ? s.waited / s.total : 0;
    t.mean_iterations = s.planned ? s.iterations / static_cast<double>(s.planned) : 0;
    t.buffer_free = s.planned > 0 && s.unbuffered == s.planned && t.refused == 0;
    t.memory_rows = t.buffer_free ? s.unbuffered_rows : std::max<uint64_t>(e.row.buffer_tokens, s.unbuffered_rows);
    std::vector<float> v = t.layer_us;
    t.p50_us = select_rank(v, 0.50);  // each selection leaves the ones above it above it
    t.p90_us = select_rank(v, 0.90);
    t.p99_us = select_rank(v, 0.99);
    t.max_us = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  }
}

// `b` is scratch, one per thread: each batch is copied into it with the setting's N and M, so the
// threads share one copy of the batches (a copy per thread multiplied their memory by the cores).
Evaluated evaluate(const std::vector<Batch>& batches, const Setting& s, const SweepGrid& grid, const Shared& shared,
                   const MaxPlan& plan_max, Batch& b, Ticker& ticker) {
  const LowerBounds& lower = shared.lower;
  Evaluated e;
  SweepRow& row = e.row;
  row.policy = s.policy;
  row.buffer_tokens = s.n;
  row.max_chunks = s.m;
  row.default_only = s.default_only;
  row.batches = batches.size();
  row.iterations.reserve(batches.size());
  const size_t costs = grid.costs.size();
  e.times.resize(costs);
  std::vector<TimeSums> sums(costs);
  for (TimeStats& t : e.times) {
    t.layer_us.reserve(batches.size());
    t.eager = grid.eager;
  }
  // Eager timing: each cost model's clocks, which the walks below run beside the terms.
  std::vector<std::optional<policies::EagerTime>> clocks(costs);
  if (grid.eager)
    for (size_t k = 0; k < costs; ++k) clocks[k].emplace(grid.costs[k]);
  auto eager = [&](size_t k) { return clocks[k] ? &*clocks[k] : nullptr; };
  std::vector<uint32_t> shown;  // iterations with max's refused batches at the chunks they need
  shown.reserve(batches.size());
  uint64_t payload = 0, streamed = 0, filled_batches = 0;
  double fill_sum = 0;
  policies::QueryMerges merges;  // the policy's loop, as the iterations are: no dispatch
  policies::MaxTablesView tables;
  // Per cost model: whether the engine dispatches on its GPU, whether its lower bound is the policy's
  // loop, and (per batch) the path it takes.
  std::vector<bool> dispatching(costs), floors(costs);
  for (size_t k = 0; k < costs; ++k) {
    dispatching[k] = policies::dispatches(s.policy, grid.costs[k].sm);
    floors[k] = loop_floor(s.policy, grid.costs[k].sm);
  }
  std::vector<policies::EnginePath> paths(costs, policies::EnginePath::chunked);
  // guided: its choice, once per batch (the candidates priced once), and then its plan runs, priced
  // and merged in its place. Cost model k takes the choice's own terms where they are k's: the same
  // geometry (graph timing) or the same pricing, clocks included (eager timing, guided/eager).
  const bool guided = s.policy.kind == policies::PolicyKind::guided;
  std::optional<policies::GuidedChoice> choice;
  std::vector<bool> as_guide(costs, false);
  for (size_t k = 0; guided && k < costs; ++k) {
    const cost::CostModel& c = grid.costs[k];
    const cost::Geometry &g = c.geometry, &h = s.policy.guide->geometry;
    // The terms depend on the geometry alone; the clocks on the coefficients and host costs too.
    as_guide[k] = grid.eager ? s.policy.guide_eager && policies::same_pricing(c, *s.policy.guide, true)
                             : g.same_terms(h);
  }
  // The choice's terms (and clocks) for cost model k, where they are k's.
  auto chosen_terms = [&](size_t k) -> const cost::Features* {
    if (!choice || !choice->priced || choice->one_shot || !as_guide[k]) return nullptr;
    if (clocks[k]) clocks[k]->clock = choice->clock;
    return &choice->terms;
  };
  for (size_t i = 0; i < batches.size(); ++i) {
    if (i % 1024 == 0 && i > 0) {
      if (profile::stop_requested()) {
        row.batches = 0;  // unfinished: run_sweep drops it
        return e;
      }
      ticker.priced(1024);
    }
    const Batch& from = batches[i];
    b.page_size = from.page_size;
    b.cache_lengths.assign(from.cache_lengths.begin(), from.cache_lengths.end());  // reuses b's capacity
    b.input_row_offsets.assign(from.input_row_offsets.begin(), from.input_row_offsets.end());
    b.buffer_token_size = s.n;
    b.max_chunks = s.m.value_or(from.max_chunks);
    const bool max = s.policy.kind == policies::PolicyKind::max;
    const policies::Policy* plan = &s.policy;  // what plans the batch: guided's choice, for guided
    if (guided) {
      choice = policies::guided_choice(b, s.policy);
      if (choice->priced) plan = &choice->plan;  // else too long to walk: guided refuses it, by its name
    }
    // The path the engine takes under each cost model: O(1) from the batch's sums, and only for the
    // engines that dispatch (vLLM and MAX always run their loops).
    bool any_loop = !costs;  // some cost model prices the policy's loop
    for (size_t k = 0; k < costs; ++k) {
      paths[k] = !dispatching[k] ? policies::EnginePath::chunked
                 : guided        ? (choice->one_shot ? policies::EnginePath::one_shot : policies::EnginePath::chunked)
                                 : policies::engine_path(s.policy, shared.prefix[i], shared.total[i], s.n, grid.costs[k].sm);
      any_loop = any_loop || paths[k] == policies::EnginePath::chunked;
    }
    // A setting that streams the batch whole has the lower bound's terms, worked out already, where
    // that bound is the policy's own loop.
    bool whole = false;
    cost::Features first;  // the first cost model's terms, from the policy's one walk
    bool have_first = false;
    const bool want_first = costs && paths[0] == policies::EnginePath::chunked;  // the first cost model prices the loop
    policies::PolicyOutcome o;
    if (max) {
      o = plan_max(b, tables);
      whole = costs && policies::streams_whole(b, s.policy);
    } else if (!costs || !any_loop) {
      o = choice && choice->priced && !choice->one_shot ? choice->outcome : policies::policy_outcome(b, *plan);
    } else if (s.policy.kind == policies::PolicyKind::even_split) {  // its outcome is closed-form: one chunk is streams_whole
      o = policies::policy_outcome(b, s.policy);
      whole = !o.refused && o.chunks <= 1;
      if (want_first && !o.refused && !(whole && floors[0])) {
        first = policies::policy_features(b, s.policy, grid.costs[0].geometry, nullptr, &shared.new_steps[0][i], eager(0));
        have_first = true;
      }
    } else {
      whole = policies::streams_whole(b, s.policy);
      if (!want_first || (whole && floors[0])) {
        o = choice && choice->priced && !choice->one_shot ? choice->outcome : policies::policy_outcome(b, *plan);
      } else if (const cost::Features* terms = chosen_terms(0)) {
        o = choice->outcome;
        first = *terms;
        have_first = true;
      } else {
        o = policies::outcome_with_features(b, *plan, grid.costs[0].geometry, first, &shared.new_steps[0][i], eager(0));
        have_first = !o.refused;
      }
    }
    const uint32_t chunks = static_cast<uint32_t>(std::min<uint64_t>(o.chunks, kRefused - 1));
    if (o.refused) {
      if (row.refused++ == 0) row.first_refusal = o.why;
      row.iterations.push_back(kRefused);
      if (max) shown.push_back(chunks);
    } else {
      row.iterations.push_back(chunks);
      shown.push_back(chunks);
      if (max) policies::add_max_query_merges(merges, b, tables);
      else policies::add_policy_query_merges(merges, b, *plan);
      payload += o.payload_tokens;
      streamed += o.streamed_rows;
      if (o.chunks > 0) {
        fill_sum += static_cast<double>(o.streamed_rows) / (static_cast<double>(o.chunks) * s.n);
        ++filled_batches;
      }
    }
    for (size_t k = 0; k < costs; ++k) {
      const cost::CostModel& c = grid.costs[k];
      TimeStats& t = e.times[k];
      const double floor = lower[s.policy_index][k][i];
      const policies::EnginePath path = paths[k];
      double us = floor, wait = grid.eager ? shared.lower_wait[s.policy_index][k][i] : 0, iterations = 0;
      uint64_t rows = shared.total[i];  // the most rows a step gathers: the whole context's, on its path
      if (path == policies::EnginePath::chunked) {
        if (o.refused) {  // the engine runs the loop, which refuses the batch
          ++t.refused;
          t.layer_us.push_back(std::numeric_limits<float>::infinity());
          continue;
        }
        // The loop's steps gather a chunk at most; the engines that attend the new tokens apart
        // up-project those in a step of their own.
        rows = max ? o.largest_chunk : std::max<uint64_t>(o.largest_chunk, shared.total[i] - shared.prefix[i]);
        if (whole && floors[k]) {
          iterations = shared.lower_iterations[s.policy_index][i];
        } else {
          // k == 0 && have_first: the clocks ran with `first`'s walk, and no walk under cost 0 since.
          const cost::Features* terms = k > 0 ? chosen_terms(k) : nullptr;
          const cost::Features f = max ? policies::max_features(b, tables, c.geometry, eager(k))
                                   : k == 0 && have_first ? first
                                   : terms                ? *terms
                                                          : policies::policy_features(b, *plan, c.geometry, nullptr,
                                                                                      &shared.new_steps[k][i], eager(k));
          us = clocks[k] ? clocks[k]->clock.dev : c.predict_us(f);
          if (clocks[k]) wait = clocks[k]->clock.waited();
          iterations = f[cost::Term::iteration];
        }
      } else if (policies::whole_without_buffer(s.policy, c.sm)) {
        ++sums[k].unbuffered;
        sums[k].unbuffered_rows = std::max(sums[k].unbuffered_rows, rows);
      }
      ++t.paths[static_cast<size_t>(path)];
      t.most_rows = std::max(t.most_rows, rows);
      t.layer_us.push_back(static_cast<float>(us));
      sums[k].total += us;
      sums[k].waited += wait;
      sums[k].iteration += c.coefficient(cost::Term::iteration) * iterations;
      sums[k].iterations += iterations;
      ++sums[k].planned;
    }
  }
  if (!batches.empty()) ticker.priced(batches.size() - (batches.size() - 1) / 1024 * 1024);
  row.padding_overhead = payload ? static_cast<double>(streamed - payload) / static_cast<double>(payload) : 0;
  row.mean_fill = filled_batches ? fill_sum / static_cast<double>(filled_batches) : 0;
  row.merges_max = merges.max();
  row.merges_p99 = merges.quantile(0.99);
  if (!shown.empty()) {
    double sum = 0;
    for (uint32_t v : shown) sum += v;
    row.mean_iterations = sum / static_cast<double>(shown.size());
    row.p50 = select_rank(shown, 0.50);
    row.p90 = select_rank(shown, 0.90);
    row.p99 = select_rank(shown, 0.99);
    row.max_iterations = *std::max_element(shown.begin(), shown.end());
  }
  finish_times(e, sums);
  return e;
}

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace

std::optional<size_t> cost_for(const SweepGrid& grid, const models::ModelDims& model, uint32_t tp) {
  for (size_t k = 0; k < grid.costs.size(); ++k)
    if (same_name(grid.costs[k].model, model.name) && grid.costs[k].tp == tp) return k;
  return std::nullopt;
}

void check_costs(const SweepGrid& grid, const std::string& command) {
  if (grid.costs.empty()) return;
  // Two files for one (model, TP) would leave the first to win silently (cost_for), and which one a
  // user meant cannot be guessed: swapping them changed the answer tenfold.
  for (size_t k = 0; k < grid.costs.size(); ++k)
    for (size_t j = 0; j < k; ++j) {
      const cost::CostModel &a = grid.costs[j], &b = grid.costs[k];
      if (a.path == b.path)
        throw InputError(fmt::format("{}: given twice to --cost; give each cost file once", b.path));
      if (same_name(a.model, b.model) && a.tp == b.tp)
        throw InputError(fmt::format("{}: model: {} at TP {} has a cost file already, {}; give one file per model and TP",
                                     b.path, b.model, b.tp, a.path));
    }
  for (const cost::CostModel& c : grid.costs) {
    if (grid.eager && !c.host)
      throw InputError(fmt::format("{}: host: missing, and --timing eager needs the host's dispatch costs; calibrate them "
                                   "(python -m mlaplan.calibrate fits them beside the graph terms when asked for the host's "
                                   "runs, docs/cost-model.md's Eager time) or give --timing graph",
                                   c.path));
    if (grid.eager) cost::require_identified_host(c, "--timing eager");  // a host section the runs only bound
    const models::ModelDims* model = nullptr;
    std::string names;
    for (const models::ModelDims& m : grid.models) {
      names += (names.empty() ? "" : ", ") + m.name;
      if (same_name(m.name, c.model)) model = &m;
    }
    if (!model)
      throw InputError(fmt::format("{}: model: \"{}\" is not a model of the {} ({}); give --model {} or a cost file for {}",
                                   c.path, c.model, command, names.empty() ? "none given" : names, c.model, names));
    if (std::find(grid.tps.begin(), grid.tps.end(), c.tp) == grid.tps.end()) {
      std::string tps;
      for (uint32_t t : grid.tps) tps += (tps.empty() ? "" : ",") + std::to_string(t);
      throw InputError(fmt::format("{}: tp: {} is not a TP of the {} (--tp {}); add it to --tp or give a cost file "
                                   "calibrated at TP {}", c.path, c.tp, command, tps, tps));
    }
    if (c.dtype != to_string(grid.dtype))
      throw InputError(fmt::format("{}: dtype: {} is not the {}'s --dtype {}; give --dtype {} or a cost file for {}", c.path,
                                   c.dtype, command, to_string(grid.dtype), c.dtype, to_string(grid.dtype)));
    if (model->num_heads % c.tp != 0 || c.geometry.heads != model->num_heads / c.tp)
      throw InputError(fmt::format("{}: geometry.heads: {} is not {}'s {} heads / TP {}; the file was calibrated for "
                                   "another model, or its heads are wrong",
                                   c.path, c.geometry.heads, model->name, model->num_heads, c.tp));
  }
  for (const models::ModelDims& m : grid.models)
    for (uint32_t tp : grid.tps)
      if (!cost_for(grid, m, tp))
        throw InputError(fmt::format("--cost: no cost file is for {} at TP {}; give one for each model and TP of the {} "
                                     "(costs/ has calibrated files), or only the ones given",
                                     m.name, tp, command));
}

void take_cost_models(SweepGrid& grid, bool keep_tps, const std::string& command) {
  if (!grid.costs.empty() && grid.models.empty()) {
    for (const cost::CostModel& c : grid.costs) {
      const models::ModelDims* preset = nullptr;
      try {
        preset = &models::find_model_preset(c.model);
      } catch (const InputError&) {
        throw InputError(fmt::format("{}: model: \"{}\" is no model preset; give its config with --model-config", c.path,
                                     c.model));
      }
      if (std::none_of(grid.models.begin(), grid.models.end(), [&](const models::ModelDims& m) { return m.name == preset->name; }))
        grid.models.push_back(*preset);
    }
    if (!keep_tps) {
      grid.tps.clear();
      for (const cost::CostModel& c : grid.costs)
        if (std::find(grid.tps.begin(), grid.tps.end(), c.tp) == grid.tps.end()) grid.tps.push_back(c.tp);
    }
  }
  check_costs(grid, command);
}

std::string TimeStats::path() const {
  const uint64_t priced = on(policies::EnginePath::chunked) + on(policies::EnginePath::one_shot) + on(policies::EnginePath::absorbed);
  if (priced == 0) return policies::path_name(policies::EnginePath::chunked);
  for (size_t p = 0; p < policies::kEnginePaths; ++p)
    if (paths[p] == priced) return policies::path_name(static_cast<policies::EnginePath>(p));
  return "mixed";
}

double TimeStats::at(double q) const {
  std::vector<float> v = layer_us;
  return select_rank(v, q);
}

uint32_t SweepRow::iterations_at(double q) const {
  std::vector<uint32_t> v = iterations;
  return select_rank(v, q);
}

std::string SweepRow::setting() const {
  std::string s = fmt::format("{} N={}", policy.name(), buffer_tokens);
  if (max_chunks) s += fmt::format(" M={}", *max_chunks);
  if (model) s += fmt::format(" {} TP{}", model->name, memory ? memory->tp : 1);
  return s;
}

SweepResult run_sweep(const std::vector<Batch>& batches, const SweepGrid& grid, const SweepOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Setting> settings;
  for (size_t i = 0; i < grid.policies.size(); ++i) {
    const policies::Policy& p = grid.policies[i];
    for (uint32_t n : grid.buffer_tokens) {
      if (p.kind == policies::PolicyKind::max) {
        for (uint32_t m : grid.max_chunks) settings.push_back({p, n, m, i});
      } else {
        settings.push_back({p, n, std::nullopt, i});
      }
    }
    if (p.kind != policies::PolicyKind::max) continue;
    const bool one = std::find(grid.max_chunks.begin(), grid.max_chunks.end(), 1u) != grid.max_chunks.end();
    for (uint32_t n : grid.max_one_shot)
      if (!one || std::find(grid.buffer_tokens.begin(), grid.buffer_tokens.end(), n) == grid.buffer_tokens.end())
        settings.push_back({p, n, 1u, i, true});
  }

  check_costs(grid);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  Ticker ticker(options, settings.size(), batches.size());
  const Shared shared = shared_terms(batches, grid, options.threads ? options.threads : cores, &ticker);
  std::vector<Evaluated> evaluated(settings.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mutex;
  auto report = [&] {
    ticker.setting_done();
    const size_t d = ++done;
    if (options.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(d, settings.size());
    }
  };

  if (options.max_planner) {  // one device: one thread
    Batch scratch;
    profile::PhaseTimer timer;
    PlanTables planned;
    MaxPlan plan_max = [&](const Batch& b, policies::MaxTablesView& view) {
      const PlanShape shape = plan_shape(b);
      if (!shape.feasible) return policies::policy_outcome(b, policies::Policy{});
      planned = options.max_planner->plan(b, timer);
      view = policies::max_tables_view(planned);
      return policies::outcome_from_tables(b, planned);
    };
    for (size_t i = 0; i < settings.size() && !profile::stop_requested(); ++i) {
      evaluated[i] = evaluate(batches, settings[i], grid, shared, plan_max, scratch, ticker);
      report();
    }
  } else {
    unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<size_t>(threads, settings.size()));
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto worker = [&] {
      try {
        Batch scratch;  // each thread sets N and M on its own copy of the batch at hand
        CpuMaxPlanner cpu;
        MaxPlan plan_max = [&cpu](const Batch& b, policies::MaxTablesView& view) { return cpu(b, view); };
        for (size_t i = next++; i < settings.size() && !profile::stop_requested(); i = next++) {
          evaluated[i] = evaluate(batches, settings[i], grid, shared, plan_max, scratch, ticker);
          report();
        }
      } catch (const Interrupted&) {  // inside a large batch: its setting is left unfinished, as on any stop
        next = settings.size();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = settings.size();
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  }

  if (!profile::stop_requested()) ticker.finish();
  if (!batches.empty()) bound_rows(evaluated, settings, shared.lower, grid.policies.size(), batches.size());

  SweepResult result;
  result.settings = settings.size();
  result.batches = batches.size();
  for (const Batch& b : batches) result.requests += b.batch_size();
  result.mean_batch_size = batches.empty() ? 0 : static_cast<double>(result.requests) / static_cast<double>(batches.size());
  result.max_planner = options.max_planner ? options.max_planner->name() : "cpu-fast";
  result.costs = grid.costs;
  for (Evaluated& e : evaluated) {
    SweepRow& base = e.row;
    if (base.batches == 0 && !batches.empty()) {  // stopped before this setting finished
      result.interrupted = true;
      continue;
    }
    if (grid.models.empty()) {
      result.rows.push_back(std::move(base));
      continue;
    }
    for (const models::ModelDims& model : grid.models)
      for (uint32_t tp : grid.tps) {
        SweepRow row = base;
        row.model = model;
        row.memory = models::buffer_memory(model, tp, grid.dtype);
        if (const auto k = cost_for(grid, model, tp)) {
          row.time = e.times[*k];
          row.time->layers = model.num_layers;
          row.fused_loop = grid.costs[*k].up_projection == "fused";
        }
        result.rows.push_back(std::move(row));
      }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace mlaplan::sweeps
