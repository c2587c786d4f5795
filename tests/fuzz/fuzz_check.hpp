// Shared by the libFuzzer targets of tests/fuzz: a check that aborts (so libFuzzer records the input
// as a crash) whatever NDEBUG says, and the treatment of exceptions every target shares.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "mlaplan/batch.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_tables.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan_fuzz {

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "\n*** fuzz invariant broken at %s:%d: %s\n", file, line, what.c_str());
  std::fflush(stderr);
  std::abort();
}

// True when `message` starts with `file`, as every InputError of a reader does. (Messages may quote
// user text with control characters in it: the CLI escapes those when it prints the one error line.)
inline bool names_file(const std::string& message, const std::string& file) { return message.rfind(file, 0) == 0; }

}  // namespace mlaplan_fuzz

// FUZZ_CHECK(condition, message): `message` (a std::string expression) is only evaluated on failure.
#define FUZZ_CHECK(cond, message)                                                      \
  do {                                                                                 \
    if (!(cond)) ::mlaplan_fuzz::fail(__FILE__, __LINE__, std::string(#cond) + ": " + (message)); \
  } while (0)

// Any exception other than the expected rejection is a bug: say which and abort.
#define FUZZ_UNEXPECTED(step)                                                                       \
  catch (const std::exception& e) {                                                                 \
    ::mlaplan_fuzz::fail(__FILE__, __LINE__, std::string(step) + " threw an unexpected exception: " + e.what()); \
  }

namespace mlaplan_fuzz {

// A feasible batch: the reference and the fast CPU planner must give identical tables, and those
// tables must keep every property of semantics.md. `what` names the batch in a failure message.
inline mlaplan::PlanTables check_feasible_plan(const mlaplan::Batch& b, const std::string& what) {
  mlaplan::PlanTables ref, fast;
  try {
    ref = mlaplan::plan_reference(b);
    fast = mlaplan::plan_fast_cpu(b);
  }
  FUZZ_UNEXPECTED("planning a feasible batch")
  FUZZ_CHECK(ref == fast, "the reference and the fast CPU planner disagree on " + what);
  const mlaplan::check::PropertyReport report = mlaplan::check::check_properties(b, ref);
  FUZZ_CHECK(report.ok(), report.messages.front() + " on " + what);
  return ref;
}

}  // namespace mlaplan_fuzz
