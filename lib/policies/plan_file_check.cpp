#include "mlaplan/policies/plan_file_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <utility>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/engines.hpp"
#include "mlaplan/policies/policy_check.hpp"
#include "mlaplan/policies/port_check.hpp"

namespace mlaplan::policies {

namespace {

using PlanPairs = std::vector<std::pair<const io::PlanEntry*, const check::Scenario*>>;

// Pairs each plan of the file with the scenario it plans: by its "scenario" name, else the one
// scenario selected (the file's only one, or --scenario's).
PlanPairs match_plans(const io::PlanFile& file, const std::vector<check::Scenario>& scenarios, const PlanFileSources& src) {
  const std::string& path = src.scenario_path;
  auto names = [&] {
    std::string list;
    for (const auto& s : scenarios) list += (list.empty() ? "" : ", ") + s.name;
    return list;
  };
  PlanPairs pairs;
  for (const io::PlanEntry& e : file.plans) {
    const check::Scenario* match = nullptr;
    if (e.scenario)
      for (const check::Scenario& s : scenarios)
        if (!match && s.name == *e.scenario) match = &s;
    if (!match) {
      if (!file.is_list) {  // one plan: the tables of the one scenario selected, whatever they are named
        if (scenarios.size() != 1)
          throw InputError(fmt::format("{}: holds {} scenarios; pick the one the tables belong to with --scenario NAME", path,
                                       scenarios.size()));
        match = &scenarios[0];
      } else if (!e.scenario) {
        if (scenarios.size() != 1)
          throw InputError(fmt::format("{}: {}scenario: missing, and {} holds {} scenarios; name the scenario each plan "
                                       "belongs to (run writes it), or pick one with --scenario NAME",
                                       src.plan_path, e.field_prefix, path, scenarios.size()));
        match = &scenarios[0];
      } else if (src.scenario_picked) {
        continue;  // under --scenario, the plan of another scenario
      } else {
        throw InputError(fmt::format("{}: {}scenario: '{}' is not a scenario of {} (it holds: {}); check that the two "
                                     "files belong together, or pick one scenario with --scenario NAME",
                                     src.plan_path, e.field_prefix, *e.scenario, path, names()));
      }
    }
    pairs.emplace_back(&e, match);
  }
  if (pairs.empty())
    throw InputError(file.plans.empty()
                         ? fmt::format("{}: holds no plan (an empty \"scenarios\" list); give the plans to check", src.plan_path)
                         : fmt::format("{}: holds no plan for scenario '{}'; its plans name other scenarios", src.plan_path,
                                       scenarios[0].name));
  return pairs;
}

}  // namespace

Policy plan_entry_policy(const io::PlanEntry& e, const std::string& path) {
  std::string spelled = e.policy;
  // An engine's name as run writes it, "sglang (even split)": the engine (its label names what it
  // does on the GPU, not another plan).
  const size_t label = spelled.find(" (");
  if (label != std::string::npos && spelled.back() == ')') {
    Policy named;
    if (engine_policy(spelled.substr(0, label), Policy{}, &named)) spelled = spelled.substr(0, label);
  }
  uint32_t align = 0;
  const std::string align_prefix = "packed/align-";
  if (spelled.rfind(align_prefix, 0) == 0) {
    const char* begin = spelled.data() + align_prefix.size();
    const char* end = spelled.data() + spelled.size();
    const auto [ptr, ec] = std::from_chars(begin, end, align);
    if (ec != std::errc() || ptr != end || align == 0) align = 0, spelled = "?";
    else spelled = "packed/vllm";
  }
  // guided chooses by a cost file: guided:PATH names it, plain guided's is guide_cost_file (run writes
  // it). Its problems (a missing file, one without a host section for guided/eager) are the file's.
  const size_t colon = spelled.find(':');
  std::string head = spelled.substr(0, colon);
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool guided = head == "guided" || head == "guided/eager";
  if (!e.guide_cost_file.empty() && (!guided || colon != std::string::npos))
    throw InputError(fmt::format("{}: {}guide_cost_file: only a plan of plain guided or guided/eager names one (policy "
                                 "'{}'{}); drop it",
                                 path, e.field_prefix, e.policy,
                                 guided ? ", whose own file follows ':'" : ""));
  if (guided && colon == std::string::npos) {
    if (e.guide_cost_file.empty())
      throw InputError(fmt::format("{}: {}guide_cost_file: missing, and policy {} chooses each batch's plan by a cost "
                                   "file; name the --cost file the plan was made with (run --format json writes it)",
                                   path, e.field_prefix, e.policy));
    Policy p;
    p.kind = PolicyKind::guided;
    p.guide_eager = head == "guided/eager";
    std::vector<Policy> one{p};
    attach_guide(one, std::make_shared<const cost::CostModel>(cost::read_cost_model(e.guide_cost_file)), false,
                 fmt::format("{}: {}policy", path, e.field_prefix), "guide_cost_file");
    return one.front();
  }
  if (guided) return parse_policies(spelled, Policy{}, fmt::format("{}: {}policy:", path, e.field_prefix)).front();
  if (spelled.find(',') == std::string::npos && spelled != "all" && spelled != "variants" &&
      spelled != "engines") {
    try {
      const std::vector<Policy> named = parse_policies(spelled, Policy{});
      if (named.size() == 1) {
        Policy p = named[0];
        if (align) p.split_align = align;
        return p;
      }
    } catch (const InputError&) {  // named below, with the file and the field
    }
  }
  throw InputError(fmt::format("{}: {}policy: unknown policy '{}'; run writes max, packed, packed/trtllm, packed/align-A, "
                               "even-split/vllm, even-split/sglang, vllm, sglang, trtllm, waves (waves/even, waves/hH-sS), guided, "
                               "guided/eager, guided:PATH or guided/eager:PATH",
                               path, e.field_prefix, e.policy));
}

check::CaseResult check_policy_plan(const check::Scenario& s, const io::PlanEntry& e, const Policy& policy,
                                    profile::PhaseTimer& timer) {
  check::CaseResult r;
  check::PlanClaims echo;
  echo.batch_size = e.claims.batch_size;
  echo.page_size = e.claims.page_size;
  echo.buffer_token_size = e.claims.buffer_token_size;
  echo.max_chunks = e.claims.max_chunks;
  if (auto wrong = check::compare_claims(s.batch, echo, 0, 0, 0, std::nullopt)) {
    r.detail = *wrong;
    return r;
  }
  std::optional<PolicyPlan> ref;
  std::string why;
  {
    auto scope = timer.phase("reference");
    try {
      ref = plan_policy(s.batch, policy);
    } catch (const InputError& refusal) {
      why = refusal.what();
    }
  }
  auto scope = timer.phase("check");
  if (auto refusal = judge_policy_refusal(policy, ref, why, e.refused, "the plan")) return *refusal;
  const uint32_t rows = ref->tables.max_chunks;  // max(max_chunks, chunks used)
  const io::LoadedPlan plan = io::shape_plan_tables(
      e, s.batch.batch_size(), rows,
      fmt::format("policy {}'s plan of this scenario has {} (max_chunks, or its chunks when more)", policy.name(), rows));
  if (!plan.problem.empty()) {
    r.detail = plan.problem;
    return r;
  }
  r = judge_policy_tables(s.batch, policy, *ref, *plan.tables);  // claims: below
  if (r.detail.empty()) {
    check::PlanClaims facts = e.claims;
    facts.batch_size = facts.page_size = facts.buffer_token_size = facts.max_chunks = std::nullopt;
    // min_max_chunks is max's notion (the chunks it needs); another policy has no such bound to state.
    if (facts.min_max_chunks)
      r.detail = fmt::format("min_max_chunks: stated for policy {}, which has no such bound; leave it out", policy.name());
    else if (auto wrong = check::compare_claims(s.batch, facts, ref->outcome.chunks, ref->outcome.streamed_rows,
                                         ref->outcome.payload_tokens, std::nullopt))
      r.detail = *wrong;
  }
  r.passed = r.detail.empty();
  return r;
}

std::vector<check::VerifyCaseRecord> check_plan_file(const io::PlanFile& file, const std::vector<check::Scenario>& scenarios,
                                                     const PlanFileSources& src,
                                                     const std::function<void(const check::VerifyCaseRecord&)>& on_case) {
  const PlanPairs pairs = match_plans(file, scenarios, src);
  std::vector<Policy> policies;  // parsed before any check: a bad name is bad input
  std::map<std::pair<std::string, std::string>, size_t> first_of;  // a list of guided plans reads its file once
  for (const auto& [entry, scenario] : pairs) {
    const auto [at, fresh] = first_of.emplace(std::make_pair(entry->policy, entry->guide_cost_file), policies.size());
    policies.push_back(!fresh ? policies[at->second] : entry->policy == "max" ? Policy{} : plan_entry_policy(*entry, src.plan_path));
  }

  std::vector<check::VerifyCaseRecord> records;
  auto record = [&](check::VerifyCaseRecord rec) {
    if (on_case) on_case(rec);
    records.push_back(std::move(rec));
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    const io::PlanEntry& e = *pairs[i].first;
    const check::Scenario& s = *pairs[i].second;
    check::VerifyCaseRecord rec;
    rec.group = src.scenario_path;
    rec.name = s.name;
    rec.planner = e.where;
    profile::PhaseTimer timer;
    check::CaseResult r;
    if (policies[i].kind != PolicyKind::max) {
      rec.shape = "policy " + policies[i].name();
      r = check_policy_plan(s, e, policies[i], timer);
    } else {
      const io::LoadedPlan plan = io::shape_plan_tables(e, s.batch.batch_size(), s.batch.max_chunks,
                                                        fmt::format("the scenario has max_chunks = {}", s.batch.max_chunks));
      if (!plan.problem.empty())
        r.detail = plan.problem;
      else
        r = check::check_plan_claims(s, plan.tables, e.claims, timer);
    }
    rec.passed = r.passed;
    rec.refused = r.refused;
    rec.detail = r.detail;
    for (const auto& [phase, us] : timer.phases()) rec.check_us += us;
    record(std::move(rec));
  }
  // A list file is the producer's plans of the scenarios: one it left out is a failure, not a pass.
  for (const check::Scenario& s : scenarios) {
    if (!file.is_list) break;
    if (std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) { return p.second == &s; })) continue;
    check::VerifyCaseRecord rec;
    rec.group = src.scenario_path;
    rec.name = s.name;
    rec.planner = src.plan_path;
    rec.detail = fmt::format("no plan for this scenario in {}", src.plan_path);
    record(std::move(rec));
  }
  return records;
}

}  // namespace mlaplan::policies
