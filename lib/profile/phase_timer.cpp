#include "mlaplan/profile/phase_timer.hpp"

#include "mlaplan/profile/trace_recorder.hpp"
#include "nvtx_range.hpp"

namespace mlaplan::profile {

PhaseTimer::Scope::Scope(PhaseTimer& timer, std::string name) : timer_(timer), name_(std::move(name)) {
  nvtx::push(name_.c_str());
  if (TraceRecorder* trace = TraceRecorder::active()) trace->begin(name_);
  start_ = std::chrono::steady_clock::now();  // last, so the hooks' own cost stays out of the phase
}

PhaseTimer::Scope::~Scope() {
  const auto end = std::chrono::steady_clock::now();
  timer_.accumulate(name_, std::chrono::duration<double, std::micro>(end - start_).count());
  if (TraceRecorder* trace = TraceRecorder::active()) trace->end();
  nvtx::pop();
}

void PhaseTimer::add(const std::string& name, double microseconds) {
  add(name, microseconds,
      std::chrono::steady_clock::now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double, std::micro>(microseconds)));
}

void PhaseTimer::add(const std::string& name, double microseconds, std::chrono::steady_clock::time_point enqueued) {
  accumulate(name, microseconds);
  if (TraceRecorder* trace = TraceRecorder::active()) trace->add_device(name, enqueued, microseconds);
}

void PhaseTimer::accumulate(const std::string& name, double microseconds) {
  for (auto& [n, us] : phases_) {
    if (n == name) {
      us += microseconds;
      return;
    }
  }
  phases_.emplace_back(name, microseconds);
}

}  // namespace mlaplan::profile
