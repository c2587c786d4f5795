// The Python module `mlaplan._mlaplan` (nanobind): the planners on NumPy arrays, the device API on
// CUDA arrays of any framework that speaks DLPack (torch, CuPy), the explorer's policies and sweep.
// python/mlaplan/__init__.py is the public face: it picks the path from the arrays and the stream.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/build_info.hpp"
#include "mlaplan/device_plan_status.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/explore/batch_formation.hpp"
#include "mlaplan/explore/model.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/explore/policy.hpp"
#include "mlaplan/explore/policy_cost.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/explore/sweep.hpp"
#include "mlaplan/explore/sweep_format.hpp"
#include "mlaplan/explore/workload.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/replay/replay_source.hpp"
#include "mlaplan/reference_planner.hpp"
#if MLAPLAN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "mlaplan/cuda_support/cuda_call.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"
#include "mlaplan/cuda_support/graph.hpp"
#include "mlaplan/device_plan.hpp"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using HostU32 = nb::ndarray<const uint32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using AnyArray = nb::ndarray<>;

PyObject* g_infeasible = nullptr;  // mlaplan.InfeasibleBatch, a ValueError with min_max_chunks

mlaplan::Batch host_batch(const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size,
                          uint32_t max_chunks) {
  mlaplan::Batch b;
  b.page_size = page_size;
  b.buffer_token_size = buffer_token_size;
  b.max_chunks = max_chunks;
  b.cache_lengths.assign(cache.data(), cache.data() + cache.shape(0));
  b.input_row_offsets.assign(offsets.data(), offsets.data() + offsets.shape(0));
  mlaplan::validate_batch(b);
  return b;
}

// A NumPy array that owns a copy of `values`, shaped `shape`.
template <typename T>
nb::ndarray<nb::numpy, T> numpy_of(const std::vector<T>& values, std::initializer_list<size_t> shape) {
  auto* copy = new std::vector<T>(values);
  nb::capsule owner(copy, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(copy->data(), shape.size(), shape.begin(), owner);
}

nb::tuple tables_tuple(const mlaplan::PlanTables& t) {
  const size_t m = t.max_chunks, b = t.batch_size;
  return nb::make_tuple(numpy_of(t.buffer_row_offsets, {m, b + 1}), numpy_of(t.cache_offsets, {m, b}),
                        numpy_of(t.buffer_lengths, {m}));
}

// A trace replayed through a prefix cache (mlaplan::replay), as gen and sweep --replay make it.
std::unique_ptr<mlaplan::explore::RequestSource> replay_source(const std::string& path, const std::string& format,
                                                               uint32_t block_size, uint64_t cache_tokens, double step_ms,
                                                               uint64_t max_model_len) {
  mlaplan::replay::ReplayOptions o;
  o.block_size = block_size;
  o.cache_tokens = cache_tokens;
  o.step_ms = step_ms;
  o.max_model_len = max_model_len;
  return std::make_unique<mlaplan::replay::ReplaySource>(
      std::make_unique<mlaplan::replay::TraceReader>(path, mlaplan::replay::parse_trace_format(format), block_size), o);
}

mlaplan::explore::Policy policy_named(const std::string& name) {
  const auto policies = mlaplan::explore::parse_policies(name, mlaplan::explore::Policy{}, "policy");
  if (policies.size() != 1) throw mlaplan::InputError("policy: name one policy (max, packed, packed/trtllm, even-split/vllm, ...)");
  return policies[0];
}

#if MLAPLAN_HAVE_CUDA
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
#endif

}  // namespace

NB_MODULE(_mlaplan, m) {
  m.doc() = "mlaplan's planners (see the mlaplan package for the documented interface)";
  m.attr("__version__") = mlaplan::build_info().version;
  m.attr("cuda") = bool(MLAPLAN_HAVE_CUDA);
  // The device planner's status codes (device_plan_status.hpp), for decode_status's "code".
  m.attr("STATUS_OK") = int(mlaplan::kPlanOk);
  m.attr("STATUS_INFEASIBLE") = int(mlaplan::kPlanInfeasible);
  m.attr("STATUS_OVERFLOW") = int(mlaplan::kPlanOverflow);
  m.attr("STATUS_BAD_OFFSETS") = int(mlaplan::kPlanBadOffsets);

  g_infeasible = PyErr_NewExceptionWithDoc(
      "mlaplan.InfeasibleBatch",
      "The batch needs more than max_chunks chunks; min_max_chunks is the smallest that fits.", PyExc_ValueError, nullptr);
  m.attr("InfeasibleBatch") = nb::handle(g_infeasible);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mlaplan::InfeasibleBatch& e) {
      nb::object err = nb::steal(PyObject_CallFunction(g_infeasible, "s", e.what()));
      if (!err.is_valid()) return;
      err.attr("min_max_chunks") = e.min_max_chunks();
      PyErr_SetObject(g_infeasible, err.ptr());
    } catch (const mlaplan::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const mlaplan::DeviceError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def(
      "plan_host",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
         bool reference) {
        const mlaplan::Batch b = host_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        nb::gil_scoped_release release;
        mlaplan::PlanTables t = reference ? mlaplan::plan_reference(b) : mlaplan::plan_fast_cpu(b);
        nb::gil_scoped_acquire acquire;
        return tables_tuple(t);
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "max_chunks"_a, "reference"_a = false,
      "Plans on the CPU: (buffer_row_offsets, cache_offsets, buffer_lengths) as NumPy arrays.");

  m.def(
      "plan_policy",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
         const std::string& policy) {
        const mlaplan::Batch b = host_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        const mlaplan::explore::PolicyPlan p = mlaplan::explore::plan_policy(b, policy_named(policy));
        return nb::make_tuple(tables_tuple(p.tables), p.outcome.chunks, p.outcome.streamed_rows, p.outcome.payload_tokens);
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "max_chunks"_a, "policy"_a,
      "Plans under an engine's policy: ((tables), chunks_used, rows_streamed, tokens_streamed).");

  m.def(
      "sweep",
      [](const std::string& workload, size_t batches, uint64_t seed, uint32_t page_size, uint32_t token_budget,
         uint32_t max_sequences, const std::vector<uint32_t>& buffer_tokens, const std::vector<uint32_t>& max_chunks,
         const std::string& policies, const std::string& replay, const std::string& replay_format,
         uint32_t replay_block_size, uint64_t prefix_cache_tokens, double step_ms, const std::vector<std::string>& costs) {
        using namespace mlaplan::explore;
        if (buffer_tokens.empty() || max_chunks.empty())
          throw mlaplan::InputError("buffer_tokens, max_chunks: give at least one value each");
        std::unique_ptr<RequestSource> source =
            replay.empty() ? preset_source(find_workload_preset(workload), seed)
                           : replay_source(replay, replay_format, replay_block_size, prefix_cache_tokens, step_ms, 0);
        BatchFormation formation;
        formation.token_budget = token_budget;
        formation.max_sequences = max_sequences;
        BatchSettings settings;
        settings.page_size = page_size;
        SweepGrid grid;
        grid.buffer_tokens = buffer_tokens;
        grid.max_chunks = max_chunks;
        grid.policies = parse_policies(policies, Policy{}, "policies");
        // Cost models: the sweep takes each file's model (a preset) and TP, as `sweep --cost` without --model.
        for (const std::string& path : costs) grid.costs.push_back(mlaplan::cost::read_cost_model(path));
        if (!grid.costs.empty()) {
          grid.dtype = parse_dtype(grid.costs.front().dtype);
          take_cost_models(grid, false);
        }
        SweepResult result;
        {
          nb::gil_scoped_release release;
          const std::vector<mlaplan::Batch> formed = form_batches(*source, formation, settings, batches, seed);
          result = run_sweep(formed, grid);
        }
        nb::list rows;
        const bool timed = sweep_has_time(result);
        for (const SweepRow& r : result.rows) {
          nb::dict d;
          for (const SweepField& f : sweep_fields())
            if ((f.outputs & kSweepPython) && (timed || !f.timed))
              d[f.key] = std::visit(
                  [](const auto& v) -> nb::object {
                    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) return nb::none();
                    else return nb::cast(v);
                  },
                  f.value(r));
          rows.append(d);
        }
        return rows;
      },
      "workload"_a, "batches"_a, "seed"_a, "page_size"_a, "token_budget"_a, "max_sequences"_a, "buffer_tokens"_a,
      "max_chunks"_a, "policies"_a, "replay"_a = "", "replay_format"_a = "auto", "replay_block_size"_a = 512,
      "prefix_cache_tokens"_a = 0, "step_ms"_a = 0.0, "costs"_a = std::vector<std::string>{},
      "A sweep of a workload preset's batches (or a trace replayed): one dict per (policy, buffer, M) setting.");

  // The cost model's terms for the calibration (python/mlaplan/calibrate), counted by the same code
  // `sweep --cost` runs, so a fitted file predicts what it was fitted on.
  m.def("cost_terms", [] {
    nb::list out;
    for (size_t i = 0; i < mlaplan::cost::kTerms; ++i) {
      const auto t = static_cast<mlaplan::cost::Term>(i);
      out.append(nb::make_tuple(mlaplan::cost::coefficient_name(t), mlaplan::cost::term_unit(t)));
    }
    return out;
  });
  m.def(
      "cost_features",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t heads, uint32_t sms, uint32_t blocks_per_sm, uint32_t tile_queries, uint32_t max_chunks, bool unbounded,
         uint32_t sm, const std::string& scheduler) {
        using namespace mlaplan::explore;
        mlaplan::Batch b = host_batch(cache, offsets, page_size, buffer_token_size, std::max(max_chunks, 1u));
        const Policy p = policy_named(policy);
        mlaplan::cost::Geometry g{heads, sms, blocks_per_sm, tile_queries};
        if (!mlaplan::cost::scheduler_named(scheduler, g.scheduler))
          throw mlaplan::InputError("scheduler: grid (FlashAttention-2's) or sorted (FlashAttention-3's), not " + scheduler);
        if (heads == 0 || sms == 0 || blocks_per_sm == 0 || tile_queries == 0)
          throw mlaplan::InputError("heads, sms, blocks_per_sm, tile_queries: each is at least 1");
        // sm: the GPU's compute capability x10, whose dispatch picks the path (0: the policy's own loop).
        const EnginePath path = unbounded ? unbounded_path(b, p, sm) : engine_path(b, p, sm);
        mlaplan::cost::Features f;
        if (unbounded) {
          f = dispatched_unbounded_features(b, p, g, sm);
        } else if (path != EnginePath::chunked) {
          f = whole_context_features(b, g);  // no refusal: the loop does not run
        } else if (p.kind == PolicyKind::max) {
          if (max_chunks == 0) b.max_chunks = std::max<uint32_t>(1, mlaplan::plan_shape(b).min_max_chunks);
          const mlaplan::PlanTables t = mlaplan::plan_fast_cpu(b);  // InfeasibleBatch past max_chunks
          f = max_features(b, max_tables_view(t), g);
        } else {
          const PolicyOutcome o = policy_outcome(b, p);
          if (o.refused) throw mlaplan::InputError(o.why);
          f = policy_features(b, p, g);
        }
        nb::dict d;
        for (size_t i = 0; i < mlaplan::cost::kTerms; ++i)
          d[mlaplan::cost::coefficient_name(static_cast<mlaplan::cost::Term>(i))] = f.values[i];
        if (sm != 0) d["path"] = path_name(path);  // without a GPU every policy runs its loop
        return d;
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "heads"_a, "sms"_a = 132,
      "blocks_per_sm"_a = 1, "tile_queries"_a = 128, "max_chunks"_a = 0, "unbounded"_a = false, "sm"_a = 0,
      "scheduler"_a = "grid",
      "A cost model's terms for one layer of the batch under the policy, keyed by coefficient name (max_chunks 0: as "
      "many as max needs; unbounded: a buffer holding the batch whole), on the path the engine dispatches it to on a GPU "
      "of compute capability sm (x10: 90, 100; with sm, a 'path' key names it; 0: the policy's loop); scheduler: how "
      "the attention kernel hands out its blocks (grid: FlashAttention-2, sorted: FlashAttention-3).");
  m.def(
      "engine_path",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, const std::string& policy,
         uint32_t sm) {
        using namespace mlaplan::explore;
        const mlaplan::Batch b = host_batch(cache, offsets, page_size, buffer_token_size, 1);
        const Policy p = policy_named(policy);
        return nb::make_tuple(path_name(engine_path(b, p, sm)), path_reason(b, p, sm));
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "policy"_a, "sm"_a,
      "The path the policy's engine runs the batch on, on a GPU of compute capability sm (x10): (\"chunked\", "
      "\"one-shot\" or \"absorbed\", why).");

  m.def(
      "replay",
      [](const std::string& path, const std::string& format, uint32_t block_size, uint64_t cache_tokens, double step_ms,
         uint32_t token_budget, uint32_t max_sequences, uint64_t max_model_len) {
        std::unique_ptr<mlaplan::explore::RequestSource> source =
            replay_source(path, format, block_size, cache_tokens, step_ms, max_model_len);
        mlaplan::explore::BatchFormation formation;
        formation.token_budget = token_budget;
        formation.max_sequences = max_sequences;
        size_t steps = 0;
        {
          nb::gil_scoped_release release;
          steps = mlaplan::explore::form_batches(*source, formation, mlaplan::explore::BatchSettings{}, SIZE_MAX, 0).size();
        }
        const auto& st = static_cast<const mlaplan::replay::ReplaySource&>(*source).stats();
        nb::dict d;
        d["steps"] = steps;
        d["requests"] = st.requests;
        d["dropped"] = st.dropped;
        d["input_tokens"] = st.input_tokens;
        d["cached_tokens"] = st.cached_tokens;
        d["hit_rate"] = st.hit_rate();
        d["evictions"] = st.evictions;
        d["cached_per_request"] = numpy_of(st.per_request_cached, {st.per_request_cached.size()});
        d["summary"] = st.describe();
        return d;
      },
      "path"_a, "format"_a = "auto", "block_size"_a = 512, "prefix_cache_tokens"_a = 0, "step_ms"_a = 0.0,
      "token_budget"_a = 8192, "max_sequences"_a = 256, "max_model_len"_a = 0,
      "Replays a trace through the prefix cache, in steps formed by the token budget: what it cached.");

  // For the prefill executor: the model presets and config.json reader, and scenario files, with the
  // CLI's own checks and messages (an InputError is a ValueError naming the file and field).
  m.def(
      "model_dims",
      [](const std::string& name, const std::string& config) {
        const mlaplan::explore::ModelDims d =
            config.empty() ? mlaplan::explore::find_model_preset(name) : mlaplan::explore::read_model_config(config);
        nb::dict r;
        r["name"] = d.name;
        r["title"] = d.title();
        r["num_heads"] = d.num_heads;
        r["qk_nope_head_dim"] = d.qk_nope_head_dim;
        r["qk_rope_head_dim"] = d.qk_rope_head_dim;
        r["v_head_dim"] = d.v_head_dim;
        r["kv_lora_rank"] = d.kv_lora_rank;
        r["num_layers"] = d.num_layers;
        return r;
      },
      "name"_a, "config"_a = "", "A model preset by name, or the MLA dimensions of a config.json (config non-empty).");
  m.def("model_names", [] {
    std::vector<std::string> names;
    for (const auto& p : mlaplan::explore::model_presets()) names.push_back(p.name);
    return names;
  });
  m.def(
      "read_scenarios",
      [](const std::string& path) {
        nb::list out;
        for (const mlaplan::check::Scenario& s : mlaplan::io::load_scenario_file(path)) {
          nb::dict d;
          d["name"] = s.name;
          d["page_size"] = s.batch.page_size;
          d["buffer_token_size"] = s.batch.buffer_token_size;
          d["max_chunks"] = s.batch.max_chunks;
          d["cache_lengths"] = s.batch.cache_lengths;
          d["input_row_offsets"] = s.batch.input_row_offsets;
          out.append(d);
        }
        return out;
      },
      "path"_a, "The batches of a scenario file (one, or a {\"scenarios\": [...]} list), checked as `mlaplan run` checks them.");

  m.def("workload_names", [] {
    std::vector<std::string> names;
    for (const auto& p : mlaplan::explore::workload_presets()) names.push_back(p.name);
    return names;
  });

#if MLAPLAN_HAVE_CUDA
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
#endif
}
