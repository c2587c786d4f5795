#include "mlaplan/policies/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"

namespace mlaplan::policies {

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
      const char* even = waves_shares == WavesShares::even ? "even" : "";
      if (waves_heads == d.waves_heads && waves_slots == d.waves_slots && waves_tile == d.waves_tile)
        return *even ? "waves/even" : "waves";
      const std::string shape = waves_tile == d.waves_tile
                                    ? fmt::format("h{}-s{}", waves_heads, waves_slots)
                                    : fmt::format("h{}-s{}-t{}", waves_heads, waves_slots, waves_tile);
      return fmt::format("waves/{}{}{}", shape, *even ? "-" : "", even);
    }
    case PolicyKind::guided: {
      const std::string head = guide_eager ? "guided/eager" : "guided";
      return guide_path.empty() ? head : head + ":" + guide_path;
    }
  }
  return "?";
}

namespace {

// "h16-s132" or "h16-s132-t64": the heads, slots and query tile of waves' launch.
void parse_waves_shape(std::string text, Policy& p, const std::string& option, const std::string& item) {
  const std::string even = "even";
  if (text == even || (text.size() > even.size() + 1 && text.compare(text.size() - even.size() - 1, std::string::npos, "-" + even) == 0)) {
    p.waves_shares = WavesShares::even;
    if (text == even) return;
    text.resize(text.size() - even.size() - 1);
  }
  auto bad = [&] {
    return InputError(fmt::format("{} {}: waves takes its launch's shape as waves/h<heads>-s<slots>[-t<tile>][-even], "
                                  "each a whole number from 1 to 65536 (e.g. waves/h128-s132 for DeepSeek-V3 at TP 1 on "
                                  "an H200), or waves/even; plain waves is h16-s132-t128",
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

// guided's variant (eager or none) and its cost file, read here: "guided/eager" and PATH of
// "guided/eager:PATH".
void parse_guided(const std::string& item, size_t slash, const std::string& path, Policy& p, const std::string& option) {
  p.guide_eager = false;
  if (slash != std::string::npos) {
    if (item.substr(slash + 1) != "eager")
      throw InputError(fmt::format("{} {}: unknown variant '{}'; guided/eager chooses by eager time, plain guided by "
                                   "graph time",
                                   option, item, item.substr(slash + 1)));
    p.guide_eager = true;
  }
  if (path.empty()) return;
  auto model = std::make_shared<cost::CostModel>(cost::read_cost_model(path));
  if (p.guide_eager && !model->host)
    throw InputError(fmt::format("{} {}:{}: host: missing, and guided/eager chooses by eager time, which needs the "
                                 "host's dispatch costs; choose by graph time (guided:FILE) or calibrate them "
                                 "(python -m mlaplan.calibrate)",
                                 option, item, path));
  p.guide = std::move(model);
  p.guide_path = path;
}

}  // namespace

PolicyKind parse_policy_kind(const std::string& name, const std::string& option) {
  if (name == "max") return PolicyKind::max;
  if (name == "packed") return PolicyKind::packed;
  if (name == "even-split" || name == "even_split") return PolicyKind::even_split;
  if (name == "waves") return PolicyKind::waves;
  if (name == "guided") return PolicyKind::guided;
  throw InputError(fmt::format("{} {}: unknown policy; choose max, packed, even-split, waves or guided, a variant "
                               "(packed/vllm, packed/trtllm, even-split/vllm, even-split/sglang, waves/even, "
                               "guided:COST.json), a comma list of them, all (the three) or variants (all five)",
                               option, name));
}

std::vector<Policy> parse_policies(const std::string& list, const Policy& defaults, const std::string& option) {
  // Names in any case, as every named value of the command line: --policy MAX is max. A guided
  // policy's cost file keeps its case: the text after its ':' is a path.
  auto lower = [](std::string t) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    return t;
  };
  std::string spelled = lower(list);
  if (spelled == "all") spelled = "max,packed,even-split";
  else if (spelled == "variants") spelled = "max,packed/vllm,packed/trtllm,even-split/vllm,even-split/sglang";
  else spelled = list;
  std::vector<Policy> policies;
  size_t start = 0;
  while (start <= spelled.size()) {
    const size_t comma = std::min(spelled.find(',', start), spelled.size());
    std::string item = spelled.substr(start, comma - start);
    start = comma + 1;
    std::string path;
    if (const size_t colon = item.find(':'); colon != std::string::npos) {
      path = item.substr(colon + 1);
      item = item.substr(0, colon);
    }
    item = lower(item);
    const size_t slash = item.find('/');
    Policy p = defaults;
    p.kind = parse_policy_kind(item.substr(0, slash), option);
    if (p.kind != PolicyKind::guided && !path.empty())
      throw InputError(fmt::format("{} {}:{}: only guided takes a cost file after ':' (guided:COST.json)", option, item, path));
    if (p.kind == PolicyKind::guided) {
      parse_guided(item, slash, path, p, option);
    } else if (slash != std::string::npos) {
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
    // waves and guided have none of the engines' variants: --packed trtllm beside them must not make
    // them priced, dispatched or named as TensorRT-LLM's.
    if (p.kind == PolicyKind::waves || p.kind == PolicyKind::guided) {
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

void attach_guide(std::vector<Policy>& policies, const std::shared_ptr<const cost::CostModel>& model, bool eager,
                  const std::string& option, const std::string& give) {
  for (Policy& p : policies) {
    if (p.kind != PolicyKind::guided || p.guide) continue;
    if (!model)
      throw InputError(fmt::format("{} guided: it chooses each batch's plan by a cost model; give {}, or name "
                                   "the file: guided:COST.json (costs/ has H200 files)",
                                   option, give));
    if ((eager || p.guide_eager) && !model->host)
      throw InputError(fmt::format("{}: host: missing, and {} chooses by eager time{}, which needs the host's dispatch "
                                   "costs; choose by graph time (guided) or give a file with a host section",
                                   model->path, p.guide_eager ? "guided/eager" : "guided",
                                   p.guide_eager ? "" : " under --timing eager"));
    p.guide = model;
    p.guide_eager = p.guide_eager || eager;
  }
}

void attach_guide(std::vector<Policy>& policies, const std::vector<cost::CostModel>& costs, bool eager,
                  const std::string& option, const std::string& give) {
  const bool unnamed = std::any_of(policies.begin(), policies.end(),
                                   [](const Policy& p) { return p.kind == PolicyKind::guided && !p.guide; });
  if (!unnamed) return;
  if (costs.size() > 1)
    throw InputError(fmt::format("{} guided: it chooses by one cost model, and {} cost files are given ({}, one per "
                                 "model and TP); name the one: guided:FILE",
                                 option, costs.size(), give));
  attach_guide(policies, costs.empty() ? nullptr : std::make_shared<const cost::CostModel>(costs.front()), eager, option,
               give);
}

std::vector<Policy> guided_candidates(const Policy& guided) {
  Policy packed;
  packed.kind = PolicyKind::packed;
  Policy waves;
  waves.kind = PolicyKind::waves;
  if (guided.guide) {
    const cost::Geometry& g = guided.guide->geometry;
    waves.waves_heads = g.heads;
    waves.waves_slots = g.sms * g.blocks_per_sm;
    waves.waves_tile = g.tile_queries;
  }
  Policy even = waves;
  even.waves_shares = WavesShares::even;
  // The fill thresholds searched with the H200 cost files (docs/policies.md): together they remove
  // more of the engines' excess than any one of them; a threshold past 1 counts waves, 1e18 none.
  std::vector<Policy> out{packed, waves, even};
  for (double f : {0.0, 0.5, 0.97, 2.0, 4.0, 1e18}) {
    Policy w = waves;
    w.waves_fill = f;
    out.push_back(w);
  }
  return out;
}

}  // namespace mlaplan::policies
