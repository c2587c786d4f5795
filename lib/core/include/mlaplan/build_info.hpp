// What this build of mlaplan contains, for --version and for reports.
#pragma once

#include <string>

namespace mlaplan {

struct BuildInfo {
  std::string version;             // "0.1.0"
  bool cuda = false;               // GPU planner compiled in
  std::string cuda_version;        // toolkit version, empty without CUDA
  std::string cuda_architectures;  // "sm_90 + compute_90 PTX", empty without CUDA
};

const BuildInfo& build_info();

}  // namespace mlaplan
