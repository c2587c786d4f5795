// The GPU bench in a build without CUDA: every GPU kernel is listed as unavailable, with why.
#include "mlaplan/bench/gpu_measurements.hpp"

namespace mlaplan::bench {

std::unique_ptr<GpuBench> open_gpu_bench(std::string* why) {
  if (why) *why = "this mlaplan was built without CUDA support";
  return nullptr;
}

}  // namespace mlaplan::bench
