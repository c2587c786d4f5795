// The tool's layers through the installed `tools` component: profile's reference Planner plans the
// worked example of semantics.md and check's properties judge it. Exits 1 when they find a fault.
#include <cstdio>

#include "mlaplan/batch.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/planner.hpp"

int main() {
  mlaplan::Batch batch;
  batch.page_size = 128;
  batch.buffer_token_size = 512;
  batch.max_chunks = 4;
  batch.cache_lengths = {500, 0, 100};
  batch.input_row_offsets = {0, 9, 209, 229};
  mlaplan::profile::PhaseTimer timer;
  const auto planner = mlaplan::profile::make_reference_planner();
  const mlaplan::PlanTables tables = planner->plan(batch, timer);
  const mlaplan::check::PropertyReport report = mlaplan::check::check_properties(batch, tables);
  std::printf("tools: %s, properties %s\n", planner->name().c_str(), report.ok() ? "ok" : "broken");
  return report.ok() ? 0 : 1;
}
