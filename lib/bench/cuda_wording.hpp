// How bench words a failed CUDA call: "bench: <what>: <description>" (a DeviceError, exit 3).
#pragma once

#include "mlaplan/cuda_support/cuda_call.hpp"

namespace mlaplan::bench {

inline constexpr cuda_support::Wording kCuda{"bench: ", false, nullptr};

}  // namespace mlaplan::bench
