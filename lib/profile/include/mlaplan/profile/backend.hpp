// Choosing the planner for --backend auto|gpu|cpu.
#pragma once

#include <memory>
#include <string>

#include "mlaplan/profile/gpu_planner.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::profile {

enum class Backend { automatic, cpu, gpu };

struct PlannerChoice {
  std::unique_ptr<Planner> planner;
  std::string fallback_note;  // set when auto fell back to the CPU: why, for stderr
};

// auto: the GPU when one is usable, else the CPU with a note; gpu: throws DeviceError when no GPU is
// usable; cpu: the CPU. On the CPU, `kernel` picks as verify does: fast the closed-form planner,
// max-port the reference.
PlannerChoice choose_planner(Backend backend, GpuKernel kernel = GpuKernel::fast);

}  // namespace mlaplan::profile
