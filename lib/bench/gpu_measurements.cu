// The GPU side of bench: device buffers per input set, the planners through plan_on_device (and a
// CUDA graph of it), the vLLM-style cpu+copy path, and the empty-launch and copy limits, all
// timed with CUDA events on one stream.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "cuda_check.cuh"
#include "cuda_timer.cuh"
#include "l2_flush.cuh"
#include "mlaplan/bench/gpu_measurements.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/gpu_planner.hpp"
#include "mlaplan/phase_timer.hpp"
#include "sm_clock.cuh"

namespace mlaplan::bench {

namespace {

constexpr double kHotBatchUs = 200;    // a hot sample is a batch of launches lasting about this long
constexpr size_t kMaxHotBatch = 1000;
constexpr size_t kCopyBytes = size_t{1} << 30;  // each way: far past the L2, so DRAM bandwidth

__global__ void empty_kernel() {}

template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceArray(size_t n = 0) : count(n) {
    if (n) cuda_check(cudaMalloc(&ptr, n * sizeof(T)), "allocating device memory");
  }
  ~DeviceArray() { cudaFree(ptr); }
  DeviceArray(DeviceArray&& o) noexcept : ptr(o.ptr), count(o.count) { o.ptr = nullptr; }
  DeviceArray& operator=(DeviceArray&&) = delete;
  size_t bytes() const { return count * sizeof(T); }
};

template <class T>
struct PinnedArray {
  T* ptr = nullptr;
  explicit PinnedArray(size_t n) {
    if (n) cuda_check(cudaMallocHost(&ptr, n * sizeof(T)), "allocating pinned host memory");
  }
  ~PinnedArray() { cudaFreeHost(ptr); }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
};

// One input set on the device: its inputs and its own tables, so rotation touches fresh memory.
struct DeviceSet {
  DeviceArray<uint32_t> offsets, cache_lengths, row_offsets, cache_offsets;
  DeviceArray<int32_t> lengths;
  DeviceArray<DevicePlanStatus> status;
  DevicePlanArgs args;

  explicit DeviceSet(const Batch& b)
      : offsets(size_t{b.batch_size()} + 1),
        cache_lengths(b.batch_size()),
        row_offsets(size_t{b.max_chunks} * (b.batch_size() + size_t{1})),
        cache_offsets(size_t{b.max_chunks} * b.batch_size()),
        lengths(b.max_chunks),
        status(1) {
    cuda_check(cudaMemcpy(offsets.ptr, b.input_row_offsets.data(), offsets.bytes(), cudaMemcpyHostToDevice), "copying inputs");
    if (b.batch_size())
      cuda_check(cudaMemcpy(cache_lengths.ptr, b.cache_lengths.data(), cache_lengths.bytes(), cudaMemcpyHostToDevice), "copying inputs");
    args.input_row_offsets = offsets.ptr;
    args.cache_lengths = cache_lengths.ptr;
    args.batch_size = b.batch_size();
    args.page_size = b.page_size;
    args.buffer_token_size = b.buffer_token_size;
    args.max_chunks = b.max_chunks;
    args.buffer_row_offsets = row_offsets.ptr;
    args.cache_offsets = cache_offsets.ptr;
    args.buffer_lengths = lengths.ptr;
    args.status = status.ptr;
  }

  void poison(cudaStream_t s) {  // every cell must be written by the planner under test
    cuda_check(cudaMemsetAsync(row_offsets.ptr, 0xab, row_offsets.bytes(), s), "poisoning tables");
    cuda_check(cudaMemsetAsync(cache_offsets.ptr, 0xab, cache_offsets.bytes(), s), "poisoning tables");
    cuda_check(cudaMemsetAsync(lengths.ptr, 0xab, lengths.bytes(), s), "poisoning tables");
  }

  PlanTables download(uint32_t b, uint32_t m) const {
    PlanTables t(b, m);
    cuda_check(cudaMemcpy(t.buffer_row_offsets.data(), row_offsets.ptr, row_offsets.bytes(), cudaMemcpyDeviceToHost), "copying tables back");
    if (cache_offsets.count)
      cuda_check(cudaMemcpy(t.cache_offsets.data(), cache_offsets.ptr, cache_offsets.bytes(), cudaMemcpyDeviceToHost), "copying tables back");
    cuda_check(cudaMemcpy(t.buffer_lengths.data(), lengths.ptr, lengths.bytes(), cudaMemcpyDeviceToHost), "copying tables back");
    return t;
  }
};

GpuKernel gpu_kernel_of(Kernel k) { return k == Kernel::seed ? GpuKernel::seed : GpuKernel::fast; }

class CudaGpuBench final : public GpuBench {
 public:
  explicit CudaGpuBench(std::string name) : name_(std::move(name)) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    int device = 0, khz = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "reading the rated clock");
    max_mhz_ = khz / 1000.0;
  }
  ~CudaGpuBench() override { cudaStreamDestroy(stream_); }

  std::string device() const override { return name_; }
  double max_sm_clock_mhz() const override { return max_mhz_; }
  double sm_clock_mhz() override {
    measure_sm_clock_mhz(stream_, 100'000'000);  // ~50 ms of spinning first, so an idle GPU reaches its working clock
    return measure_sm_clock_mhz(stream_);
  }
  std::optional<std::string> unavailable(Kernel) const override { return std::nullopt; }

  Measurement measure_empty(Mode mode, const StoppingRule& rule) override {
    return time_launches(mode, rule, [this](size_t) {
      empty_kernel<<<1, 1, 0, stream_>>>();
      cuda_check(cudaGetLastError(), "launching the empty kernel");
    });
  }

  CopyMeasurement measure_copy(const StoppingRule& rule) override {
    DeviceArray<unsigned char> src(kCopyBytes), dst(kCopyBytes);
    cuda_check(cudaMemset(src.ptr, 0x5a, kCopyBytes), "filling the copy source");  // not zeros, and every page touched
    CopyMeasurement c;
    c.bytes = 2.0 * kCopyBytes;
    c.time = time_launches(Mode::hot, rule, [&](size_t) {
      cuda_check(cudaMemcpyAsync(dst.ptr, src.ptr, kCopyBytes, cudaMemcpyDeviceToDevice, stream_), "device copy");
    });
    return c;
  }

  Measurement measure(Kernel kernel, const std::vector<Batch>& sets, const std::vector<PlanTables>& references, Mode mode,
                      const StoppingRule& rule) override {
    PhaseTimer timer;
    std::vector<DeviceSet> dev;
    {
      auto scope = timer.phase("copy in");
      for (const Batch& b : sets) dev.emplace_back(b);
    }
    const uint32_t B = sets[0].batch_size(), M = sets[0].max_chunks;
    const GpuKernel gk = gpu_kernel_of(kernel);
    const size_t ws_bytes = kernel == Kernel::cpu_copy ? 0 : plan_workspace_bytes(B, M, gk);
    DeviceArray<unsigned char> workspace(ws_bytes);
    if (ws_bytes) cuda_check(cudaMemset(workspace.ptr, 0, ws_bytes), "zeroing the workspace");

    // cpu+copy: one set of pinned staging buffers, as an engine keeps them, and a reused host batch.
    PinnedArray<uint32_t> h_offsets(size_t{B} + 1), h_cache(B), h_rows(size_t{M} * (B + size_t{1})), h_co(size_t{M} * B);
    PinnedArray<int32_t> h_lengths(M);
    Batch host = sets[0];
    std::vector<uint32_t> scratch;

    std::vector<cudaGraphExec_t> graphs;
    struct GraphGuard {
      std::vector<cudaGraphExec_t>& g;
      ~GraphGuard() {
        for (auto e : g) cudaGraphExecDestroy(e);
      }
    } guard{graphs};
    if (kernel == Kernel::graph) {
      auto scope = timer.phase("capture");
      for (DeviceSet& d : dev) {
        cudaGraph_t graph = nullptr;
        cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "starting graph capture");
        const cudaError_t launched = plan_on_device(d.args, workspace.ptr, ws_bytes, stream_, GpuKernel::fast);
        const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
        cuda_check(launched, "capturing plan_on_device");
        cuda_check(ended, "ending graph capture");
        cudaGraphExec_t exec = nullptr;
        const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        cuda_check(inst, "instantiating the graph");
        graphs.push_back(exec);
      }
    }

    auto launch = [&](size_t i) {
      DeviceSet& d = dev[i];
      if (kernel == Kernel::graph) {
        cuda_check(cudaGraphLaunch(graphs[i], stream_), "launching the graph");
      } else if (kernel == Kernel::cpu_copy) {
        // The vLLM way: lengths to the host, plan there, tables back through pinned memory.
        cuda_check(cudaMemcpyAsync(h_offsets.ptr, d.offsets.ptr, d.offsets.bytes(), cudaMemcpyDeviceToHost, stream_), "copy to host");
        if (B) cuda_check(cudaMemcpyAsync(h_cache.ptr, d.cache_lengths.ptr, d.cache_lengths.bytes(), cudaMemcpyDeviceToHost, stream_), "copy to host");
        cuda_check(cudaStreamSynchronize(stream_), "waiting for the copy to host");
        host.input_row_offsets.assign(h_offsets.ptr, h_offsets.ptr + B + 1);
        host.cache_lengths.assign(h_cache.ptr, h_cache.ptr + B);
        plan_fast_cpu_into(host, {h_rows.ptr, h_co.ptr, h_lengths.ptr}, scratch);
        cuda_check(cudaMemcpyAsync(d.row_offsets.ptr, h_rows.ptr, d.row_offsets.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
        if (B) cuda_check(cudaMemcpyAsync(d.cache_offsets.ptr, h_co.ptr, d.cache_offsets.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
        cuda_check(cudaMemcpyAsync(d.lengths.ptr, h_lengths.ptr, d.lengths.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
      } else {
        cuda_check(plan_on_device(d.args, workspace.ptr, ws_bytes, stream_, gk), "plan_on_device");
      }
    };

    {
      auto scope = timer.phase("check");
      for (size_t i = 0; i < dev.size(); ++i) {
        dev[i].poison(stream_);
        launch(i);
        cuda_check(cudaStreamSynchronize(stream_), "running the planner");
        if (kernel != Kernel::cpu_copy) {
          DevicePlanStatus status{};
          cuda_check(cudaMemcpy(&status, dev[i].status.ptr, sizeof status, cudaMemcpyDeviceToHost), "reading the plan status");
          if (status.code != kPlanOk)
            throw PlanMismatch(fmt::format("bench: the {} kernel refused batch size {} (input set {}) with status {} though the reference planned it",
                                           to_string(kernel), B, i, status.code));
        }
        require_same_plan(references[i], dev[i].download(B, M), kernel, B, i);
      }
    }
    auto scope = timer.phase("measure");
    return time_launches(mode, rule, [&](size_t r) { launch(r % dev.size()); });
  }

 private:
  // Hot: a batch of back-to-back launches between two events, sized from one timed launch.
  // Cold: L2 flushed, then events around a single launch.
  template <class Launch>
  Measurement time_launches(Mode mode, const StoppingRule& rule, Launch&& launch) {
    CudaTimer timer;
    size_t counter = 0;
    // An untimed warm-up first: a kernel's first launch loads its module, and sizing the hot batch
    // from it once left the empty kernel at one launch per sample.
    launch(counter++);
    cuda_check(cudaStreamSynchronize(stream_), "warm-up launch");
    timer.start(stream_);
    launch(counter++);
    timer.stop(stream_);
    const double one = std::max(0.5, timer.elapsed_us());
    const auto begun = std::chrono::steady_clock::now();
    double gpu_us = 0;  // every event-timed interval, for the trace's GPU track
    Measurement m;
    if (mode == Mode::cold) {
      L2Flush l2;
      m = measure_until(rule, 1, [&] {
        l2.flush(stream_);
        timer.start(stream_);
        launch(counter++);
        timer.stop(stream_);
        const double us = timer.elapsed_us();
        gpu_us += us;
        return us;
      });
    } else {
      const size_t repeat = static_cast<size_t>(std::clamp(kHotBatchUs / one, 1.0, static_cast<double>(kMaxHotBatch)));
      m = measure_until(rule, repeat, [&] {
        timer.start(stream_);
        for (size_t r = 0; r < repeat; ++r) launch(counter++);
        timer.stop(stream_);
        const double us = timer.elapsed_us();
        gpu_us += us;
        return us / static_cast<double>(repeat);
      });
    }
    PhaseTimer trace_only;
    trace_only.add(fmt::format("timed on the GPU ({} samples)", m.stats.samples), gpu_us, begun);
    return m;
  }

  std::string name_;
  cudaStream_t stream_ = nullptr;
  double max_mhz_ = 0;
};

}  // namespace

std::unique_ptr<GpuBench> open_gpu_bench(std::string* why) {
  std::string reason;
  const std::optional<std::string> name = find_usable_gpu(&reason);
  if (!name) {
    if (why) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaGpuBench>(*name);
}

}  // namespace mlaplan::bench
