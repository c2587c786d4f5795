// The record of a `verify` run and its machine-readable forms: a JSON report and JUnit XML.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlaplan::check {

struct VerifyCaseRecord {
  std::string group;    // the file, "built-in edge cases" or "fuzz (seed S)"
  std::string name;     // the scenario's name
  std::string shape;    // the generator's shape for fuzz cases
  std::string planner;  // "gpu-fast", ...
  bool passed = false;
  bool refused = false;    // the planner refused the batch as infeasible (rightly, when passed)
  std::string detail;      // the first problem
  std::string reproducer;  // path of the shrunk reproducer written for a failure
  double plan_us = 0;      // the planner's own phases
  double check_us = 0;     // reference, properties and expected block
};

struct VerifyRun {
  std::string backend;
  std::vector<std::string> planners;
  std::optional<uint64_t> seed;
  uint64_t fuzz = 0;
  double wall_seconds = 0;
  std::vector<VerifyCaseRecord> cases;

  uint64_t failed() const;
};

// {"backend", "planners", "seed", "passed", "failed", "wall_seconds", "cases": [...]}
std::string format_verify_json(const VerifyRun& run);
// One <testsuite> per group, one <testcase> per case and planner, <failure> with the detail.
std::string format_verify_junit(const VerifyRun& run);

}  // namespace mlaplan::check
