// The GPU planner as seen from the host: finding a usable device and wrapping a kernel behind the
// Planner interface (copy in, plan, copy out). Engines that plan from device pointers use
// mlaplan/device_plan.hpp instead; this wrapper is for run, verify and bench.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "mlaplan/gpu_kernel.hpp"
#include "mlaplan/profile/planner.hpp"

namespace mlaplan::profile {

// The usable GPU's name, or nothing, with `why` saying what is missing (no CUDA in this build,
// no device, a driver too old, ...).
std::optional<std::string> find_usable_gpu(std::string* why);

// Throws DeviceError when no GPU is usable.
std::unique_ptr<Planner> make_gpu_planner(GpuKernel kernel);

}  // namespace mlaplan::profile
