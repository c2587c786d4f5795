// The invariants every policy's plan has, checked on its tables without trusting the policy's code:
// each used chunk's rows run contiguously from 0 to its length, which is at most the buffer; unused
// chunks hold nothing; each sequence's pieces continue where the previous chunk stopped and add up to
// what the policy streams for it: every token streamed exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::policies {

struct InvariantReport {
  uint64_t violations = 0;
  std::vector<std::string> messages;  // the first few, naming the chunk and sequence
  bool ok() const { return violations == 0; }
};

// `chunks_used`: the chunks the policy says it uses; rows past it must be unused.
InvariantReport check_policy_invariants(const Batch& batch, const Policy& policy, const PlanTables& tables,
                                        uint64_t chunks_used, size_t max_messages = 5);

}  // namespace mlaplan::policies
