// A planner in another process, in any language (an engine's port, MAX's own kernel through a
// harness), reached through the line protocol of docs/external.md: one request line per batch on its
// stdin, one answer line on its stdout. `mlaplan verify --external CMD` checks it like the built-in
// planners: fuzzing, the three-way checks, shrunk reproducers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "mlaplan/profile/planner.hpp"

namespace mlaplan::check {

struct ExternalPlannerOptions {
  double answer_timeout_seconds = 60;  // per batch; a planner silent for longer is a failure (DeviceError)
};

// Starts `command` with /bin/sh -c. The planner's name is "external". A batch it refuses
// (`infeasible [M]`) throws InfeasibleBatch; an `error` answer, a malformed answer, an exit or a
// timeout throws DeviceError naming the batch it was given.
std::unique_ptr<profile::Planner> make_external_planner(const std::string& command, const ExternalPlannerOptions& options = {});

// The protocol's two lines, for ports written in C++ and for tests.
std::string external_request_line(const Batch& batch);
// The longest answer a plan request for `batch` can have, in bytes without the newline: "tables" and
// M(B+1) + MB offsets of at most 10 digits and M lengths of at most 11 characters, each after one
// space, plus ExternalProcess::kShortAnswerBytes of room (a CR, stray blanks, an error message).
// A longer line is refused as soon as it passes this.
size_t max_plan_answer_bytes(const Batch& batch);
// Parses an answer: tables, or InfeasibleBatch for `infeasible`, or DeviceError for `error` and
// malformed lines (naming what is wrong: the word, the count of numbers, the bad number).
PlanTables parse_external_answer(const std::string& line, const Batch& batch);

}  // namespace mlaplan::check
