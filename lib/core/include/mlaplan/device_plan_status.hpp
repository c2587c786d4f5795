// What plan_on_device (device_plan.hpp) reports about a batch, in device memory the caller reads.
// Apart from device_plan.hpp and free of CUDA, so a build without CUDA (the Python module's, say)
// has the same codes.
#pragma once

#include <cstdint>

namespace mlaplan {

enum DevicePlanCode : int32_t {
  kPlanOk = 0,
  kPlanInfeasible = 1,  // the batch needs more than max_chunks chunks; see min_max_chunks
  kPlanOverflow = 2,    // the padded total does not fit in 32 bits
  kPlanBadOffsets = 3,  // input_row_offsets decreases somewhere
};

// Written by the planner on the device, in device memory the caller owns.
struct DevicePlanStatus {
  int32_t code;             // DevicePlanCode
  uint32_t min_max_chunks;  // smallest max_chunks that fits (valid for kPlanOk and kPlanInfeasible)
  uint64_t padded_tokens;   // E, the padded total (valid unless kPlanBadOffsets)
};

}  // namespace mlaplan
