// Ctrl-C inside one long walk or pricing (a batch of a million sequences takes seconds). Private to
// policies.
#pragma once

#include <cstdint>

#include "mlaplan/errors.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::policies::detail {

// The stop request is read once per kEvery units of work counted, so a sweep's small batches pay a
// counter.
class StopPoll {
 public:
  static constexpr uint64_t kEvery = uint64_t{1} << 16;
  void operator()(uint64_t work = 1) {
    if ((done_ += work) < kEvery) return;
    done_ = 0;
    if (profile::stop_requested()) throw Interrupted("interrupted while pricing the plans");
  }

 private:
  uint64_t done_ = 0;
};

}  // namespace mlaplan::policies::detail
