#include "sweep_bounds.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <cmath>
#include <string_view>
#include <thread>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::sweeps::detail {

void bound_rows(std::vector<Evaluated>& evaluated, const std::vector<Setting>& settings, const LowerBounds& lower,
                size_t policies, size_t batches) {
  std::vector<float> floor(batches);
  for (size_t p = 0; p < policies; ++p)
    for (size_t k = 0; k < lower[p].size(); ++k) {
      for (size_t i = 0; i < batches; ++i) floor[i] = static_cast<float>(lower[p][k][i]);
      auto rows = [&](auto&& each) {
        for (size_t s = 0; s < evaluated.size(); ++s)
          if (settings[s].policy_index == p && evaluated[s].row.batches == batches) each(evaluated[s].times[k]);
      };
      rows([&](const TimeStats& t) {
        for (size_t i = 0; i < batches; ++i) floor[i] = std::min(floor[i], t.layer_us[i]);  // a refusal is +inf
      });
      rows([&](TimeStats& t) {
        double total = 0, bound = 0;
        for (size_t i = 0; i < batches; ++i)
          if (std::isfinite(t.layer_us[i])) {
            total += t.layer_us[i];
            bound += floor[i];
          }
        t.over_lower_bound = bound > 0 ? total / bound - 1 : 0;
      });
    }
}

Ticker::Ticker(const SweepOptions& options, size_t settings, size_t batches)
    : options_(options), settings_(settings), batches_(batches), last_(std::chrono::steady_clock::now()) {}

void Ticker::add(std::atomic<uint64_t>& counter, uint64_t n, const char* phase) {
  counter += n;
  if (!options_.work_progress) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);  // another thread reports: go on
  if (!lock.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < options_.progress_every) return;
  last_ = now;
  report(phase);
}

void Ticker::report(const char* phase) {
  SweepProgress p;
  p.phase = phase;
  const bool bounds = std::string_view(phase) == "bounds";
  p.done = bounds ? bounds_.load() : priced_.load();
  p.total = bounds ? batches_ : uint64_t{batches_} * settings_;
  p.settings_done = settings_done_;
  p.settings = settings_;
  options_.work_progress(p);
}

void Ticker::finish() {
  if (!options_.work_progress) return;
  std::lock_guard<std::mutex> lock(mutex_);
  report("settings");
}

Shared shared_terms(const std::vector<Batch>& batches, const SweepGrid& grid, unsigned threads, Ticker* ticker) {
  Shared shared;
  LowerBounds& out = shared.lower;
  out.assign(grid.policies.size(), std::vector<std::vector<double>>(grid.costs.size()));
  if (grid.eager) shared.lower_wait = out;
  shared.new_steps.assign(grid.costs.size(), {});
  if (grid.costs.empty()) return shared;
  for (LowerBounds* l : {&out, &shared.lower_wait})
    for (auto& per_policy : *l)
      for (auto& v : per_policy) v.resize(batches.size());
  for (auto& v : shared.new_steps) v.resize(batches.size());
  shared.lower_iterations.assign(grid.policies.size(), std::vector<uint32_t>(batches.size()));
  shared.prefix.resize(batches.size());
  shared.total.resize(batches.size());
  std::atomic<size_t> next{0};
  constexpr size_t kBlock = 4096;
  auto bounds = [&] {
    for (size_t from = next.fetch_add(kBlock); from < batches.size() && !profile::stop_requested(); from = next.fetch_add(kBlock))
      for (size_t i = from; i < std::min(batches.size(), from + kBlock); ++i) {
        if (i % 256 == 0 && i > from) {  // a guided policy prices a batch's bound in microseconds: Ctrl-C is seen
          if (profile::stop_requested()) return;
          if (ticker) ticker->bounds(256);
        }
        const Batch& b = batches[i];
        uint64_t prefix = 0;
        for (uint32_t len : b.cache_lengths) prefix += len;
        shared.prefix[i] = prefix;
        shared.total[i] = prefix + (uint64_t{b.input_row_offsets.back()} - b.input_row_offsets.front());
        for (size_t k = 0; k < grid.costs.size(); ++k)
          shared.new_steps[k][i] = policies::new_tokens_features(b, grid.costs[k].geometry);
        for (size_t p = 0; p < grid.policies.size(); ++p)
          for (size_t k = 0; k < grid.costs.size(); ++k) {
            const policies::Policy& policy = grid.policies[p];
            const uint32_t sm = grid.costs[k].sm;
            std::optional<policies::EagerTime> eager;  // priced as the settings are: eagerly under eager timing
            if (grid.eager) eager.emplace(grid.costs[k]);
            const cost::Features f = policies::dispatched_unbounded_features(b, policy, grid.costs[k].geometry, sm,
                                                                   &shared.new_steps[k][i], eager ? &*eager : nullptr);
            out[p][k][i] = eager ? eager->clock.dev : grid.costs[k].predict_us(f);
            if (eager) shared.lower_wait[p][k][i] = eager->clock.waited();
            // The loop's iterations: the same under every cost model whose lower bound is that loop.
            if (loop_floor(policy, sm)) shared.lower_iterations[p][i] = static_cast<uint32_t>(f[cost::Term::iteration]);
          }
      }
  };
  // An exception must not leave a thread (std::terminate): the first is raised once they are joined.
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      bounds();
    } catch (const Interrupted&) {  // inside one large batch's pricing: run_sweep sees the stop request
      next = batches.size();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = batches.size();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return shared;
}

}  // namespace mlaplan::sweeps::detail
