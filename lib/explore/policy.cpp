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
    case PolicyKind::waves: {
      const Policy d;
      if (waves_heads == d.waves_heads && waves_slots == d.waves_slots && waves_tile == d.waves_tile) return "waves";
      return waves_tile == d.waves_tile ? fmt::format("waves/h{}-s{}", waves_heads, waves_slots)
                                        : fmt::format("waves/h{}-s{}-t{}", waves_heads, waves_slots, waves_tile);
    }
  }
  return "?";
}

namespace {

// "h16-s132" or "h16-s132-t64": the heads, slots and query tile of waves' launch.
void parse_waves_shape(const std::string& text, Policy& p, const std::string& option, const std::string& item) {
  auto bad = [&] {
    return InputError(fmt::format("{} {}: waves takes its launch's shape as waves/h<heads>-s<slots>[-t<tile>], each a "
                                  "whole number from 1 to 65536 (e.g. waves/h128-s132 for DeepSeek-V3 at TP 1 on an "
                                  "H200); plain waves is h16-s132-t128",
                                  option, item));
  };
  size_t at = 0;
  auto number = [&](char key) -> uint32_t {
    if (at >= text.size() || text[at] != key) throw bad();
    ++at;
    uint64_t v = 0;
    size_t digits = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) && digits < 6) {
      v = v * 10 + static_cast<uint64_t>(text[at++] - '0');
      ++digits;
    }
    if (digits == 0 || v == 0 || v > 65536) throw bad();
    return static_cast<uint32_t>(v);
  };
  p.waves_heads = number('h');
  if (at >= text.size() || text[at++] != '-') throw bad();
  p.waves_slots = number('s');
  if (at < text.size()) {
    if (text[at++] != '-') throw bad();
    p.waves_tile = number('t');
  }
  if (at != text.size()) throw bad();
}

}  // namespace

PolicyKind parse_policy_kind(const std::string& name, const std::string& option) {
  if (name == "max") return PolicyKind::max;
  if (name == "packed") return PolicyKind::packed;
  if (name == "even-split" || name == "even_split") return PolicyKind::even_split;
  if (name == "waves") return PolicyKind::waves;
  throw InputError(fmt::format("{} {}: unknown policy; choose max, packed, even-split or waves, a variant (packed/vllm, "
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
      } else if (p.kind == PolicyKind::waves) {
        parse_waves_shape(variant, p, option, item);
      } else {
        throw InputError(fmt::format("{} {}: unknown variant '{}'; packed/vllm, packed/trtllm, even-split/vllm and "
                                     "even-split/sglang name one",
                                     option, item, variant));
      }
    }
    if (p.kind == PolicyKind::packed && p.packed == PackedVariant::trtllm) p.split_align = 0;  // TensorRT-LLM has none
    // waves has none of the engines' variants: --packed trtllm beside it must not make it priced,
    // dispatched or named as TensorRT-LLM's.
    if (p.kind == PolicyKind::waves) {
      p.packed = PackedVariant::vllm;
      p.split_align = 0;
      p.even_split = EvenSplitVariant::vllm;
    }
    bool seen = false;
    for (const Policy& x : policies) seen = seen || x.name() == p.name();
    if (!seen) policies.push_back(p);
  }
  return policies;
}

}  // namespace mlaplan::explore
