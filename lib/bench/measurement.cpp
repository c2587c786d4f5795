#include "mlaplan/bench/measurement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_tables.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/check/table_diff.hpp"

namespace mlaplan::bench {

const char* to_string(Kernel k) {
  switch (k) {
    case Kernel::max_port: return "max-port";
    case Kernel::fast: return "fast";
    case Kernel::graph: return "graph";
    case Kernel::cpu: return "cpu";
    case Kernel::cpu_fast: return "cpu-fast";
    case Kernel::cpu_copy: return "cpu+copy";
    case Kernel::empty: return "empty";
    case Kernel::copy: return "copy";
    case Kernel::max: return "max";
  }
  return "?";
}

std::vector<Kernel> all_kernels() {
  return {Kernel::max_port, Kernel::fast, Kernel::graph, Kernel::cpu, Kernel::cpu_fast, Kernel::cpu_copy, Kernel::empty, Kernel::copy};
}

std::vector<Kernel> parse_kernels(const std::string& list) {
  std::vector<Kernel> kernels;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, end - start);
    // Names in any case, as every named value of the command line: --kernels FAST is fast.
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "seed") name = "max-port";  // max-port's name before 2026-12-01
    bool found = false;
    for (Kernel k : {Kernel::max_port, Kernel::fast, Kernel::graph, Kernel::cpu, Kernel::cpu_fast, Kernel::cpu_copy, Kernel::empty,
                     Kernel::copy, Kernel::max}) {
      if (name == to_string(k)) {
        if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
        found = true;
      }
    }
    if (name == "all") {
      for (Kernel k : all_kernels())
        if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
      found = true;
    }
    if (!found)
      throw InputError(fmt::format(
          "--kernels: '{}' is not a kernel; choose from max-port, fast, graph, cpu, cpu-fast, cpu+copy, empty, copy, max (or all)", name));
    start = end + 1;
  }
  return kernels;
}

bool on_gpu(Kernel k) { return k != Kernel::cpu && k != Kernel::cpu_fast; }
bool is_limit(Kernel k) { return k == Kernel::empty || k == Kernel::copy; }
bool gpu_resident(Kernel k) { return k == Kernel::max_port || k == Kernel::fast || k == Kernel::graph || k == Kernel::max; }

const char* to_string(Mode m) { return m == Mode::hot ? "hot" : "cold"; }

void SampleSeries::add(double us_per_launch, double seconds) {
  samples_.push_back(us_per_launch);
  elapsed_s_ += seconds;
  done_ = should_stop(rule_, samples_, elapsed_s_);
}

Measurement SampleSeries::result() const {
  Measurement m;
  m.stats = summarize(samples_);
  m.launches_per_sample = per_sample_;
  m.elapsed_s = elapsed_s_;
  return m;
}

Measurement measure_until(const StoppingRule& rule, size_t per_sample, const std::function<double()>& sample) {
  SampleSeries series(rule, per_sample);
  do {
    const auto start = std::chrono::steady_clock::now();
    const double us = sample();
    series.add(us, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } while (!series.done() && !profile::stop_requested());  // Ctrl-C: the caller drops this one
  return series.result();
}

void require_same_plan(const PlanTables& reference, const PlanTables& actual, Kernel kernel, size_t batch_size, size_t set) {
  const check::TableDiff d = check::diff_tables(reference, actual);
  if (!d.equal())
    throw PlanMismatch(fmt::format("bench: the {} plan of batch size {} (input set {}) differs from the reference: {}",
                                   to_string(kernel), batch_size, set, d.describe()));
}

double plan_bytes(size_t b, size_t m) { return 4.0 * static_cast<double>((b + 1) + b) + static_cast<double>(table_bytes(b, m)); }

}  // namespace mlaplan::bench
