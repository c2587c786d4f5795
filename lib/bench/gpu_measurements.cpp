// The GPU side of bench: device buffers per input set, the planners through plan_on_device (and a
// CUDA graph of it), the vLLM-style cpu+copy path, and the empty-launch and copy limits, all
// timed with CUDA events on one stream.
#include "mlaplan/bench/gpu_measurements.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "cuda_timer.hpp"
#include "cuda_wording.hpp"
#include "gpu_kernels.hpp"
#include "l2_flush.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"
#include "mlaplan/cuda_support/graph.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/profile/gpu_planner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "sm_clock.hpp"

namespace mlaplan::bench {

namespace {

constexpr size_t kMaxHotLaunches = 1000;
constexpr size_t kCopyBytes = size_t{1} << 30;  // each way: far past the L2, so DRAM bandwidth

using cuda_support::DeviceBuffer;
using cuda_support::GraphExec;

template <class T>
DeviceBuffer<T> device_array(size_t n) {
  DeviceBuffer<T> a;
  MLAPLAN_CUDA_CHECK(a.allocate(n), kCuda, "allocating device memory");
  return a;
}

template <class T>
struct PinnedArray {
  T* ptr = nullptr;
  explicit PinnedArray(size_t n) {
    void* p = nullptr;
    if (n) MLAPLAN_CUDA_CHECK(cudaMallocHost(&p, n * sizeof(T)), kCuda, "allocating pinned host memory");
    ptr = static_cast<T*>(p);
  }
  ~PinnedArray() { cudaFreeHost(ptr); }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
};

// One input set on the device: its inputs and its own tables, so rotation touches fresh memory.
struct DeviceSet {
  DeviceBuffer<uint32_t> offsets, cache_lengths, row_offsets, cache_offsets;
  DeviceBuffer<int32_t> lengths;
  DeviceBuffer<DevicePlanStatus> status;
  DevicePlanArgs args;

  explicit DeviceSet(const Batch& b)
      : offsets(device_array<uint32_t>(size_t{b.batch_size()} + 1)),
        cache_lengths(device_array<uint32_t>(b.batch_size())),
        row_offsets(device_array<uint32_t>(size_t{b.max_chunks} * (b.batch_size() + size_t{1}))),
        cache_offsets(device_array<uint32_t>(size_t{b.max_chunks} * b.batch_size())),
        lengths(device_array<int32_t>(b.max_chunks)),
        status(device_array<DevicePlanStatus>(1)) {
    MLAPLAN_CUDA_CHECK(cudaMemcpy(offsets.get(), b.input_row_offsets.data(), offsets.bytes(), cudaMemcpyHostToDevice),
                       kCuda, "copying inputs");
    if (b.batch_size())
      MLAPLAN_CUDA_CHECK(
          cudaMemcpy(cache_lengths.get(), b.cache_lengths.data(), cache_lengths.bytes(), cudaMemcpyHostToDevice), kCuda,
          "copying inputs");
    args.input_row_offsets = offsets.get();
    args.cache_lengths = cache_lengths.get();
    args.batch_size = b.batch_size();
    args.page_size = b.page_size;
    args.buffer_token_size = b.buffer_token_size;
    args.max_chunks = b.max_chunks;
    args.buffer_row_offsets = row_offsets.get();
    args.cache_offsets = cache_offsets.get();
    args.buffer_lengths = lengths.get();
    args.status = status.get();
  }

  void poison(cudaStream_t s) {  // every cell must be written by the planner under test
    MLAPLAN_CUDA_CHECK(cudaMemsetAsync(row_offsets.get(), 0xab, row_offsets.bytes(), s), kCuda, "poisoning tables");
    MLAPLAN_CUDA_CHECK(cudaMemsetAsync(cache_offsets.get(), 0xab, cache_offsets.bytes(), s), kCuda, "poisoning tables");
    MLAPLAN_CUDA_CHECK(cudaMemsetAsync(lengths.get(), 0xab, lengths.bytes(), s), kCuda, "poisoning tables");
  }

  PlanTables download(uint32_t b, uint32_t m) const {
    PlanTables t(b, m);
    MLAPLAN_CUDA_CHECK(
        cudaMemcpy(t.buffer_row_offsets.data(), row_offsets.get(), row_offsets.bytes(), cudaMemcpyDeviceToHost), kCuda,
        "copying tables back");
    if (cache_offsets.size())
      MLAPLAN_CUDA_CHECK(
          cudaMemcpy(t.cache_offsets.data(), cache_offsets.get(), cache_offsets.bytes(), cudaMemcpyDeviceToHost), kCuda,
          "copying tables back");
    MLAPLAN_CUDA_CHECK(cudaMemcpy(t.buffer_lengths.data(), lengths.get(), lengths.bytes(), cudaMemcpyDeviceToHost),
                       kCuda, "copying tables back");
    return t;
  }
};

GpuKernel gpu_kernel_of(Kernel k) { return k == Kernel::max_port ? GpuKernel::max_port : GpuKernel::fast; }

// Launches per hot sample: about kHotSampleUs of work, rounded down to a power of two so that two
// runs whose one-launch estimates differ slightly still time batches of the same length (the
// events' own cost is spread over the batch, so its length moves the per-launch figure).
size_t hot_batch(double one_launch_us) {
  const double want = std::clamp(kHotSampleUs / one_launch_us, 1.0, static_cast<double>(kMaxHotLaunches));
  size_t n = 1;
  while (2 * n <= want) n *= 2;
  return n;
}

// Captures what `enqueue` puts on `stream` (it returns the launch's error) and instantiates it;
// `what` names the enqueued work in the message if enqueuing it failed.
template <class Enqueue>
GraphExec capture_graph(cudaStream_t stream, Enqueue&& enqueue, const char* what) {
  const char* const steps[] = {"starting graph capture", what, "ending graph capture", "instantiating the graph"};
  cuda_support::Capture c = cuda_support::capture_graph(stream, enqueue);
  if (!c.ok()) cuda_support::raise(c.call, kCuda, steps[static_cast<int>(c.step)]);
  return std::move(c.exec);
}

class CudaGpuBench final : public GpuBench {
 public:
  explicit CudaGpuBench(std::string name) : name_(std::move(name)) {
    MLAPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), kCuda, "cudaStreamCreate");
    int device = 0, khz = 0;
    MLAPLAN_CUDA_CHECK(cudaGetDevice(&device), kCuda, "cudaGetDevice");
    MLAPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), kCuda, "reading the rated clock");
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
      MLAPLAN_CUDA_CHECK(launch_empty_kernel(stream_), kCuda, "launching the empty kernel");
    });
  }

  CopyMeasurement measure_copy(const StoppingRule& rule) override {
    auto src = device_array<unsigned char>(kCopyBytes), dst = device_array<unsigned char>(kCopyBytes);
    MLAPLAN_CUDA_CHECK(cudaMemset(src.get(), 0x5a, kCopyBytes), kCuda,
                       "filling the copy source");  // not zeros, and every page touched
    CopyMeasurement c;
    c.bytes = 2.0 * kCopyBytes;
    c.time = time_launches(Mode::hot, rule, [&](size_t) {
      MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, stream_), kCuda,
                         "device copy");
    });
    return c;
  }

  CopyMeasurement measure_write(const StoppingRule& rule) override {
    auto dst = device_array<unsigned char>(kCopyBytes);
    CopyMeasurement c;
    c.bytes = static_cast<double>(kCopyBytes);
    unsigned char value = 0;
    c.time = time_launches(Mode::hot, rule, [&](size_t) {
      MLAPLAN_CUDA_CHECK(cudaMemsetAsync(dst.get(), ++value, kCopyBytes, stream_), kCuda, "device memset");
    });
    return c;
  }

  Measurement measure_empty_graph(Mode mode, const StoppingRule& rule) override {
    auto capture = [this] {
      return capture_graph(
          stream_, [this] { return launch_empty_kernel(stream_); }, "capturing the empty kernel");
    };
    GraphExec graph = capture();
    // A fresh instantiation before every sample, as for the graph rows (Rig::renew).
    const Renew renew = [&] {
      graph.reset();
      graph = capture();
      MLAPLAN_CUDA_CHECK(graph.upload(stream_), kCuda, "uploading the empty graph");
    };
    return time_interleaved(mode, rule, {[&](size_t) {
                              MLAPLAN_CUDA_CHECK(graph.launch(stream_), kCuda, "launching the empty graph");
                            }},
                            {renew})
        .front();
  }

  std::vector<Measurement> measure(const std::vector<Kernel>& kernels, const std::vector<Batch>& sets,
                                   const std::vector<PlanTables>& references, Mode mode,
                                   const StoppingRule& rule) override {
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
          workspace_(device_array<unsigned char>(ws_bytes_)),
          h_offsets_(kernel == Kernel::cpu_copy ? size_t{B_} + 1 : 0),
          h_cache_(kernel == Kernel::cpu_copy ? B_ : 0),
          h_rows_(kernel == Kernel::cpu_copy ? size_t{M_} * (B_ + size_t{1}) : 0),
          h_co_(kernel == Kernel::cpu_copy ? size_t{M_} * B_ : 0),
          h_lengths_(kernel == Kernel::cpu_copy ? M_ : 0),
          host_(shape) {
      if (ws_bytes_) MLAPLAN_CUDA_CHECK(cudaMemset(workspace_.get(), 0, ws_bytes_), kCuda, "zeroing the workspace");
      if (kernel == Kernel::graph) renew();
    }
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    size_t sets() const { return dev_.size(); }
    bool replays_graphs() const { return kernel_ == Kernel::graph; }

    // (Re)captures and instantiates one graph per input set, uploaded ahead of its first replay.
    // The bench does this before every sample: on the H200 one instantiation's replays were up to
    // 15% slower than another's in the same process, a level the samples of one graph cannot show.
    void renew() {
      graphs_.clear();
      for (DeviceSet& d : dev_) {
        graphs_.push_back(capture_graph(
            stream_, [&] { return plan_on_device(d.args, workspace_.get(), ws_bytes_, stream_, GpuKernel::fast); },
            "capturing plan_on_device"));
        MLAPLAN_CUDA_CHECK(graphs_.back().upload(stream_), kCuda, "uploading the graph");
      }
    }

    void launch(size_t i) {
      DeviceSet& d = dev_[i];
      if (kernel_ == Kernel::graph) {
        MLAPLAN_CUDA_CHECK(graphs_[i].launch(stream_), kCuda, "launching the graph");
      } else if (kernel_ == Kernel::cpu_copy) {
        // The vLLM way: lengths to the host, plan there, tables back through pinned memory.
        MLAPLAN_CUDA_CHECK(
            cudaMemcpyAsync(h_offsets_.ptr, d.offsets.get(), d.offsets.bytes(), cudaMemcpyDeviceToHost, stream_), kCuda,
            "copy to host");
        if (B_)
          MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(h_cache_.ptr, d.cache_lengths.get(), d.cache_lengths.bytes(),
                                             cudaMemcpyDeviceToHost, stream_),
                             kCuda, "copy to host");
        MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "waiting for the copy to host");
        host_.input_row_offsets.assign(h_offsets_.ptr, h_offsets_.ptr + B_ + 1);
        host_.cache_lengths.assign(h_cache_.ptr, h_cache_.ptr + B_);
        plan_fast_cpu_into(host_, {h_rows_.ptr, h_co_.ptr, h_lengths_.ptr}, scratch_);
        MLAPLAN_CUDA_CHECK(
            cudaMemcpyAsync(d.row_offsets.get(), h_rows_.ptr, d.row_offsets.bytes(), cudaMemcpyHostToDevice, stream_),
            kCuda, "copy to device");
        if (B_)
          MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(d.cache_offsets.get(), h_co_.ptr, d.cache_offsets.bytes(),
                                             cudaMemcpyHostToDevice, stream_),
                             kCuda, "copy to device");
        MLAPLAN_CUDA_CHECK(
            cudaMemcpyAsync(d.lengths.get(), h_lengths_.ptr, d.lengths.bytes(), cudaMemcpyHostToDevice, stream_), kCuda,
            "copy to device");
      } else {
        MLAPLAN_CUDA_CHECK(plan_on_device(d.args, workspace_.get(), ws_bytes_, stream_, gk_), kCuda, "plan_on_device");
      }
    }

    // Every input set's plan equals the reference (the tables poisoned first) and its status is ok.
    void check(const std::vector<PlanTables>& references) {
      for (size_t i = 0; i < dev_.size(); ++i) {
        dev_[i].poison(stream_);
        launch(i);
        MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "running the planner");
        if (kernel_ != Kernel::cpu_copy) {
          DevicePlanStatus status{};
          MLAPLAN_CUDA_CHECK(cudaMemcpy(&status, dev_[i].status.get(), sizeof status, cudaMemcpyDeviceToHost), kCuda,
                             "reading the plan status");
          if (status.code != kPlanOk)
            throw PlanMismatch(
                fmt::format("bench: the {} kernel refused batch size {} (input set {}) with status {} though the "
                            "reference planned it",
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
    DeviceBuffer<unsigned char> workspace_;
    std::vector<GraphExec> graphs_;
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
      MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "warm-up launch");
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
          MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "finishing the last sample");
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
