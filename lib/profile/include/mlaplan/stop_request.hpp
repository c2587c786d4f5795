// A request to stop a long run early (Ctrl-C): set from a signal handler, polled by the loops of
// verify, bench and sweep, which then finish what they hold and report a partial result.
#pragma once

#include <stdexcept>

namespace mlaplan {

void request_stop() noexcept;  // async-signal-safe: one lock-free atomic store
bool stop_requested() noexcept;
void clear_stop_request() noexcept;

// Thrown by a loop that has no partial result worth keeping (forming a sweep's batches, say).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mlaplan
