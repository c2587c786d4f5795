// Everything one `mlaplan bench` run measured, and the numbers derived from it. Filled in by
// run_bench, printed by bench_format.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/bench/gpu_measurements.hpp"
#include "mlaplan/bench/measurement.hpp"
#include "mlaplan/bench/timed_batches.hpp"

namespace mlaplan::bench {

struct BenchOptions {
  std::vector<uint32_t> sizes;
  std::vector<Kernel> kernels;
  std::vector<Mode> modes;
  TimedBatchOptions workload;
  StoppingRule rule;
  std::string max_command;  // the max row's program (bench --max CMD), speaking docs/external.md's timing requests
  std::function<void(const std::string&)> progress;  // called before each measurement, if set
};

struct BenchRow {
  uint32_t size = 0;  // B
  Kernel kernel = Kernel::fast;
  Mode mode = Mode::hot;
  Measurement measurement;
  uint32_t buffer_tokens = 0;   // N used at this size
  uint64_t padded_tokens = 0;   // E of input set 0
  double bytes = 0;             // minimal bytes moved (plan_bytes)
  double gbps = 0;              // bytes / median
  std::optional<double> pct_copy;            // gbps / measured copy bandwidth (GPU-resident kernels)
  std::optional<double> x_empty;             // median / empty-launch median (same mode; the empty graph for graph)
  std::optional<double> roofline_us;         // that floor + the tables' bytes at the write-only bandwidth + the inputs' at the copy's
  std::optional<double> x_roofline;          // median / roofline_us
  std::optional<double> speedup_vs_max_port; // max-port median / median (same size and mode)
  std::optional<double> speedup_vs_cpu_copy; // cpu+copy median / median
};

struct Unavailable {
  Kernel kernel;
  std::string reason;
};

struct BenchReport {
  BenchOptions options;
  std::string host_device;  // the GPU's name, or "none"
  std::string max_info;     // what the max row's program says of itself (its MAX version, instantiations)
  std::optional<Measurement> empty_hot, empty_cold;
  std::optional<Measurement> empty_graph_hot, empty_graph_cold;  // an empty kernel replayed from a CUDA graph
  std::optional<CopyMeasurement> copy;
  std::optional<CopyMeasurement> write;  // a memset: the write-only bandwidth
  std::optional<double> sm_mhz_before, sm_mhz_after, sm_mhz_max;
  std::vector<Unavailable> unavailable;
  std::vector<BenchRow> rows;
  double elapsed_s = 0;
  bool interrupted = false;  // stop_requested() cut the run short: `rows` holds the finished measurements
};

// Measures every requested kernel at every size and mode. Throws PlanMismatch when a planner
// disagrees with the reference, InputError for an impossible workload.
BenchReport run_bench(const BenchOptions& options);

// Fills each row's derived columns from its median and the report's limits: GB/s, % copy, x empty,
// the roofline (the empty launch of the row's mode, the empty graph for graph rows, plus the tables'
// bytes at the write-only bandwidth and the inputs' at the copy bandwidth) and x roofline, vs max-port and vs cpu+copy. run_bench calls it.
void derive_columns(BenchReport& report);

}  // namespace mlaplan::bench
