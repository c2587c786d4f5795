#include "mlaplan/profile/backend.hpp"

namespace mlaplan::profile {

namespace {

// The CPU's pair of the GPU kernels, as verify has them: fast is the closed-form planner (checked
// bit-exactly against the reference), max-port the reference loop (MAX's own algorithm) itself.
std::unique_ptr<Planner> cpu_planner(GpuKernel kernel) {
  return kernel == GpuKernel::max_port ? make_reference_planner() : make_fast_cpu_planner();
}

}  // namespace

PlannerChoice choose_planner(Backend backend, GpuKernel kernel) {
  PlannerChoice choice;
  if (backend == Backend::cpu) {
    choice.planner = cpu_planner(kernel);
    return choice;
  }
  if (backend == Backend::gpu) {
    choice.planner = make_gpu_planner(kernel);
    return choice;
  }
  std::string why;
  if (find_usable_gpu(&why)) {
    choice.planner = make_gpu_planner(kernel);
  } else {
    choice.planner = cpu_planner(kernel);
    choice.fallback_note = "no usable GPU (" + why + "); planning on the CPU";
  }
  return choice;
}

}  // namespace mlaplan::profile
