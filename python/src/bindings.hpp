// What the binding files of the module `mlaplan._mlaplan` share: the host-array types, the batch and
// table conversions, and `interruptible`, which runs long C++ work so that Ctrl-C stops it. Each
// bind_*.cpp adds one area's functions to the module (module.cpp calls them).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::python {

namespace nb = nanobind;

using HostU32 = nb::ndarray<const uint32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// The batch of host arrays, checked by validate_batch (InputError, a ValueError in Python).
Batch host_batch(const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size,
                 uint32_t max_chunks);

// A NumPy array that owns a copy of `values`, shaped `shape`.
template <typename T>
nb::ndarray<nb::numpy, T> numpy_of(const std::vector<T>& values, std::initializer_list<size_t> shape) {
  auto* copy = new std::vector<T>(values);
  nb::capsule owner(copy, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(copy->data(), shape.size(), shape.begin(), owner);
}

// A NumPy array that takes `values` over (no copy: a plan's tables would be held twice).
template <typename T>
nb::ndarray<nb::numpy, T> numpy_of(std::vector<T>&& values, std::initializer_list<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.begin(), owner);
}

// The three tables as NumPy arrays, taken over.
nb::tuple tables_tuple(PlanTables&& t);

// Refuses, before they are made, plan tables of `rows` chunk rows for the batch that would take more
// than the CLI's default --memory-limit (2 GiB; a max_chunks of a million with a thousand sequences
// asked for 8 GiB): ValueError naming max_chunks, or buffer_token_size where the plan's own chunks
// (`needed`) are the rows, with the fix.
void require_tables_fit(const Batch& b, uint64_t rows, uint64_t needed);

// One policy by name, as the calls that plan or price one batch take it (guided:FILE reads the file:
// call it inside `interruptible`).
policies::Policy policy_named(const std::string& name);

// Runs `work` (pure C++, no Python objects) on a worker thread with the GIL released, while the
// calling thread checks Python's signals every 50 ms. A signal whose handler raises (Ctrl-C's
// KeyboardInterrupt) requests a stop (stop_request.hpp, which the sweep's and formation's loops
// poll), waits for the worker to stop and raises that exception; otherwise `work`'s result or
// exception comes back as if called directly. (The stop flag is the process's: a stop ends every
// such call running at the time.) Every call that may read a file (a FIFO blocks) or run long goes
// through here: Python's handlers run only on this thread, between its own steps. `tick`, where
// given, runs on the calling thread with the GIL at each check (a progress report); a Python error it
// raises stops the work as Ctrl-C does and is raised in its place.
void run_interruptible(void (*body)(void*), void* context, const std::function<void()>& tick = {});

template <typename F>
auto interruptible(F&& work, const std::function<void()>& tick = {}) -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  struct Context {
    std::remove_reference_t<F>* work;
    std::optional<R> result;
    std::exception_ptr error;
  } context{&work, std::nullopt, nullptr};
  run_interruptible(
      [](void* p) {
        auto* c = static_cast<Context*>(p);
        try {
          c->result.emplace((*c->work)());
        } catch (...) {
          c->error = std::current_exception();
        }
      },
      &context, tick);
  if (context.error) std::rethrow_exception(context.error);
  return std::move(*context.result);
}

// Whether a call that plans or prices one batch runs through `interruptible`: where the policy names
// a file (guided:FILE, whose open blocks on a FIFO) or the batch is large enough to take a while. A
// small one runs inline, as a worker thread costs several times the call (calibrate prices thousands).
bool needs_worker(const Batch& b, const std::string& policy);

template <typename F>
auto interruptible_if(bool worker, F&& work) -> std::invoke_result_t<F&> {
  return worker ? interruptible(work) : work();
}

void bind_planners(nb::module_& m);
void bind_explore(nb::module_& m);
void bind_cost(nb::module_& m);
void bind_inputs(nb::module_& m);
void bind_device(nb::module_& m);  // the CUDA build's device API; nothing without CUDA

}  // namespace mlaplan::python
