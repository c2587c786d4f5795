#include "mlaplan/explore/policy.hpp"

#include <fmt/format.h>

#include "mlaplan/errors.hpp"

namespace mlaplan::explore {

std::string Policy::name() const {
  switch (kind) {
    case PolicyKind::max:
      return "max";
    case PolicyKind::packed:
      if (packed == PackedVariant::trtllm) return "packed/trtllm";
      return split_align == 0 ? "packed" : fmt::format("packed/align-{}", split_align);
    case PolicyKind::even_split:
      return even_split == EvenSplitVariant::sglang ? "even-split/sglang" : "even-split/vllm";
  }
  return "?";
}

PolicyKind parse_policy_kind(const std::string& name, const std::string& option) {
  if (name == "max") return PolicyKind::max;
  if (name == "packed") return PolicyKind::packed;
  if (name == "even-split" || name == "even_split") return PolicyKind::even_split;
  throw InputError(fmt::format("{} {}: unknown policy; choose max, packed or even-split", option, name));
}

std::vector<PolicyKind> parse_policy_list(const std::string& list, const std::string& option) {
  if (list == "all") return {PolicyKind::max, PolicyKind::packed, PolicyKind::even_split};
  std::vector<PolicyKind> kinds;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const PolicyKind k = parse_policy_kind(list.substr(start, comma - start), option);
    bool seen = false;
    for (PolicyKind x : kinds) seen = seen || x == k;
    if (!seen) kinds.push_back(k);
    start = comma + 1;
  }
  return kinds;
}

}  // namespace mlaplan::explore
