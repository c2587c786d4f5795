// Timing on the GPU with CUDA events: the GPU planners (max-port, fast, graph), the vLLM-style
// cpu+copy path and the two limits (an empty launch, a large device-to-device copy). This header
// needs no CUDA; the implementation is gpu_measurements.cu, or gpu_measurements_unavailable.cpp
// in a build without CUDA.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/bench/measurement.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::bench {

struct CopyMeasurement {
  Measurement time;  // microseconds per copy
  double bytes = 0;  // read + written per copy
  double gbps() const { return time.stats.median > 0 ? bytes / time.stats.median / 1e3 : 0; }
};

class GpuBench {
 public:
  virtual ~GpuBench() = default;
  virtual std::string device() const = 0;
  // The SM clock now, in MHz: cycles counted by clock64() in a spinning kernel over its CUDA-event
  // time (NVML is not available to a statically linked binary).
  virtual double sm_clock_mhz() = 0;
  virtual double max_sm_clock_mhz() const = 0;  // the device's rated peak
  // Why `kernel` cannot be measured on this build and device, or nothing.
  virtual std::optional<std::string> unavailable(Kernel kernel) const = 0;
  virtual Measurement measure_empty(Mode mode, const StoppingRule& rule) = 0;
  // An empty kernel captured in a CUDA graph and replayed: the floor of the `graph` rows.
  virtual Measurement measure_empty_graph(Mode mode, const StoppingRule& rule) = 0;
  virtual CopyMeasurement measure_copy(const StoppingRule& rule) = 0;
  // A 1 GiB memset: the write-only bandwidth, the ceiling of a planner that only writes its tables.
  virtual CopyMeasurement measure_write(const StoppingRule& rule) = 0;
  // Checks each kernel's plan of every input set against `references` (PlanMismatch), then times
  // the kernels with their samples interleaved, rotating among the sets (one device copy of the
  // inputs and tables per set, shared by the kernels). One measurement per kernel, in order.
  virtual std::vector<Measurement> measure(const std::vector<Kernel>& kernels, const std::vector<Batch>& sets,
                                           const std::vector<PlanTables>& references, Mode mode, const StoppingRule& rule) = 0;
};

// The GPU bench for the first usable device, or nothing with `why` saying what is missing.
std::unique_ptr<GpuBench> open_gpu_bench(std::string* why);

}  // namespace mlaplan::bench
