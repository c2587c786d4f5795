#include "mlaplan/backend.hpp"

namespace mlaplan {

PlannerChoice choose_planner(Backend backend, GpuKernel kernel) {
  PlannerChoice choice;
  if (backend == Backend::cpu) {
    choice.planner = make_reference_planner();
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
    choice.planner = make_reference_planner();
    choice.fallback_note = "no usable GPU (" + why + "); planning on the CPU";
  }
  return choice;
}

}  // namespace mlaplan
