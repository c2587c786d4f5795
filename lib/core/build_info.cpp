#include "mlaplan/build_info.hpp"

namespace mlaplan {

const BuildInfo& build_info() {
  static const BuildInfo info{MLAPLAN_VERSION, MLAPLAN_HAVE_CUDA != 0, MLAPLAN_CUDA_VERSION, MLAPLAN_CUDA_TARGETS};
  return info;
}

}  // namespace mlaplan
