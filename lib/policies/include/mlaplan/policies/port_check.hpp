// `verify --external CMD --policy NAME`: an engine's port of its chunking policy (vLLM's packed split,
// vLLM's or SGLang's even split, TensorRT-LLM's packing), run through the line protocol of
// docs/external.md and judged against mlaplan's own plan of that policy, the one `run --policy` makes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mlaplan/check/batch_limits.hpp"
#include "mlaplan/check/case_check.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::policies {

// The policy --policy NAME names for a port: max, packed (packed/vllm), packed/trtllm, even-split
// (even-split/vllm), even-split/sglang, or an engine (vllm, sglang, trtllm: the one algorithm each
// runs). Anything else (a list, waves, guided: mlaplan's own, which no engine runs) is an InputError
// naming `option`.
Policy port_policy(const std::string& name, const std::string& option = "--policy");

// The word a request carries after `plan`: "" for max (its requests stay as they were), else the
// algorithm's name: packed, packed/trtllm, even-split/vllm or even-split/sglang.
std::string port_policy_word(const Policy& policy);

// The most chunk rows a port's answer for `batch` is read to: twice the rows of the policy's own
// tables (max(max_chunks, its chunks)) and 16 more, so that a plan with a wrong count of chunks is
// still read and judged.
uint64_t port_answer_rows(const Batch& batch, const Policy& policy);

// Where the policy's tables must fit: verify's --memory-limit.
struct PortMemory {
  uint64_t bytes = 0;
  bool given = false;
};

// Plans the scenario with the port and judges the answer against the policy's plan: a refusal must
// meet a refusal (stating no max_chunks, which only max has), tables must equal the policy's cell
// for cell (max(max_chunks, its chunks) rows), then hold the policy's invariants. The scenario's
// expected block, max's plan, is not read. Tables past `memory` are an InputError naming the
// scenario; a port that fails to answer, a DeviceError.
check::CaseResult check_policy_port(const check::Scenario& scenario, profile::Planner& port, const Policy& policy,
                                    const PortMemory& memory, profile::PhaseTimer& timer);

// The failing case shrunk while the port still fails it (check::make_reproducer), without an
// expected block, its description ending with how to replay it under the policy.
std::optional<check::Scenario> make_port_reproducer(const check::Scenario& failing, profile::Planner& port,
                                                    const Policy& policy, const PortMemory& memory,
                                                    const std::string& detail, const check::BatchLimits& limits);

// The verdict shared with verify --plan's plans of a policy. When the policy refuses the batch
// (`reference` empty, `why` its reason) or the plan does (`plan_refused`), the refusals are compared
// (`who` names the plan's producer: "the plan", "the port"); nothing when both planned.
std::optional<check::CaseResult> judge_policy_refusal(const Policy& policy, const std::optional<PolicyPlan>& reference,
                                                      const std::string& why, bool plan_refused, const std::string& who);
// Both planned: the tables cell for cell against the reference's, then the policy's invariants.
check::CaseResult judge_policy_tables(const Batch& batch, const Policy& policy, const PolicyPlan& reference,
                                      const PlanTables& tables);

}  // namespace mlaplan::policies
