// Named, ordered phase timings (host wall clock, microseconds). Every phase of run, verify and
// bench is marked through this one class, so profiling hooks attach in one place: each Scope is
// also an NVTX range in the `mlaplan` domain and, when a TraceRecorder is active, a trace event.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mlaplan::profile {

class PhaseTimer {
 public:
  // Times from construction to destruction and records the phase under `name`.
  class Scope {
   public:
    Scope(PhaseTimer& timer, std::string name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimer& timer_;
    std::string name_;
    std::chrono::steady_clock::time_point start_;
  };

  Scope phase(std::string name) { return Scope(*this, std::move(name)); }
  // Records a time measured elsewhere (a device event pair, say); a repeated name accumulates.
  // The active trace shows it on the device track, ending now (the caller has just synchronised).
  void add(const std::string& name, double microseconds);
  // The same, for a caller that knows when the device work was enqueued on the host clock.
  void add(const std::string& name, double microseconds, std::chrono::steady_clock::time_point enqueued);
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  void clear() { phases_.clear(); }

 private:
  void accumulate(const std::string& name, double microseconds);

  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace mlaplan::profile
