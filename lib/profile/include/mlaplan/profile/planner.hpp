// One way of producing a plan (the CPU reference, a GPU kernel, an engine's port), behind one
// interface so run, verify and bench treat them alike.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "mlaplan/batch.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::profile {

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;     // "cpu-reference", "gpu-fast", ...
  virtual std::string backend() const = 0;  // "cpu" or "gpu"
  virtual std::optional<std::string> device() const { return std::nullopt; }
  // True for the reference planner itself, whose plans need no comparison with the reference.
  virtual bool is_reference() const { return false; }
  // Plans a validated batch, recording its phases in `timer`. Throws InfeasibleBatch when the batch
  // does not fit (every planner refuses the same batches) and DeviceError when the device fails.
  virtual PlanTables plan(const Batch& batch, PhaseTimer& timer) = 0;
};

std::unique_ptr<Planner> make_reference_planner();
// The closed-form CPU planner (fast_cpu_planner.hpp), bit-identical to the reference.
std::unique_ptr<Planner> make_fast_cpu_planner();

}  // namespace mlaplan::profile
