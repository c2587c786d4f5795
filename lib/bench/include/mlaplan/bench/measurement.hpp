// What bench measures and what one measurement yields. Kept apart from how each is timed
// (cpu_measurements, gpu_measurements) and from how results are printed (bench_format).
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlaplan/bench/sample_stats.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::bench {

// The planners (max-port, fast, graph, cpu, cpu-fast, cpu+copy), the two limits (empty, copy), and
// max: MAX's own kernel in another process (bench --max CMD).
enum class Kernel { max_port, fast, graph, cpu, cpu_fast, cpu_copy, empty, copy, max };
const char* to_string(Kernel k);
std::vector<Kernel> all_kernels();  // what `all` means: every kernel but max, which needs --max
std::vector<Kernel> parse_kernels(const std::string& list);  // seed is max-port; throws InputError naming --kernels
bool on_gpu(Kernel k);       // needs a GPU to run at all
bool is_limit(Kernel k);     // empty or copy: not a planner, measured once per run
bool gpu_resident(Kernel k); // reads and writes device memory only (max-port, fast, graph, max)

// hot: back-to-back launches, events around the batch; cold: caches flushed before each sample.
enum class Mode { hot, cold };

// A hot sample repeats the work (plans, launches, external answers) until it lasts about this long,
// so that the clock's resolution and a launch's overhead are small beside it.
inline constexpr double kHotSampleUs = 200;
const char* to_string(Mode m);

struct Measurement {
  SampleStats stats;             // microseconds per plan (per launch)
  size_t launches_per_sample = 1;
  double elapsed_s = 0;          // wall time spent measuring
};

// One measurement's samples, added one at a time so that several kernels' samples can be taken in
// turn (interleaved, so clock drift hits them alike); `done` once the rule says stop. The time limit
// counts the seconds spent in this measurement's own samples.
class SampleSeries {
 public:
  SampleSeries(const StoppingRule& rule, size_t per_sample) : rule_(rule), per_sample_(per_sample) {}
  void add(double us_per_launch, double seconds);
  bool done() const { return done_; }
  Measurement result() const;

 private:
  StoppingRule rule_;
  size_t per_sample_;
  std::vector<double> samples_;
  double elapsed_s_ = 0;
  bool done_ = false;
};

// Collects samples from `sample` (microseconds per launch, `per_sample` launches each) until the
// rule says stop.
Measurement measure_until(const StoppingRule& rule, size_t per_sample, const std::function<double()>& sample);

// A planner's tables differ from the reference (bench exits 1).
class PlanMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws PlanMismatch naming the kernel, batch size, input set and first differing cell.
void require_same_plan(const PlanTables& reference, const PlanTables& actual, Kernel kernel, size_t batch_size, size_t set);

// Minimal bytes a plan must move: inputs read once, tables written once. The tables alone, what a
// planner must write whatever it reads, are core's table_bytes (plan_tables.hpp).
double plan_bytes(size_t batch_size, size_t max_chunks);

}  // namespace mlaplan::bench
