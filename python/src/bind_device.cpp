// The device API of the CUDA build: the planner on CUDA arrays of any framework that speaks DLPack
// (torch, CuPy), with a workspace allocated once and a bound form for engines that plan step after
// step in the same buffers. Without CUDA, bind_device adds nothing (mlaplan/__init__.py says so).
#include "bindings.hpp"

#if MLAPLAN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include <chrono>

#include "mlaplan/cuda_support/cuda_call.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"
#include "mlaplan/cuda_support/graph.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/device_plan_status.hpp"
#include "mlaplan/errors.hpp"
#endif

namespace mlaplan::python {

#if MLAPLAN_HAVE_CUDA
using namespace nb::literals;

namespace {

using AnyArray = nb::ndarray<>;

// "CUDA error <what>: <description>", raised in Python as RuntimeError.
constexpr mlaplan::cuda_support::Wording kCuda{"CUDA error ", false, nullptr};

// A planner workspace on one device, sized for batches up to max_batch_size x max_chunks, zeroed once
// here (the planner leaves it reset after each call), freed with the object.
class Workspace {
 public:
  Workspace(uint32_t max_batch_size, uint32_t max_chunks, int device)
      : max_batch_size_(max_batch_size), max_chunks_(max_chunks), device_(device) {
    if (max_chunks < 1) throw mlaplan::InputError("max_chunks: expected an integer >= 1, got 0");
    const size_t bytes = mlaplan::plan_workspace_bytes(max_batch_size, max_chunks);
    MLAPLAN_CUDA_CHECK(cudaSetDevice(device), kCuda, "selecting the device");
    if (bytes) {
      MLAPLAN_CUDA_CHECK(buffer_.allocate(bytes), kCuda, "allocating the workspace");
      MLAPLAN_CUDA_CHECK(cudaMemset(buffer_.get(), 0, bytes), kCuda, "zeroing the workspace");
      MLAPLAN_CUDA_CHECK(cudaDeviceSynchronize(), kCuda, "zeroing the workspace");
    }
  }

  void* ptr() const { return buffer_.get(); }
  size_t bytes() const { return buffer_.bytes(); }
  uint32_t max_batch_size() const { return max_batch_size_; }
  uint32_t max_chunks() const { return max_chunks_; }
  int device() const { return device_; }

 private:
  uint32_t max_batch_size_, max_chunks_;
  int device_;
  mlaplan::cuda_support::DeviceBuffer<unsigned char> buffer_;
};

// A CUDA array of 32-bit integers (int32 or uint32: both are read as uint32 where the planner wants
// that) with the shape the planner needs, on the workspace's device; names the argument otherwise.
void check_device_array(const AnyArray& a, const char* name, std::initializer_list<size_t> shape, int device,
                        bool allow_signed = true) {
  const std::string n = name;
  if (a.device_type() != nb::device::cuda::value)
    throw mlaplan::InputError(n + ": expected a CUDA array (torch or CuPy on the GPU)");
  if (a.device_id() != device)
    throw mlaplan::InputError(n + ": on CUDA device " + std::to_string(a.device_id()) + ", the workspace is on device " +
                              std::to_string(device));
  const bool is32 = a.dtype() == nb::dtype<uint32_t>() || (allow_signed && a.dtype() == nb::dtype<int32_t>());
  if (!is32) throw mlaplan::InputError(n + ": expected int32 or uint32 elements");
  if (a.ndim() != shape.size())
    throw mlaplan::InputError(n + ": expected " + std::to_string(shape.size()) + " dimensions, got " + std::to_string(a.ndim()));
  size_t i = 0;
  for (size_t want : shape) {
    if (a.shape(i) != want)
      throw mlaplan::InputError(n + ": dimension " + std::to_string(i) + " is " + std::to_string(a.shape(i)) + ", expected " +
                                std::to_string(want));
    ++i;
  }
  // Row-major and dense: the planner writes the tables as flat arrays. (An empty array has nothing
  // to lay out; frameworks give it arbitrary strides.)
  if (a.size() == 0) return;
  int64_t stride = 1;
  for (size_t k = a.ndim(); k-- > 0;) {
    if (a.shape(k) > 1 && a.stride(k) != stride) throw mlaplan::InputError(n + ": expected a contiguous (row-major) array");
    stride *= static_cast<int64_t>(a.shape(k));
  }
}

// The arguments of one plan, checked once and kept with references to the arrays, so the call
// itself is plan_on_device and nothing else: the hot path of an engine that keeps its batch in the
// same device buffers step after step (as CUDA graphs require anyway).
class BoundPlan {
 public:
  BoundPlan(AnyArray cache, AnyArray offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
            AnyArray rows, AnyArray cache_out, AnyArray lengths, AnyArray status, nb::object workspace,
            const std::string& kernel);
  void operator()(uintptr_t stream) const {
    MLAPLAN_CUDA_CHECK(
        mlaplan::plan_on_device(args_, ws_->ptr(), ws_->bytes(), reinterpret_cast<cudaStream_t>(stream), kernel_), kCuda,
        "launching the planner");
  }
  uint32_t batch_size() const { return args_.batch_size; }
  const mlaplan::DevicePlanArgs& args() const { return args_; }

 private:
  AnyArray cache_, offsets_, rows_, cache_out_, lengths_, status_;  // kept alive with the plan
  nb::object workspace_;
  Workspace* ws_;
  mlaplan::DevicePlanArgs args_;
  mlaplan::GpuKernel kernel_;
};

mlaplan::DevicePlanArgs checked_args(const AnyArray& cache, const AnyArray& offsets, uint32_t page_size,
                                     uint32_t buffer_token_size, uint32_t max_chunks, const AnyArray& rows,
                                     const AnyArray& cache_out, const AnyArray& lengths, const AnyArray& status,
                                     const Workspace& ws, const std::string& kernel) {
  const int dev = ws.device();
  if (cache.ndim() != 1) throw mlaplan::InputError("cache_lengths: expected 1 dimension");
  const size_t b = cache.shape(0), m = max_chunks;
  if (b > ws.max_batch_size() || m > ws.max_chunks())
    throw mlaplan::InputError("workspace: sized for " + std::to_string(ws.max_batch_size()) + " sequences x " +
                              std::to_string(ws.max_chunks()) + " chunks; this batch is " + std::to_string(b) + " x " +
                              std::to_string(m) + "; make a larger Workspace");
  check_device_array(cache, "cache_lengths", {b}, dev);
  check_device_array(offsets, "input_row_offsets", {b + 1}, dev);
  check_device_array(rows, "buffer_row_offsets", {m, b + 1}, dev);
  check_device_array(cache_out, "cache_offsets", {m, b}, dev);
  check_device_array(lengths, "buffer_lengths", {m}, dev);
  check_device_array(status, "status", {4}, dev);
  if (!mlaplan::gpu_kernel_named(kernel)) throw mlaplan::InputError("kernel: fast or max-port, not " + kernel);
  if (page_size < 1 || buffer_token_size < 1 || buffer_token_size > 0x7fffffffu || max_chunks < 1)
    throw mlaplan::InputError("page_size, buffer_token_size, max_chunks: expected page_size >= 1, 1 <= buffer_token_size "
                              "< 2^31 and max_chunks >= 1");
  mlaplan::DevicePlanArgs a;
  a.cache_lengths = static_cast<const uint32_t*>(cache.data());
  a.input_row_offsets = static_cast<const uint32_t*>(offsets.data());
  a.batch_size = static_cast<uint32_t>(b);
  a.page_size = page_size;
  a.buffer_token_size = buffer_token_size;
  a.max_chunks = max_chunks;
  a.buffer_row_offsets = static_cast<uint32_t*>(rows.data());
  a.cache_offsets = static_cast<uint32_t*>(cache_out.data());
  a.buffer_lengths = static_cast<int32_t*>(lengths.data());
  a.status = static_cast<mlaplan::DevicePlanStatus*>(status.data());
  return a;
}

BoundPlan::BoundPlan(AnyArray cache, AnyArray offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
                     AnyArray rows, AnyArray cache_out, AnyArray lengths, AnyArray status, nb::object workspace,
                     const std::string& kernel)
    : cache_(std::move(cache)),
      offsets_(std::move(offsets)),
      rows_(std::move(rows)),
      cache_out_(std::move(cache_out)),
      lengths_(std::move(lengths)),
      status_(std::move(status)),
      workspace_(std::move(workspace)),
      ws_(nb::cast<Workspace*>(workspace_)),
      args_(checked_args(cache_, offsets_, page_size, buffer_token_size, max_chunks, rows_, cache_out_, lengths_, status_,
                         *ws_, kernel)),
      kernel_(*mlaplan::gpu_kernel_named(kernel)) {}

void plan_device(const AnyArray& cache, const AnyArray& offsets, uint32_t page_size, uint32_t buffer_token_size,
                 uint32_t max_chunks, const AnyArray& rows, const AnyArray& cache_out, const AnyArray& lengths,
                 const AnyArray& status, Workspace& ws, uintptr_t stream, const std::string& kernel) {
  const mlaplan::DevicePlanArgs a =
      checked_args(cache, offsets, page_size, buffer_token_size, max_chunks, rows, cache_out, lengths, status, ws, kernel);
  MLAPLAN_CUDA_CHECK(mlaplan::plan_on_device(a, ws.ptr(), ws.bytes(), reinterpret_cast<cudaStream_t>(stream),
                                             *mlaplan::gpu_kernel_named(kernel)),
                     kCuda, "launching the planner");
}

// The same call from C++, for scripts/bench_python.py to put beside the Python call in one run: the
// host time per plan_on_device call over `iterations` back-to-back calls, and per replay of a CUDA
// graph holding one call (both ending in one synchronisation).
nb::dict bench_cpp(const BoundPlan& bound, Workspace& ws, uintptr_t stream_handle, int iterations) {
  auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const mlaplan::DevicePlanArgs a = bound.args();
  nb::gil_scoped_release release;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 100; ++i)
    MLAPLAN_CUDA_CHECK(mlaplan::plan_on_device(a, ws.ptr(), ws.bytes(), stream), kCuda, "warming up");
  MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream), kCuda, "warming up");
  auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i)
    MLAPLAN_CUDA_CHECK(mlaplan::plan_on_device(a, ws.ptr(), ws.bytes(), stream), kCuda, "planning");
  MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream), kCuda, "planning");
  const double call_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations;

  const mlaplan::cuda_support::Capture graph = mlaplan::cuda_support::capture_graph(
      stream, [&] { return mlaplan::plan_on_device(a, ws.ptr(), ws.bytes(), stream); });
  const char* const steps[] = {"beginning a capture", "capturing", "ending a capture", "instantiating the graph"};
  mlaplan::cuda_support::check(graph.call, kCuda, steps[static_cast<int>(graph.step)]);
  for (int i = 0; i < 100; ++i) MLAPLAN_CUDA_CHECK(graph.exec.launch(stream), kCuda, "warming up the graph");
  MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream), kCuda, "warming up the graph");
  t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) MLAPLAN_CUDA_CHECK(graph.exec.launch(stream), kCuda, "replaying");
  MLAPLAN_CUDA_CHECK(cudaStreamSynchronize(stream), kCuda, "replaying");
  const double replay_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations;
  nb::gil_scoped_acquire acquire;
  nb::dict d;
  d["call_us"] = call_us;
  d["graph_replay_us"] = replay_us;
  return d;
}
}  // namespace

void bind_device(nb::module_& m) {
  m.def("workspace_bytes", [](uint32_t b, uint32_t m) { return mlaplan::plan_workspace_bytes(b, m); },
        "max_batch_size"_a, "max_chunks"_a);
  nb::class_<Workspace>(m, "Workspace", "Planner workspace on one GPU: allocated and zeroed once, reused by every call")
      .def(nb::init<uint32_t, uint32_t, int>(), "max_batch_size"_a, "max_chunks"_a, "device"_a = 0)
      .def_prop_ro("bytes", &Workspace::bytes)
      .def_prop_ro("max_batch_size", &Workspace::max_batch_size)
      .def_prop_ro("max_chunks", &Workspace::max_chunks)
      .def_prop_ro("device", &Workspace::device);
  m.def("plan_device", &plan_device, "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a,
        "max_chunks"_a, "buffer_row_offsets"_a, "cache_offsets"_a, "buffer_lengths"_a, "status"_a, "workspace"_a,
        "stream"_a, "kernel"_a = "fast",
        "Enqueues the plan on `stream`: no allocation, no synchronisation (capturable in a CUDA graph).");
  nb::class_<BoundPlan>(m, "BoundPlan", nb::dynamic_attr(),
                        "One batch's arrays bound to the planner: calling it with a stream handle enqueues the plan")
      .def(nb::init<AnyArray, AnyArray, uint32_t, uint32_t, uint32_t, AnyArray, AnyArray, AnyArray, AnyArray, nb::object,
                    const std::string&>(),
           "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "max_chunks"_a,
           "buffer_row_offsets"_a, "cache_offsets"_a, "buffer_lengths"_a, "status"_a, "workspace"_a, "kernel"_a = "fast")
      .def("__call__", &BoundPlan::operator(), "stream"_a,
           "Enqueues the plan on the stream (an int handle): no allocation, no synchronisation, no argument checks")
      .def_prop_ro("batch_size", &BoundPlan::batch_size);
  m.def("_bench_cpp", &bench_cpp, "bound"_a, "workspace"_a, "stream"_a, "iterations"_a,
        "Host microseconds per C++ plan_on_device call and per graph replay (benchmarks).");
}
#else
void bind_device(nb::module_&) {}
#endif

}  // namespace mlaplan::python
