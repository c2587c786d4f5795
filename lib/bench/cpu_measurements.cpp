#include "mlaplan/bench/cpu_measurements.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "mlaplan/bench/host_cache.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Evicts the host's last-level cache before a cold sample: writes four times its size (host_cache.hpp).
// The writes go in slices with the stop request looked at between them, so that Ctrl-C is not held off
// by a large cache's writes.
class HostCacheFlush {
 public:
  HostCacheFlush() : size_(host_flush_bytes()), buffer_(new unsigned char[size_]) { flush(); }  // pages touched here, as before
  void flush() {
    ++value_;
    for (size_t at = 0; at < size_; at += kSlice) {
      if (profile::stop_requested()) return;  // Ctrl-C: the caller drops this sample
      std::memset(buffer_.get() + at, value_, std::min(kSlice, size_ - at));
    }
    sink_ += buffer_[value_ % size_];
  }

 private:
  static constexpr size_t kSlice = size_t{64} << 20;
  size_t size_;
  std::unique_ptr<unsigned char[]> buffer_;
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
