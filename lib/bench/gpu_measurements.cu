// The GPU side of bench: device buffers per input set, the planners through plan_on_device (and a
// CUDA graph of it), the vLLM-style cpu+copy path, and the empty-launch and copy limits, all
// timed with CUDA events on one stream.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "cuda_check.cuh"
#include "cuda_timer.cuh"
#include "l2_flush.cuh"
#include "mlaplan/bench/gpu_measurements.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/gpu_planner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/stop_request.hpp"
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

GpuKernel gpu_kernel_of(Kernel k) { return k == Kernel::max_port ? GpuKernel::max_port : GpuKernel::fast; }

// Launches per hot sample: about kHotBatchUs of work, rounded down to a power of two so that two
// runs whose one-launch estimates differ slightly still time batches of the same length (the
// events' own cost is spread over the batch, so its length moves the per-launch figure).
size_t hot_batch(double one_launch_us) {
  const double want = std::clamp(kHotBatchUs / one_launch_us, 1.0, static_cast<double>(kMaxHotBatch));
  size_t n = 1;
  while (2 * n <= want) n *= 2;
  return n;
}

// Captures what `enqueue` puts on `stream` (it returns the launch's error) and instantiates it.
template <class Enqueue>
cudaGraphExec_t capture_graph(cudaStream_t stream, Enqueue&& enqueue, const char* what) {
  cudaGraph_t graph = nullptr;
  cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "starting graph capture");
  const cudaError_t launched = enqueue();
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  cuda_check(launched, what);
  cuda_check(ended, "ending graph capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  cuda_check(inst, "instantiating the graph");
  return exec;
}

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

  CopyMeasurement measure_write(const StoppingRule& rule) override {
    DeviceArray<unsigned char> dst(kCopyBytes);
    CopyMeasurement c;
    c.bytes = static_cast<double>(kCopyBytes);
    unsigned char value = 0;
    c.time = time_launches(Mode::hot, rule, [&](size_t) {
      cuda_check(cudaMemsetAsync(dst.ptr, ++value, kCopyBytes, stream_), "device memset");
    });
    return c;
  }

  Measurement measure_empty_graph(Mode mode, const StoppingRule& rule) override {
    auto capture = [this] {
      return capture_graph(stream_, [this] {
        empty_kernel<<<1, 1, 0, stream_>>>();
        return cudaGetLastError();
      }, "capturing the empty kernel");
    };
    struct ExecGuard {
      cudaGraphExec_t e;
      ~ExecGuard() { cudaGraphExecDestroy(e); }
    } guard{capture()};
    // A fresh instantiation before every sample, as for the graph rows (Rig::renew).
    const Renew renew = [&] {
      cudaGraphExecDestroy(guard.e);
      guard.e = nullptr;
      guard.e = capture();
      cuda_check(cudaGraphUpload(guard.e, stream_), "uploading the empty graph");
    };
    return time_interleaved(mode, rule,
                            {[&](size_t) { cuda_check(cudaGraphLaunch(guard.e, stream_), "launching the empty graph"); }},
                            {renew})
        .front();
  }

  std::vector<Measurement> measure(const std::vector<Kernel>& kernels, const std::vector<Batch>& sets,
                                   const std::vector<PlanTables>& references, Mode mode, const StoppingRule& rule) override {
    profile::PhaseTimer timer;
    std::vector<DeviceSet> dev;  // shared by every kernel: each writes the same tables
    {
      auto scope = timer.phase("copy in");
      for (const Batch& b : sets) dev.emplace_back(b);
    }
    std::vector<std::unique_ptr<Rig>> rigs;
    {
      auto scope = timer.phase("check");
      for (Kernel k : kernels) {
        rigs.push_back(std::make_unique<Rig>(k, sets[0], dev, stream_));
        rigs.back()->check(references);
      }
    }
    std::vector<Launch> launches;
    std::vector<Renew> renew;
    for (auto& rig : rigs) {
      launches.push_back([&r = *rig](size_t i) { r.launch(i % r.sets()); });
      renew.push_back(rig->replays_graphs() ? Renew([&r = *rig] { r.renew(); }) : Renew());
    }
    auto scope = timer.phase("measure");
    return time_interleaved(mode, rule, launches, renew);
  }

 private:
  // What one planner needs to launch over the shared input sets: its workspace, its graphs (graph),
  // its pinned staging buffers (cpu+copy).
  class Rig {
   public:
    Rig(Kernel kernel, const Batch& shape, std::vector<DeviceSet>& dev, cudaStream_t stream)
        : kernel_(kernel),
          dev_(dev),
          stream_(stream),
          B_(shape.batch_size()),
          M_(shape.max_chunks),
          gk_(gpu_kernel_of(kernel)),
          ws_bytes_(kernel == Kernel::cpu_copy ? 0 : plan_workspace_bytes(B_, M_, gk_)),
          workspace_(ws_bytes_),
          h_offsets_(kernel == Kernel::cpu_copy ? size_t{B_} + 1 : 0),
          h_cache_(kernel == Kernel::cpu_copy ? B_ : 0),
          h_rows_(kernel == Kernel::cpu_copy ? size_t{M_} * (B_ + size_t{1}) : 0),
          h_co_(kernel == Kernel::cpu_copy ? size_t{M_} * B_ : 0),
          h_lengths_(kernel == Kernel::cpu_copy ? M_ : 0),
          host_(shape) {
      if (ws_bytes_) cuda_check(cudaMemset(workspace_.ptr, 0, ws_bytes_), "zeroing the workspace");
      if (kernel == Kernel::graph) renew();
    }
    ~Rig() {
      for (auto e : graphs_) cudaGraphExecDestroy(e);
    }
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    size_t sets() const { return dev_.size(); }
    bool replays_graphs() const { return kernel_ == Kernel::graph; }

    // (Re)captures and instantiates one graph per input set, uploaded ahead of its first replay.
    // The bench does this before every sample: on the H200 one instantiation's replays were up to
    // 15% slower than another's in the same process, a level the samples of one graph cannot show.
    void renew() {
      for (auto e : graphs_) cudaGraphExecDestroy(e);
      graphs_.clear();
      for (DeviceSet& d : dev_) {
        graphs_.push_back(capture_graph(stream_, [&] {
          return plan_on_device(d.args, workspace_.ptr, ws_bytes_, stream_, GpuKernel::fast);
        }, "capturing plan_on_device"));
        cuda_check(cudaGraphUpload(graphs_.back(), stream_), "uploading the graph");
      }
    }

    void launch(size_t i) {
      DeviceSet& d = dev_[i];
      if (kernel_ == Kernel::graph) {
        cuda_check(cudaGraphLaunch(graphs_[i], stream_), "launching the graph");
      } else if (kernel_ == Kernel::cpu_copy) {
        // The vLLM way: lengths to the host, plan there, tables back through pinned memory.
        cuda_check(cudaMemcpyAsync(h_offsets_.ptr, d.offsets.ptr, d.offsets.bytes(), cudaMemcpyDeviceToHost, stream_), "copy to host");
        if (B_) cuda_check(cudaMemcpyAsync(h_cache_.ptr, d.cache_lengths.ptr, d.cache_lengths.bytes(), cudaMemcpyDeviceToHost, stream_), "copy to host");
        cuda_check(cudaStreamSynchronize(stream_), "waiting for the copy to host");
        host_.input_row_offsets.assign(h_offsets_.ptr, h_offsets_.ptr + B_ + 1);
        host_.cache_lengths.assign(h_cache_.ptr, h_cache_.ptr + B_);
        plan_fast_cpu_into(host_, {h_rows_.ptr, h_co_.ptr, h_lengths_.ptr}, scratch_);
        cuda_check(cudaMemcpyAsync(d.row_offsets.ptr, h_rows_.ptr, d.row_offsets.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
        if (B_) cuda_check(cudaMemcpyAsync(d.cache_offsets.ptr, h_co_.ptr, d.cache_offsets.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
        cuda_check(cudaMemcpyAsync(d.lengths.ptr, h_lengths_.ptr, d.lengths.bytes(), cudaMemcpyHostToDevice, stream_), "copy to device");
      } else {
        cuda_check(plan_on_device(d.args, workspace_.ptr, ws_bytes_, stream_, gk_), "plan_on_device");
      }
    }

    // Every input set's plan equals the reference (the tables poisoned first) and its status is ok.
    void check(const std::vector<PlanTables>& references) {
      for (size_t i = 0; i < dev_.size(); ++i) {
        dev_[i].poison(stream_);
        launch(i);
        cuda_check(cudaStreamSynchronize(stream_), "running the planner");
        if (kernel_ != Kernel::cpu_copy) {
          DevicePlanStatus status{};
          cuda_check(cudaMemcpy(&status, dev_[i].status.ptr, sizeof status, cudaMemcpyDeviceToHost), "reading the plan status");
          if (status.code != kPlanOk)
            throw PlanMismatch(fmt::format("bench: the {} kernel refused batch size {} (input set {}) with status {} though the reference planned it",
                                           to_string(kernel_), B_, i, status.code));
        }
        require_same_plan(references[i], dev_[i].download(B_, M_), kernel_, B_, i);
      }
    }

   private:
    Kernel kernel_;
    std::vector<DeviceSet>& dev_;
    cudaStream_t stream_;
    uint32_t B_, M_;
    GpuKernel gk_;
    size_t ws_bytes_;
    DeviceArray<unsigned char> workspace_;
    std::vector<cudaGraphExec_t> graphs_;
    PinnedArray<uint32_t> h_offsets_, h_cache_, h_rows_, h_co_;
    PinnedArray<int32_t> h_lengths_;
    Batch host_;
    std::vector<uint32_t> scratch_;
  };

  using Launch = std::function<void(size_t)>;  // enqueues launch number i (callers rotate input sets by it)
  using Renew = std::function<void()>;         // untimed, before each of a launcher's samples (may be empty)

  // Times one launcher: time_interleaved with a single entry.
  Measurement time_launches(Mode mode, const StoppingRule& rule, Launch launch) {
    return time_interleaved(mode, rule, {std::move(launch)}).front();
  }

  // Samples several launchers in turn, one sample each per round, so that clock or thermal drift
  // during the measurement hits them alike; each stops on its own by the rule. Hot: a batch of
  // back-to-back launches between two events, sized from one timed launch; cold: L2 flushed, then
  // events around a single launch.
  std::vector<Measurement> time_interleaved(Mode mode, const StoppingRule& rule, const std::vector<Launch>& launches,
                                           const std::vector<Renew>& renew = {}) {
    CudaTimer timer;
    std::vector<size_t> counter(launches.size(), 0), repeat(launches.size(), 1);
    std::vector<SampleSeries> series;
    for (size_t r = 0; r < launches.size(); ++r) {
      // An untimed warm-up first: a kernel's first launch loads its module, and sizing the hot batch
      // from it once left the empty kernel at one launch per sample. Then one timed launch.
      launches[r](counter[r]++);
      cuda_check(cudaStreamSynchronize(stream_), "warm-up launch");
      timer.start(stream_);
      launches[r](counter[r]++);
      timer.stop(stream_);
      const double one = std::max(0.5, timer.elapsed_us());
      if (mode == Mode::hot) repeat[r] = hot_batch(one);
      series.emplace_back(rule, repeat[r]);
    }
    const auto begun = std::chrono::steady_clock::now();
    double gpu_us = 0;  // every event-timed interval, for the trace's GPU track
    std::unique_ptr<L2Flush> l2;
    if (mode == Mode::cold) l2 = std::make_unique<L2Flush>();
    for (bool pending = true; pending && !profile::stop_requested();) {  // Ctrl-C: the caller drops the result
      pending = false;
      for (size_t r = 0; r < launches.size(); ++r) {
        if (series[r].done()) continue;
        if (r < renew.size() && renew[r]) {
          cuda_check(cudaStreamSynchronize(stream_), "finishing the last sample");
          renew[r]();
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (l2) l2->flush(stream_);
        timer.start(stream_);
        for (size_t k = 0; k < repeat[r]; ++k) launches[r](counter[r]++);
        timer.stop(stream_);
        const double us = timer.elapsed_us();
        gpu_us += us;
        series[r].add(us / static_cast<double>(repeat[r]),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        pending = pending || !series[r].done();
      }
    }
    std::vector<Measurement> out;
    for (const SampleSeries& s : series) out.push_back(s.result());
    profile::PhaseTimer trace_only;
    trace_only.add(launches.size() == 1 ? fmt::format("timed on the GPU ({} samples)", out[0].stats.samples)
                                        : fmt::format("timed on the GPU ({} planners interleaved)", launches.size()),
                   gpu_us, begun);
    return out;
  }

  std::string name_;
  cudaStream_t stream_ = nullptr;
  double max_mhz_ = 0;
};

}  // namespace

std::unique_ptr<GpuBench> open_gpu_bench(std::string* why) {
  std::string reason;
  const std::optional<std::string> name = profile::find_usable_gpu(&reason);
  if (!name) {
    if (why) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaGpuBench>(*name);
}

}  // namespace mlaplan::bench
