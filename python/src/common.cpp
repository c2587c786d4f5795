// The helpers bindings.hpp declares.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bindings.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::python {

Batch host_batch(const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size,
                 uint32_t max_chunks) {
  Batch b;
  b.page_size = page_size;
  b.buffer_token_size = buffer_token_size;
  b.max_chunks = max_chunks;
  b.cache_lengths.assign(cache.data(), cache.data() + cache.shape(0));
  b.input_row_offsets.assign(offsets.data(), offsets.data() + offsets.shape(0));
  validate_batch(b);
  return b;
}

nb::tuple tables_tuple(PlanTables&& t) {
  const size_t m = t.max_chunks, b = t.batch_size;
  return nb::make_tuple(numpy_of(std::move(t.buffer_row_offsets), {m, b + 1}), numpy_of(std::move(t.cache_offsets), {m, b}),
                        numpy_of(std::move(t.buffer_lengths), {m}));
}

policies::Policy policy_named(const std::string& name) {
  const auto policies = policies::parse_policies(name, policies::Policy{}, "policy");
  if (policies.size() != 1) throw InputError("policy: name one policy (max, packed, packed/trtllm, even-split/vllm, ...)");
  // The calls that take a policy by name take no cost file: guided's must come with its name.
  if (policies[0].kind == policies::PolicyKind::guided && !policies[0].guide)
    throw InputError("policy: guided chooses each batch's plan by a cost model, and this call takes none; name the "
                     "file: guided:COST.json");
  return policies[0];
}

bool needs_worker(const Batch& b, const std::string& policy) {
  if (policy.find(':') != std::string::npos) return true;
  // About the table cells a plan of the batch fills: sequences x chunks of the whole batch, or of
  // max_chunks where the tables have that many rows.
  const uint64_t tokens = b.input_row_offsets.empty() ? 0 : b.input_row_offsets.back();
  long double chunks = static_cast<long double>(tokens);
  for (uint32_t c : b.cache_lengths) chunks += c;
  chunks = std::max<long double>(chunks / std::max<uint32_t>(b.buffer_token_size, 1) + 1, b.max_chunks);
  return b.cache_lengths.size() >= 1024 || chunks * (b.cache_lengths.size() + 1) >= (1 << 16);
}

void require_tables_fit(const Batch& b, uint64_t rows, uint64_t needed) {
  const uint64_t limit = kDefaultMemoryLimit, need = table_bytes(b.batch_size(), rows);
  if (need <= limit) return;
  const uint64_t fit = limit / table_bytes(b.batch_size(), 1);
  const std::string size = fmt::format("{} chunk rows x {} columns of tables take {}, above the {} a call may make (the "
                                       "CLI's default --memory-limit)",
                                       rows, b.batch_size() + uint64_t{1}, io::format_bytes(need), io::format_bytes(limit));
  if (rows > needed)  // max_chunks asked for more rows than the plan fills
    throw InputError(needed <= fit ? fmt::format("max_chunks: {}; the plan needs {}, so give at most {}", size, needed, fit)
                                   : fmt::format("max_chunks: {}; split the batch or raise buffer_token_size", size));
  throw InputError(fmt::format("buffer_token_size: the plan's {}; raise buffer_token_size (fewer chunks) or split the "
                               "batch",
                               size));
}

void run_interruptible(void (*body)(void*), void* context, const std::function<void()>& tick) {
  profile::clear_stop_request();
  bool interrupted = false;
  {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    nb::gil_scoped_release release;
    std::thread worker([&] {
      body(context);  // catches everything itself
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      finished.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      lock.unlock();
      {
        // Python's own signal handler only notes the signal; its Python-level handler (raising
        // KeyboardInterrupt) runs here, on the main thread, and its exception stays set.
        nb::gil_scoped_acquire acquire;
        interrupted = PyErr_CheckSignals() != 0;
        if (!interrupted && tick) {
          try {
            tick();
          } catch (nb::python_error& e) {
            e.restore();  // raised below, once the worker has stopped
            interrupted = true;
          } catch (const std::exception& e) {  // the worker must stop before anything leaves this scope
            PyErr_SetString(PyExc_RuntimeError, e.what());
            interrupted = true;
          }
        }
      }
      lock.lock();
      if (interrupted) {
        profile::request_stop();
        // The loops see the request at their next poll. A worker blocked in a system call (opening a
        // FIFO that has no writer) is woken by a SIGINT sent to it: the call fails with EINTR and the
        // reader sees the request. A handler that does nothing stands in for Python's meanwhile, so
        // these signals raise no second KeyboardInterrupt later.
        struct sigaction quiet {}, saved {};
        quiet.sa_handler = [](int) {};
        sigemptyset(&quiet.sa_mask);
        sigaction(SIGINT, &quiet, &saved);
        while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; }))
          pthread_kill(worker.native_handle(), SIGINT);
        sigaction(SIGINT, &saved, nullptr);
        break;
      }
    }
    lock.unlock();
    worker.join();
  }
  profile::clear_stop_request();
  if (interrupted) throw nb::python_error();  // the handler's exception, KeyboardInterrupt for Ctrl-C
}

}  // namespace mlaplan::python
