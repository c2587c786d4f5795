// The GPU planner in a build without CUDA: every request says so, and the CLI exits 3.
#include "mlaplan/errors.hpp"
#include "mlaplan/profile/gpu_planner.hpp"

namespace mlaplan::profile {

std::optional<std::string> find_usable_gpu(std::string* why) {
  if (why) *why = "this mlaplan was built without CUDA support";
  return std::nullopt;
}

std::unique_ptr<Planner> make_gpu_planner(GpuKernel) {
  throw DeviceError("no usable GPU: this mlaplan was built without CUDA support; rebuild with the CUDA toolkit or use --backend cpu");
}

}  // namespace mlaplan::profile
