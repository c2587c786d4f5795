// A request to stop a long run early (Ctrl-C): set from a signal handler, polled by the loops of
// verify, bench and sweep, which then finish what they hold and report a partial result.
#pragma once

#include <atomic>

#include "mlaplan/errors.hpp"  // Interrupted, thrown by a loop that stops on the request

namespace mlaplan::profile {

void request_stop() noexcept;  // async-signal-safe: one lock-free atomic store
bool stop_requested() noexcept;
void clear_stop_request() noexcept;
// The flag itself, for the CPU planners of core (which depend on nothing, so they take a pointer).
const std::atomic<bool>* stop_flag() noexcept;

}  // namespace mlaplan::profile
