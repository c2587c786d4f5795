// Shrinking a failing case to a minimal reproducer: fewer sequences, fewer chunks, smaller values,
// as long as the failure persists.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <string>

#include "mlaplan/check/batch_limits.hpp"
#include "mlaplan/check/case_check.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::check {

// Greedily simplifies `failing` (dropping its expected block) while `still_fails` holds, calling it
// at most `budget` times, and no more once a stop is requested (Ctrl-C). Every candidate passed to `still_fails` is a valid batch that `limits` admits.
Scenario shrink_scenario(const Scenario& failing, const std::function<bool(const Scenario&)>& still_fails,
                         int budget = 4000, const BatchLimits& limits = {});

// What a reproducer's name ends with (make_reproducer's NAME-repro), and whether a scenario is one.
inline constexpr std::string_view kReproducerSuffix = "-repro";
inline bool is_reproducer(const Scenario& s) {
  return s.name.size() > kReproducerSuffix.size() &&
         std::string_view(s.name).substr(s.name.size() - kReproducerSuffix.size()) == kReproducerSuffix;
}

// The reproducer of a case `planner` fails with `detail`: shrunk while it still fails, named
// NAME-repro, described by the shrunk case's own failure, and given the reference's plan (or
// refusal) as its expected block unless it has one, so the file fails for any wrong planner.
// Nothing when a stop was requested while shrinking (on Ctrl-C no reproducer is written).
std::optional<Scenario> make_reproducer(const Scenario& failing, profile::Planner& planner, const std::string& detail,
                                        const BatchLimits& limits = {});
// The same with another judge than check_case (a policy's port is judged against that policy's
// plan); `golden` false leaves the expected block out (it holds max's plan, which such a judge does
// not read), and `rerun`, where given, ends the description (how to replay the file).
std::optional<Scenario> make_reproducer(const Scenario& failing, const std::string& planner_name,
                                        const std::function<CaseResult(const Scenario&)>& judge, const std::string& detail,
                                        const BatchLimits& limits, bool golden, const std::string& rerun = "");

}  // namespace mlaplan::check
