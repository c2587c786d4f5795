// The GPU planner behind the Planner interface: copy the batch in, plan_on_device, copy the
// tables and status out. Device buffers grow and are reused across calls, so verifying 100k
// batches costs copies and launches, not allocations.
#include "mlaplan/profile/gpu_planner.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cuda_runtime_api.h>

#include "mlaplan/build_info.hpp"
#include "mlaplan/cuda_support/cuda_call.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan::profile {

namespace {

using cuda_support::DeviceBuffer;

// "CUDA error in <what>: cudaErrorX: description"; "out of GPU memory: <what>" for an allocation.
constexpr cuda_support::Wording kCuda{"CUDA error in ", true, "out of GPU memory: "};

// Grows `buffer` to `count` values (never shrinks it, so buffers are reused across calls); true when
// it was reallocated, i.e. its contents are undefined.
template <typename T>
bool grow(DeviceBuffer<T>& buffer, size_t count, const char* what) {
  if (count <= buffer.size()) return false;
  MLAPLAN_CUDA_CHECK(buffer.reset(), kCuda, fmt::format("freeing the {} buffer", what));
  MLAPLAN_CUDA_CHECK(buffer.allocate(count), kCuda, fmt::format("allocating {} bytes for {}", count * sizeof(T), what));
  return true;
}

class GpuPlanner final : public Planner {
 public:
  GpuPlanner(GpuKernel kernel, std::string device_name) : kernel_(kernel), device_name_(std::move(device_name)) {
    MLAPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), kCuda, "creating a stream");
    MLAPLAN_CUDA_CHECK(cudaEventCreate(&start_), kCuda, "creating an event");
    MLAPLAN_CUDA_CHECK(cudaEventCreate(&stop_), kCuda, "creating an event");
  }
  ~GpuPlanner() override {
    cudaEventDestroy(stop_);
    cudaEventDestroy(start_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return std::string("gpu-") + to_string(kernel_); }
  std::string backend() const override { return "gpu"; }
  std::optional<std::string> device() const override { return device_name_; }

  PlanTables plan(const Batch& batch, PhaseTimer& timer) override {
    const uint32_t b = batch.batch_size();
    const uint32_t m = batch.max_chunks;
    DevicePlanArgs args;
    args.batch_size = b;
    args.page_size = batch.page_size;
    args.buffer_token_size = batch.buffer_token_size;
    args.max_chunks = m;
    {
      auto scope = timer.phase("copy in");
      grow(offsets_, size_t{b} + 1, "input_row_offsets");
      grow(cache_lengths_, std::max<size_t>(b, 1), "cache_lengths");
      grow(row_offsets_, size_t{m} * (size_t{b} + 1), "buffer_row_offsets");
      grow(cache_offsets_, std::max<size_t>(size_t{m} * b, 1), "cache_offsets");
      grow(lengths_, m, "buffer_lengths");
      grow(status_, 1, "the plan status");
      const size_t ws_bytes = plan_workspace_bytes(b, m, kernel_);
      if (grow(workspace_, std::max<size_t>(ws_bytes, 1), "the planner workspace"))
        MLAPLAN_CUDA_CHECK(cudaMemsetAsync(workspace_.get(), 0, workspace_.bytes(), stream_), kCuda,
                           "zeroing the workspace");
      MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(offsets_.get(), batch.input_row_offsets.data(),
                                         (size_t{b} + 1) * sizeof(uint32_t), cudaMemcpyHostToDevice, stream_),
                         kCuda, "copying input_row_offsets to the GPU");
      if (b > 0)
        MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(cache_lengths_.get(), batch.cache_lengths.data(),
                                           size_t{b} * sizeof(uint32_t), cudaMemcpyHostToDevice, stream_),
                           kCuda, "copying cache_lengths to the GPU");
      MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "copying the batch to the GPU");
    }
    args.input_row_offsets = offsets_.get();
    args.cache_lengths = cache_lengths_.get();
    args.buffer_row_offsets = row_offsets_.get();
    args.cache_offsets = cache_offsets_.get();
    args.buffer_lengths = lengths_.get();
    args.status = status_.get();

    // The plan phase is the kernels alone, timed with events on the stream.
    MLAPLAN_CUDA_CHECK(cudaEventRecord(start_, stream_), kCuda, "recording an event");
    MLAPLAN_CUDA_CHECK(plan_on_device(args, workspace_.get(), workspace_.bytes(), stream_, kernel_), kCuda,
                       fmt::format("launching the {} kernel", to_string(kernel_)));
    MLAPLAN_CUDA_CHECK(cudaEventRecord(stop_, stream_), kCuda, "recording an event");
    MLAPLAN_CUDA_CHECK(cudaEventSynchronize(stop_), kCuda, fmt::format("running the {} kernel", to_string(kernel_)));
    float ms = 0;
    MLAPLAN_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_), kCuda, "reading the kernel time");
    timer.add("plan", ms * 1000.0);

    PlanTables tables;
    DevicePlanStatus status{};
    {
      auto scope = timer.phase("copy out");
      MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(&status, args.status, sizeof(status), cudaMemcpyDeviceToHost, stream_), kCuda,
                         "copying the plan status from the GPU");
      MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "copying the plan status from the GPU");
      if (status.code == kPlanOk) {
        tables = PlanTables(b, m);
        copy_out(tables.buffer_row_offsets.data(), args.buffer_row_offsets, tables.buffer_row_offsets.size(),
                 "buffer_row_offsets");
        copy_out(tables.cache_offsets.data(), args.cache_offsets, tables.cache_offsets.size(), "cache_offsets");
        copy_out(tables.buffer_lengths.data(), args.buffer_lengths, tables.buffer_lengths.size(), "buffer_lengths");
        MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream_), kCuda, "copying the plan from the GPU");
      }
    }
    if (status.code != kPlanOk) refuse(batch, status);
    return tables;
  }

 private:
  template <typename T>
  void copy_out(T* host, const T* device, size_t count, const char* what) {
    if (count == 0) return;
    MLAPLAN_CUDA_CHECK(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, stream_), kCuda,
                       fmt::format("copying {} from the GPU", what));
  }

  // The device refused the batch: throw what the CPU would, with the CPU's own message, so both
  // backends refuse alike. A disagreement between them is a device failure.
  [[noreturn]] void refuse(const Batch& batch, const DevicePlanStatus& status) const {
    if (status.code == kPlanInfeasible) {
      const PlanShape shape = require_feasible(batch);  // throws InfeasibleBatch for an infeasible batch
      throw DeviceError(fmt::format("the GPU planner refused a batch the CPU finds feasible (device: min_max_chunks {}, "
                                    "padded tokens {}; CPU: {}, {})",
                                    status.min_max_chunks, status.padded_tokens, shape.min_max_chunks,
                                    shape.padded_tokens));
    }
    if (status.code == kPlanOverflow || status.code == kPlanBadOffsets) {
      validate_batch(batch);  // throws InputError naming the field
      throw DeviceError(fmt::format("the GPU planner reported {} for a batch that passed validation",
                                    status.code == kPlanOverflow ? "a 32-bit overflow" : "decreasing offsets"));
    }
    throw DeviceError(fmt::format("the GPU planner returned an unknown status code {}", status.code));
  }

  GpuKernel kernel_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  DeviceBuffer<uint32_t> offsets_, cache_lengths_, row_offsets_, cache_offsets_;
  DeviceBuffer<int32_t> lengths_;
  DeviceBuffer<DevicePlanStatus> status_;
  DeviceBuffer<unsigned char> workspace_;
};

}  // namespace

std::optional<std::string> find_usable_gpu(std::string* why) {
  auto fail = [why](std::string reason) -> std::optional<std::string> {
    cudaGetLastError();
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    // Without an NVIDIA driver the runtime reports an "insufficient" driver; say what that means.
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
      return fail(fmt::format("no NVIDIA driver or GPU found: {}", cudaGetErrorName(e)));
    return fail(fmt::format("no CUDA device: {}", cudaGetErrorString(e)));
  }
  if (count == 0) return fail("no CUDA device: none is visible");
  int driver = 0;
  if (const cudaError_t e = cudaDriverGetVersion(&driver); e != cudaSuccess)
    return fail(fmt::format("cannot read the driver version: {}", cudaGetErrorString(e)));
  if (driver / 1000 < CUDART_VERSION / 1000)
    return fail(fmt::format("the NVIDIA driver supports CUDA {}.{} but this mlaplan needs CUDA {}.x; update the driver",
                            driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000));
  int device = 0;
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return fail(fmt::format("no CUDA device: {}", cudaGetErrorString(e)));
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess)
    return fail(fmt::format("cannot query CUDA device {}: {}", device, cudaGetErrorString(e)));
  if (const cudaError_t e = plan_kernels_loadable(); e != cudaSuccess)
    return fail(fmt::format("{} (compute capability {}.{}) cannot run this build's kernels ({}): {}", prop.name,
                            prop.major, prop.minor, build_info().cuda_architectures, cudaGetErrorString(e)));
  if (why) why->clear();
  return std::string(prop.name);
}

std::unique_ptr<Planner> make_gpu_planner(GpuKernel kernel) {
  std::string why;
  std::optional<std::string> name = find_usable_gpu(&why);
  if (!name) throw DeviceError("no usable GPU: " + why + "; use --backend cpu");
  return std::make_unique<GpuPlanner>(kernel, *name);
}

}  // namespace mlaplan::profile
