#include "mlaplan/profile/stop_request.hpp"

#include <atomic>

namespace mlaplan::profile {

namespace {
std::atomic<bool> stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop must be async-signal-safe");
}  // namespace

void request_stop() noexcept { stop.store(true, std::memory_order_relaxed); }
bool stop_requested() noexcept { return stop.load(std::memory_order_relaxed); }
void clear_stop_request() noexcept { stop.store(false, std::memory_order_relaxed); }
const std::atomic<bool>* stop_flag() noexcept { return &stop; }

}  // namespace mlaplan::profile
