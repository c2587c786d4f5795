// The CPU planners behind the Planner interface: the reference and the closed-form fast path.
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/planner.hpp"
#include "mlaplan/reference_planner.hpp"

#include <utility>

#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::profile {

namespace {

// A host function planning a batch, as one "plan" phase; Ctrl-C stops it inside a large batch.
using PlanFunction = PlanTables (*)(const Batch&, const std::atomic<bool>*);

class CpuPlanner final : public Planner {
 public:
  CpuPlanner(std::string name, PlanFunction plan)
      : name_(std::move(name)), plan_(plan), reference_(plan == &plan_reference) {}
  std::string name() const override { return name_; }
  bool is_reference() const override { return reference_; }
  std::string backend() const override { return "cpu"; }
  PlanTables plan(const Batch& batch, PhaseTimer& timer) override {
    auto scope = timer.phase("plan");
    return plan_(batch, stop_flag());
  }

 private:
  std::string name_;
  PlanFunction plan_;
  bool reference_;
};

}  // namespace

std::unique_ptr<Planner> make_reference_planner() { return std::make_unique<CpuPlanner>("cpu-reference", plan_reference); }
std::unique_ptr<Planner> make_fast_cpu_planner() { return std::make_unique<CpuPlanner>("cpu-fast", plan_fast_cpu); }

}  // namespace mlaplan::profile
