// The Python module `mlaplan._mlaplan` (nanobind): the planners on NumPy arrays, the device API on
// CUDA arrays of any framework that speaks DLPack (torch, CuPy), the explorer's policies and sweep,
// the cost model's terms and the readers the executor shares with the CLI, one bind_*.cpp per area.
// python/mlaplan/__init__.py is the public face: it checks the arguments and picks the path.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "mlaplan/build_info.hpp"
#include "mlaplan/device_plan_status.hpp"
#include "mlaplan/errors.hpp"

namespace nb = nanobind;

namespace {

PyObject* g_infeasible = nullptr;  // mlaplan.InfeasibleBatch, a ValueError with min_max_chunks

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
    } catch (const mlaplan::Interrupted&) {
      // A stop requested while no Python signal was seen (run_interruptible raises the signal's own).
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });

  mlaplan::python::bind_planners(m);
  mlaplan::python::bind_explore(m);
  mlaplan::python::bind_cost(m);
  mlaplan::python::bind_inputs(m);
  mlaplan::python::bind_device(m);
}
