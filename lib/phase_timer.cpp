#include "mlaplan/phase_timer.hpp"

namespace mlaplan {

PhaseTimer::Scope::Scope(PhaseTimer& timer, std::string name)
    : timer_(timer), name_(std::move(name)), start_(std::chrono::steady_clock::now()) {}

PhaseTimer::Scope::~Scope() {
  const auto end = std::chrono::steady_clock::now();
  timer_.add(name_, std::chrono::duration<double, std::micro>(end - start_).count());
}

void PhaseTimer::add(const std::string& name, double microseconds) {
  for (auto& [n, us] : phases_) {
    if (n == name) {
      us += microseconds;
      return;
    }
  }
  phases_.emplace_back(name, microseconds);
}

}  // namespace mlaplan
