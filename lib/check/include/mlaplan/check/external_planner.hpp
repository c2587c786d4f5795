// A planner in another process, in any language (an engine's port, MAX's own kernel through a
// harness), reached through the line protocol of docs/external.md: one request line per batch on its
// stdin, one answer line on its stdout. `mlaplan verify --external CMD` checks it like the built-in
// planners: fuzzing, the three-way checks, shrunk reproducers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mlaplan/profile/planner.hpp"

namespace mlaplan::check {

struct ExternalPlannerOptions {
  double answer_timeout_seconds = 60;  // per batch; a planner silent for longer is a failure (DeviceError)
  // A port of another policy than max (verify --policy): the word its requests carry after `plan`
  // ("packed", "even-split/sglang"; empty for max, whose requests stay as they were), and the most
  // chunk rows an answer may hold (the policy's tables have max(max_chunks, its chunks) rows, so
  // the answer's count of numbers says its rows).
  std::string policy;
  std::function<uint64_t(const Batch&)> answer_rows;
};

// Starts `command` with /bin/sh -c. The planner's name is "external" ("external (POLICY)" for a policy's port). A batch it refuses
// (`infeasible [M]`) throws InfeasibleBatch; an `error` answer, a malformed answer, an exit or a
// timeout throws DeviceError naming the batch it was given.
std::unique_ptr<profile::Planner> make_external_planner(const std::string& command, const ExternalPlannerOptions& options = {});

// The protocol's two lines, for ports written in C++ and for tests.
// `policy`, where given, goes after `plan`: "plan packed P N M B ...".
std::string external_request_line(const Batch& batch, const std::string& policy = "");
// The longest answer a plan request for `batch` can have, in bytes without the newline: "tables" and
// M(B+1) + MB offsets of at most 10 digits and M lengths of at most 11 characters, each after one
// space, plus ExternalProcess::kShortAnswerBytes of room (a CR, stray blanks, an error message).
// A longer line is refused as soon as it passes this. `rows`, where not 0, stands for M: a policy's
// answer may hold more chunk rows than max_chunks.
size_t max_plan_answer_bytes(const Batch& batch, uint64_t rows = 0);
// Parses an answer: tables, or InfeasibleBatch for `infeasible`, or DeviceError for `error` and
// malformed lines (naming what is wrong: the word, the count of numbers, the bad number). With
// `any_rows` (a policy's port) the tables may hold any number R of chunk rows, R(2B + 2) numbers.
PlanTables parse_external_answer(const std::string& line, const Batch& batch, bool any_rows = false);

}  // namespace mlaplan::check
