#include "mlaplan/check/shrink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "mlaplan/check/case_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::check {

namespace {

// A batch as per-sequence (cache, input) lengths, which every edit keeps valid; rebuilt into offsets.
struct Shape {
  uint32_t base = 0;
  std::vector<uint32_t> cache, input;

  explicit Shape(const Batch& b) : base(b.input_row_offsets.front()), cache(b.cache_lengths) {
    for (uint32_t i = 0; i < b.batch_size(); ++i) input.push_back(b.input_length(i));
  }
  void apply(Batch& b) const {
    b.cache_lengths = cache;
    b.input_row_offsets.assign(1, base);
    for (uint32_t len : input) b.input_row_offsets.push_back(b.input_row_offsets.back() + len);
  }
};

bool valid(const Batch& b) {
  try {
    validate_batch(b);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

Scenario shrink_scenario(const Scenario& failing, const std::function<bool(const Scenario&)>& still_fails, int budget,
                         const BatchLimits& limits) {
  Scenario best = failing;
  best.expected.reset();
  if (!still_fails(best)) return failing;  // the failure needs the expected block: nothing to shrink
  --budget;

  // Tries one edit of the batch; keeps it when the case still fails.
  auto attempt = [&](const std::function<void(Batch&)>& edit) {
    if (profile::stop_requested()) budget = 0;  // Ctrl-C: keep what is shrunk so far
    if (budget <= 0) return false;
    Scenario candidate = best;
    edit(candidate.batch);
    if (!valid(candidate.batch) || !limits.admits(candidate.batch)) return false;
    --budget;
    if (!still_fails(candidate)) return false;
    best = std::move(candidate);
    return true;
  };

  bool progress = true;
  while (progress && budget > 0) {
    progress = false;
    // Drop runs of sequences, long runs first.
    for (size_t run = std::max<size_t>(best.batch.batch_size() / 2, 1); run >= 1; run /= 2) {
      for (size_t at = 0; at + run <= best.batch.batch_size();) {
        const bool dropped = attempt([&](Batch& b) {
          Shape s(b);
          s.cache.erase(s.cache.begin() + at, s.cache.begin() + at + run);
          s.input.erase(s.input.begin() + at, s.input.begin() + at + run);
          s.apply(b);
        });
        progress |= dropped;
        if (!dropped) at += run;
      }
      if (run == 1) break;
    }
    // Fewer chunks: the smallest max_chunks that still fails (among the allowed ones, with limits).
    std::vector<uint32_t> fewer = {1u, best.batch.max_chunks / 2, best.batch.max_chunks - 1};
    if (!limits.max_chunks.empty()) fewer = limits.max_chunks;
    for (uint32_t m : fewer) {
      if (m >= 1 && m < best.batch.max_chunks) progress |= attempt([m](Batch& b) { b.max_chunks = m; });
    }
    // Simpler numbers: no base offset, page size 1, then smaller lengths.
    if (best.batch.input_row_offsets.front() != 0)
      progress |= attempt([](Batch& b) {
        Shape s(b);
        s.base = 0;
        s.apply(b);
      });
    const uint32_t smallest_page = limits.page_sizes.empty() ? 1 : limits.page_sizes.front();
    if (best.batch.page_size > smallest_page) progress |= attempt([smallest_page](Batch& b) { b.page_size = smallest_page; });
    for (size_t i = 0; i < best.batch.batch_size(); ++i) {
      for (int field = 0; field < 2; ++field) {
        for (int step = 0; step < 2; ++step) {  // to zero, else halve
          const uint32_t current = field == 0 ? best.batch.cache_lengths[i] : best.batch.input_length(static_cast<uint32_t>(i));
          if (current == 0) break;
          const uint32_t next = step == 0 ? 0 : current / 2;
          progress |= attempt([&](Batch& b) {
            Shape s(b);
            (field == 0 ? s.cache : s.input)[i] = next;
            s.apply(b);
          });
        }
      }
    }
    if (best.batch.buffer_token_size > 1)
      progress |= attempt([](Batch& b) { b.buffer_token_size = std::max<uint32_t>(b.buffer_token_size / 2, 1); });
  }
  return best;
}

std::optional<Scenario> make_reproducer(const Scenario& s, profile::Planner& planner, const std::string& detail,
                                        const BatchLimits& limits) {
  auto judge = [&](const Scenario& candidate) {
    profile::PhaseTimer scratch;
    return check_case(candidate, planner, scratch);
  };
  return make_reproducer(s, planner.name(), judge, detail, limits, true);
}

std::optional<Scenario> make_reproducer(const Scenario& s, const std::string& planner_name,
                                        const std::function<CaseResult(const Scenario&)>& judge, const std::string& detail,
                                        const BatchLimits& limits, bool golden, const std::string& rerun) {
  auto still_fails = [&](const Scenario& candidate) { return !judge(candidate).passed; };
  Scenario small = shrink_scenario(s, still_fails, 4000, limits);
  if (profile::stop_requested()) return std::nullopt;  // shrinking was cut short
  const CaseResult again = judge(small);
  small.name = s.name + std::string(kReproducerSuffix);
  small.description = fmt::format("Fails on {}: {} (shrunk from {}{}){}", planner_name, again.passed ? detail : again.detail,
                                  s.name, s.file.empty() ? "" : " in " + s.file, rerun.empty() ? "" : "; " + rerun);
  if (!golden) small.expected.reset();  // max's plan: no part of this judge's verdict
  if (golden && !small.expected) {  // a golden plan makes the file a failing case for any planner
    const PlanShape shape = plan_shape(small.batch);
    ExpectedPlan e;
    if (shape.feasible) {
      const PlanTables ref = plan_reference(small.batch);
      e.buffer_row_offsets = ref.buffer_row_offsets;
      e.cache_offsets = ref.cache_offsets;
      e.buffer_lengths = ref.buffer_lengths;
    } else {
      e.infeasible = true;
      e.min_max_chunks = shape.min_max_chunks;
    }
    small.expected = e;
  }
  return small;
}

}  // namespace mlaplan::check
