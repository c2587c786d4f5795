// The CPU planners behind the Planner interface: the reference and the closed-form fast path.
#include "mlaplan/fast_cpu_planner.hpp"
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

class FastCpuPlanner final : public Planner {
 public:
  std::string name() const override { return "cpu-fast"; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& batch, PhaseTimer& timer) override {
    auto scope = timer.phase("plan");
    return plan_fast_cpu(batch);
  }
};

}  // namespace

std::unique_ptr<Planner> make_reference_planner() { return std::make_unique<ReferencePlanner>(); }
std::unique_ptr<Planner> make_fast_cpu_planner() { return std::make_unique<FastCpuPlanner>(); }

}  // namespace mlaplan
