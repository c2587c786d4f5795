#include "mlaplan/policies/port_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "mlaplan/errors.hpp"
#include "mlaplan/check/shrink.hpp"
#include "mlaplan/check/table_diff.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/policies/policy_check.hpp"

namespace mlaplan::policies {

namespace {

constexpr const char* kPortPolicies =
    "max, packed, packed/trtllm, even-split, even-split/sglang, or an engine: vllm (packed), sglang (even-split/sglang), "
    "trtllm (packed/trtllm)";

}  // namespace

Policy port_policy(const std::string& name, const std::string& option) {
  // Checked before parse_policies, which would read guided's cost file.
  if (name.find(',') != std::string::npos || name == "all" || name == "variants" || name == "engines")
    throw InputError(fmt::format("{} {}: one policy per run; run verify once for each of {}", option, name, kPortPolicies));
  std::string head = name.substr(0, name.find_first_of(":/"));
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  if (head == "waves" || head == "guided")
    throw InputError(fmt::format("{} {}: mlaplan's own policy, which no engine runs, so there is no port of it to check; "
                                 "give {}",
                                 option, name, kPortPolicies));
  std::vector<Policy> named;
  try {
    named = parse_policies(name, Policy{}, option);
  } catch (const InputError&) {
    named.clear();
  }
  if (named.size() != 1)
    throw InputError(fmt::format("{} {}: unknown policy; a port's policy is one of {}", option, name, kPortPolicies));
  return named.front();
}

std::string port_policy_word(const Policy& policy) {
  if (policy.kind == PolicyKind::max) return "";
  Policy algorithm = policy;
  algorithm.engine.clear();  // "vllm (packed)" plans as packed
  return algorithm.name();
}

uint64_t port_answer_rows(const Batch& batch, const Policy& policy) {
  const PolicyOutcome outcome = policy_outcome(batch, policy);
  return 2 * std::max<uint64_t>(batch.max_chunks, outcome.refused ? 0 : outcome.chunks) + 16;
}

std::optional<check::CaseResult> judge_policy_refusal(const Policy& policy, const std::optional<PolicyPlan>& reference,
                                                      const std::string& why, bool plan_refused, const std::string& who) {
  if (!plan_refused && reference) return std::nullopt;
  check::CaseResult r;
  r.refused = plan_refused;
  if (plan_refused && reference)
    r.detail = fmt::format("{} refuses a batch policy {} plans in {} chunks", who, policy.name(), reference->outcome.chunks);
  else if (!plan_refused)
    r.detail = fmt::format("{} holds tables for a batch policy {} refuses: {}", who, policy.name(), why);
  r.passed = r.detail.empty();
  return r;
}

check::CaseResult judge_policy_tables(const Batch& batch, const Policy& policy, const PolicyPlan& reference,
                                      const PlanTables& tables) {
  check::CaseResult r;
  const check::TableDiff diff = check::diff_tables(reference.tables, tables);
  if (!diff.equal()) r.detail = diff.describe();
  if (r.detail.empty()) {  // equal tables: the invariants too, as run checks them
    const InvariantReport inv = check_policy_invariants(batch, policy, tables, reference.outcome.chunks);
    if (!inv.ok()) r.detail = fmt::format("{} ({} invariant violations)", inv.messages.front(), inv.violations);
  }
  r.passed = r.detail.empty();
  r.diff = diff;
  return r;
}

check::CaseResult check_policy_port(const check::Scenario& s, profile::Planner& port, const Policy& policy,
                                    const PortMemory& memory, profile::PhaseTimer& timer) {
  std::optional<PolicyPlan> ref;
  std::string why;
  {
    auto scope = timer.phase("reference");
    const PolicyOutcome outcome = policy_outcome(s.batch, policy);
    if (outcome.refused) {
      why = outcome.why;
    } else {  // the policy may need more chunk rows than max_chunks: weighed before they are made
      io::require_tables_fit(s, memory.bytes, memory.given, std::max<uint64_t>(s.batch.max_chunks, outcome.chunks));
      ref = plan_policy(s.batch, policy);
    }
  }
  std::optional<PlanTables> tables;
  uint64_t asked_min = 0;
  try {
    tables = port.plan(s.batch, timer);
  } catch (const InfeasibleBatch& e) {
    asked_min = e.min_max_chunks();
  }
  auto scope = timer.phase("check");
  check::CaseResult r;
  if (!tables && asked_min) {  // max's refusal, not this policy's
    r.refused = true;
    r.detail = fmt::format("the port refuses asking for max_chunks >= {}, but policy {} has no such bound (its refusal is "
                           "`infeasible` alone)",
                           asked_min, policy.name());
    return r;
  }
  if (auto refusal = judge_policy_refusal(policy, ref, why, !tables, "the port")) return *refusal;
  if (tables->max_chunks != ref->tables.max_chunks) {
    r.detail = fmt::format("the answer holds {} chunk rows; policy {}'s plan has {} (max_chunks {}, or its {} chunks when "
                           "more)",
                           tables->max_chunks, policy.name(), ref->tables.max_chunks, s.batch.max_chunks,
                           ref->outcome.chunks);
    return r;
  }
  return judge_policy_tables(s.batch, policy, *ref, *tables);
}

std::optional<check::Scenario> make_port_reproducer(const check::Scenario& failing, profile::Planner& port,
                                                    const Policy& policy, const PortMemory& memory,
                                                    const std::string& detail, const check::BatchLimits& limits) {
  auto judge = [&](const check::Scenario& candidate) {
    profile::PhaseTimer scratch;
    try {
      return check_policy_port(candidate, port, policy, memory, scratch);
    } catch (const InputError&) {  // a smaller buffer whose policy tables pass --memory-limit: not a candidate
      check::CaseResult passed;
      passed.passed = true;
      return passed;
    }
  };
  return check::make_reproducer(failing, port.name(), judge, detail, limits, false,
                                fmt::format("a plan of policy {}, not max: replay it with verify --external CMD --policy {}",
                                            policy.name(), port_policy_word(policy)));
}

}  // namespace mlaplan::policies
