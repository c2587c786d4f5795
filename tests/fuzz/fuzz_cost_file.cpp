// libFuzzer target: the cost file reader of `run --cost` and `sweep --cost`, and the prediction made
// with what it accepts. An accepted file has every coefficient finite and at least 0, every geometry
// value at least 1 and a compute capability (given or from its GPU's name), so every term of a batch
// under every policy, on the path its engine dispatches it to on that GPU, is finite and at least 0,
// and so is its predicted time (a huge coefficient may make it +inf, never NaN or negative); with a
// host section, its eager time is never NaN nor below the graph time, and the host's wait lies between
// 0 and the layer. Every rejection is an InputError naming the file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_check.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_cost.hpp"

using namespace mlaplan;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz/cost.json";
  cost::CostModel m;
  try {
    m = cost::parse_cost_model(text, path);
  } catch (const InputError& e) {
    FUZZ_CHECK(mlaplan_fuzz::names_file(e.what(), path), std::string("error message: ") + e.what());
    return 0;
  }
  FUZZ_UNEXPECTED("parse_cost_model")

  for (double c : m.coefficients) FUZZ_CHECK(std::isfinite(c) && c >= 0, "a coefficient below 0 or not finite");
  const cost::Geometry& g = m.geometry;
  FUZZ_CHECK(g.heads >= 1 && g.sms >= 1 && g.blocks_per_sm >= 1 && g.tile_queries >= 1, "a geometry value of 0");
  FUZZ_CHECK(m.tp >= 1 && !m.model.empty() && (m.dtype == "bf16" || m.dtype == "fp8"), "model, tp or dtype");
  FUZZ_CHECK(m.sm >= 10 && m.sm <= 309, "a compute capability outside 1.0 .. 30.9");

  // A small batch with an empty context, a long one and a page straddling two chunks.
  Batch b;
  b.page_size = 16;
  b.buffer_token_size = 100;
  b.max_chunks = 64;
  b.cache_lengths = {0, 300, 17};
  b.input_row_offsets = {0, 5, 205, 206};
  for (const policies::Policy& p : policies::parse_policies("variants", policies::Policy{})) {
    cost::Features f;
    // Where the file has host costs, the same walk also runs eager time's two clocks (--timing eager).
    std::optional<policies::EagerTime> eager;
    if (m.host) eager.emplace(m);
    policies::EagerTime* e = eager ? &*eager : nullptr;
    if (p.kind == policies::PolicyKind::max) {
      const PlanTables t = policies::plan_policy(b, p).tables;
      f = policies::max_features(b, policies::max_tables_view(t), g, e);
    } else {
      f = policies::dispatched_features(b, p, g, m.sm, nullptr, nullptr, e);
    }
    for (double v : f.values) FUZZ_CHECK(std::isfinite(v) && v >= 0, "a term below 0 or not finite");
    const double us = m.predict_us(f), lower = m.predict_us(policies::dispatched_unbounded_features(b, p, g, m.sm));
    FUZZ_CHECK(!std::isnan(us) && !std::isnan(lower), "a prediction that is NaN");
    FUZZ_CHECK(us >= 0 && lower >= 0, "a negative prediction");
    if (!e) continue;
    // The launches' device times are the graph terms apportioned, so the layer is never shorter than
    // the graph prediction, and the device's wait for the host lies between 0 and the layer.
    const cost::Clock& c = e->clock;
    FUZZ_CHECK(!std::isnan(c.dev) && !std::isnan(c.host) && c.dev >= 0 && c.host >= 0, "an eager clock NaN or negative");
    if (std::isfinite(us) && std::isfinite(c.dev))
      FUZZ_CHECK(c.dev >= us * (1 - 1e-9) - 1e-6, "an eager time below the graph time");
    FUZZ_CHECK(c.waited() >= 0 && (c.waited() <= c.dev || !std::isfinite(c.dev)), "a host wait outside 0 .. the layer");
  }
  return 0;
}
