#include "mlaplan/policies/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include <sys/stat.h>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/cost/gpu.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/engines.hpp"

namespace mlaplan::policies {

std::string Policy::name() const {
  if (!engine.empty()) return fmt::format("{} ({})", engine, engine_behaviour(engine_of(*this), engine_sm));
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

// guided's variant (eager or none): "guided/eager" chooses by eager time.
void parse_guided_variant(const std::string& item, size_t slash, Policy& p, const std::string& option) {
  p.guide_eager = false;
  if (slash == std::string::npos) return;
  if (item.substr(slash + 1) != "eager")
    throw InputError(fmt::format("{} {}: unknown variant '{}'; guided/eager chooses by eager time, plain guided by "
                                 "graph time",
                                 option, item, item.substr(slash + 1)));
  p.guide_eager = true;
}

// guided's cost file, read here (`shown`: the item as given, for messages).
void read_guide(const std::string& path, const std::string& shown, Policy& p, const std::string& option) {
  auto model = std::make_shared<cost::CostModel>(cost::read_cost_model(path));
  if (p.guide_eager && !model->host)
    throw InputError(fmt::format("{} {}: host: missing, and guided/eager chooses by eager time, which needs the "
                                 "host's dispatch costs; choose by graph time (guided:FILE) or calibrate them "
                                 "(python -m mlaplan.calibrate, asked for the host's runs)",
                                 option, shown));
  if (p.guide_eager) cost::require_identified_host(*model, "guided/eager");  // a host section the runs only bound
  p.guide = std::move(model);
  p.guide_path = path;
}

// A file's identity (device and inode), where it exists: two spellings of one cost file are one guide.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId& o) const { return exists && o.exists && dev == o.dev && ino == o.ino; }
};
FileId file_id(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino};
}

// The file a guided policy chooses by: its guided:PATH, else the model it was given (--cost's).
std::string guide_file(const Policy& p) { return !p.guide_path.empty() ? p.guide_path : p.guide ? p.guide->path : ""; }

// Two guided policies that choose alike: the same timing and the same cost file (one file by its
// identity, however spelled; one model object where it has no file).
bool same_guided(const Policy& a, const Policy& b) {
  if (a.kind != PolicyKind::guided || b.kind != PolicyKind::guided || a.guide_eager != b.guide_eager) return false;
  if (!a.guide || !b.guide) return !a.guide && !b.guide;
  if (a.guide == b.guide) return true;
  const std::string fa = guide_file(a), fb = guide_file(b);
  return !fa.empty() && (fa == fb || file_id(fa) == file_id(fb));
}

// The list's words for several policies: "all" and "variants" anywhere in it.
std::string expand_groups(const std::string& item_lower, bool* expanded) {
  *expanded = true;
  if (item_lower == "all") return "max,packed,even-split,sglang,trtllm";  // every engine
  if (item_lower == "variants") return "max,packed/vllm,packed/trtllm,even-split/vllm,even-split/sglang";
  if (item_lower == "engines") return "vllm,sglang,trtllm,max";
  *expanded = false;
  return "";
}

}  // namespace

PolicyKind parse_policy_kind(const std::string& name, const std::string& option) {
  if (name == "max") return PolicyKind::max;
  if (name == "packed") return PolicyKind::packed;
  if (name == "even-split" || name == "even_split") return PolicyKind::even_split;
  if (name == "waves") return PolicyKind::waves;
  if (name == "guided") return PolicyKind::guided;
  throw InputError(fmt::format("{} {}: unknown policy; choose an engine (vllm, sglang, trtllm, max), an algorithm "
                               "(packed, even-split, waves or guided), a variant (packed/vllm, packed/trtllm, "
                               "even-split/vllm, even-split/sglang, waves/even, guided/eager, guided:COST.json), all "
                               "(every engine), engines (the four) or variants (the engines' five by algorithm); "
                               "several as a comma list",
                               option, name));
}

std::vector<Policy> parse_policies(const std::string& list, const Policy& defaults, const std::string& option) {
  // Names in any case, as every named value of the command line: --policy MAX is max. A guided
  // policy's cost file keeps its case: the text after its ':' is a path.
  auto lower = [](std::string t) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    return t;
  };
  // The items, with all and variants spelled out where they stand.
  std::vector<std::string> items;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty())
      throw InputError(fmt::format("{} {}: an empty item{}; name a policy between each two commas, or remove the extra "
                                   "comma",
                                   option, list, list.empty() ? "" : " in the list"));
    bool group = false;
    const std::string members = expand_groups(lower(item), &group);
    if (!group) {
      items.push_back(item);
      continue;
    }
    for (size_t at = 0; at <= members.size();) {
      const size_t c = std::min(members.find(',', at), members.size());
      items.push_back(members.substr(at, c - at));
      at = c + 1;
    }
  }
  std::vector<Policy> policies;
  for (const std::string& given : items) {
    std::string item = given, path;
    const size_t colon = item.find(':');
    if (colon != std::string::npos) {
      path = item.substr(colon + 1);
      item = item.substr(0, colon);
    }
    item = lower(item);
    const size_t slash = item.find('/');
    Policy p = defaults;
    Policy named;
    if (engine_policy(item.substr(0, slash), defaults, &named) && (slash != std::string::npos || colon != std::string::npos))
      throw InputError(fmt::format("{} {}: an engine's name takes no {}; write {}, or an algorithm's variant such as "
                                   "packed/trtllm; only guided takes a cost file after ':' (guided:COST.json)",
                                   option, given, slash != std::string::npos ? "variant" : "cost file after ':'",
                                   item.substr(0, slash)));
    if (engine_policy(item, defaults, &p)) {  // vllm, sglang, trtllm
      const bool seen = std::any_of(policies.begin(), policies.end(), [&](const Policy& x) { return x.name() == p.name(); });
      if (!seen) policies.push_back(p);
      continue;
    }
    p.kind = parse_policy_kind(item.substr(0, slash), option);
    if (p.kind != PolicyKind::guided && colon != std::string::npos)
      throw InputError(fmt::format("{} {}: only guided takes a cost file after ':' (guided:COST.json); drop ':{}'",
                                   option, given, path));
    if (p.kind == PolicyKind::guided) {
      parse_guided_variant(item, slash, p, option);
      if (colon != std::string::npos && path.empty())
        throw InputError(fmt::format("{} {}: no cost file after ':'; name it ({}:COST.json), or drop the ':' to choose "
                                     "by the --cost file",
                                     option, given, item));
    } else if (slash != std::string::npos) {
      const std::string kind = item.substr(0, slash), variant = item.substr(slash + 1);
      if (p.kind == PolicyKind::packed && (variant == "vllm" || variant == "trtllm")) {
        p.packed = variant == "trtllm" ? PackedVariant::trtllm : PackedVariant::vllm;
      } else if (p.kind == PolicyKind::even_split && (variant == "vllm" || variant == "sglang")) {
        p.even_split = variant == "sglang" ? EvenSplitVariant::sglang : EvenSplitVariant::vllm;
      } else if (p.kind == PolicyKind::waves) {
        parse_waves_shape(variant, p, option, item);
      } else {
        throw InputError(fmt::format("{} {}: unknown variant '{}'; {}", option, item, variant,
                                     p.kind == PolicyKind::packed       ? "packed/vllm and packed/trtllm name one"
                                     : p.kind == PolicyKind::even_split ? "even-split/vllm and even-split/sglang name one"
                                                                        : "max has none: write max"));
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
    // A repeat is dropped before its file is read: guided:c.json twice reads c.json once (a FIFO
    // named twice would wait for a second writer).
    p.guide_path = path;
    const bool seen = std::any_of(policies.begin(), policies.end(), [&](const Policy& x) {
      return x.name() == p.name() || (!path.empty() && x.guide_eager == p.guide_eager && !x.guide_path.empty() &&
                                      file_id(x.guide_path) == file_id(path));
    });
    if (seen) continue;
    if (!path.empty()) read_guide(path, given, p, option);
    policies.push_back(p);
  }
  return policies;
}

void merge_repeats(std::vector<Policy>& policies) {
  std::vector<Policy> kept;
  for (Policy& p : policies) {
    const bool seen = std::any_of(kept.begin(), kept.end(), [&](const Policy& x) {
      return p.kind == PolicyKind::guided ? same_guided(x, p) : x.name() == p.name();
    });
    if (!seen) kept.push_back(std::move(p));
  }
  policies = std::move(kept);
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
                                   "costs; choose by graph time (guided) or give a file with a host section (python -m "
                                   "mlaplan.calibrate measures one when asked for the host's runs)",
                                   model->path, p.guide_eager ? "guided/eager" : "guided",
                                   p.guide_eager ? "" : " under --timing eager"));
    if (eager || p.guide_eager) cost::require_identified_host(*model, p.guide_eager ? "guided/eager" : "guided under --timing eager");
    p.guide = model;
    p.guide_eager = p.guide_eager || eager;
  }
  merge_repeats(policies);  // plain guided under eager timing is guided/eager: one row, not two
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

void name_engines_for(std::vector<Policy>& policies, uint32_t sm) {
  for (Policy& p : policies)
    if (!p.engine.empty()) p.engine_sm = sm;
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
