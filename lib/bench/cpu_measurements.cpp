#include "mlaplan/bench/cpu_measurements.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan::bench {

namespace {

using Clock = std::chrono::steady_clock;

class HostCacheFlush {
 public:
  HostCacheFlush() {
    long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = 32L << 20;
    buffer_.resize(static_cast<size_t>(llc) * 4);
  }
  void flush() {
    ++value_;
    std::memset(buffer_.data(), value_, buffer_.size());
    sink_ += buffer_[value_ % buffer_.size()];
  }

 private:
  std::vector<unsigned char> buffer_;
  unsigned char value_ = 0;
  volatile unsigned sink_ = 0;
};

}  // namespace

Measurement measure_cpu(Kernel kernel, const std::vector<Batch>& sets, const std::vector<PlanTables>& references, Mode mode,
                        const StoppingRule& rule) {
  // cpu-fast writes into tables allocated once per set (as an engine would reuse them); the
  // reference allocates its own each time, which is part of what it costs.
  std::vector<PlanTables> outputs;
  std::vector<uint32_t> scratch;
  profile::PhaseTimer timer;
  if (kernel == Kernel::cpu_fast)
    for (const Batch& b : sets) outputs.emplace_back(b.batch_size(), b.max_chunks);
  auto plan = [&](size_t i) {
    if (kernel == Kernel::cpu) {
      const PlanTables t = plan_reference(sets[i]);  // allocated and freed each time, as the reference does
      return;
    }
    PlanTables& t = outputs[i];
    plan_fast_cpu_into(sets[i], {t.buffer_row_offsets.data(), t.cache_offsets.data(), t.buffer_lengths.data()}, scratch);
  };

  {
    auto scope = timer.phase("check");
    for (size_t i = 0; i < sets.size(); ++i) {
      if (kernel == Kernel::cpu) {
        require_same_plan(references[i], plan_reference(sets[i]), kernel, sets[i].batch_size(), i);
      } else {
        std::fill(outputs[i].buffer_row_offsets.begin(), outputs[i].buffer_row_offsets.end(), 0xdeadbeefu);  // poison
        plan(i);
        require_same_plan(references[i], outputs[i], kernel, sets[i].batch_size(), i);
      }
    }
  }

  auto scope = timer.phase("measure");
  size_t next = 0;
  auto once = [&] {
    plan(next);
    next = (next + 1) % sets.size();
  };
  if (mode == Mode::cold) {
    HostCacheFlush flush;
    return measure_until(rule, 1, [&] {
      flush.flush();
      const auto t0 = Clock::now();
      once();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    });
  }
  // Hot: size the batch from one timed plan (the check above warmed everything up).
  const auto t0 = Clock::now();
  once();
  const double one = std::max(0.01, std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  const size_t repeat = static_cast<size_t>(std::clamp(kHotSampleUs / one, 1.0, 100000.0));
  return measure_until(rule, repeat, [&] {
    const auto start = Clock::now();
    for (size_t r = 0; r < repeat; ++r) once();
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / static_cast<double>(repeat);
  });
}

}  // namespace mlaplan::bench
