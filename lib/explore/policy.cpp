#include "mlaplan/explore/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

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
  throw InputError(fmt::format("{} {}: unknown policy; choose max, packed or even-split, a variant (packed/vllm, "
                               "packed/trtllm, even-split/vllm, even-split/sglang), a comma list of them, all (the "
                               "three) or variants (all five)",
                               option, name));
}

std::vector<Policy> parse_policies(const std::string& list, const Policy& defaults, const std::string& option) {
  // Names in any case, as every named value of the command line: --policy MAX is max.
  std::string spelled = list;
  std::transform(spelled.begin(), spelled.end(), spelled.begin(), [](unsigned char c) { return std::tolower(c); });
  if (spelled == "all") spelled = "max,packed,even-split";
  if (spelled == "variants") spelled = "max,packed/vllm,packed/trtllm,even-split/vllm,even-split/sglang";
  std::vector<Policy> policies;
  size_t start = 0;
  while (start <= spelled.size()) {
    const size_t comma = std::min(spelled.find(',', start), spelled.size());
    const std::string item = spelled.substr(start, comma - start);
    start = comma + 1;
    const size_t slash = item.find('/');
    Policy p = defaults;
    p.kind = parse_policy_kind(item.substr(0, slash), option);
    if (slash != std::string::npos) {
      const std::string variant = item.substr(slash + 1);
      if (p.kind == PolicyKind::packed && (variant == "vllm" || variant == "trtllm")) {
        p.packed = variant == "trtllm" ? PackedVariant::trtllm : PackedVariant::vllm;
      } else if (p.kind == PolicyKind::even_split && (variant == "vllm" || variant == "sglang")) {
        p.even_split = variant == "sglang" ? EvenSplitVariant::sglang : EvenSplitVariant::vllm;
      } else {
        throw InputError(fmt::format("{} {}: unknown variant '{}'; packed/vllm, packed/trtllm, even-split/vllm and "
                                     "even-split/sglang name one",
                                     option, item, variant));
      }
    }
    if (p.kind == PolicyKind::packed && p.packed == PackedVariant::trtllm) p.split_align = 0;  // TensorRT-LLM has none
    bool seen = false;
    for (const Policy& x : policies) seen = seen || x.name() == p.name();
    if (!seen) policies.push_back(p);
  }
  return policies;
}

}  // namespace mlaplan::explore
