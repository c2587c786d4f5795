// The reference planner behind the Planner interface.
#include "mlaplan/planner.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan {

namespace {

class ReferencePlanner final : public Planner {
 public:
  std::string name() const override { return "cpu-reference"; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& batch, PhaseTimer& timer) override {
    auto scope = timer.phase("plan");
    return plan_reference(batch);
  }
};

}  // namespace

std::unique_ptr<Planner> make_reference_planner() { return std::make_unique<ReferencePlanner>(); }

}  // namespace mlaplan
