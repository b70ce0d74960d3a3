// C++ errors raised into Python. An error MXNet raised (MXError::mxnet_text) reaches the user
// as the exception eager code gets for it: MXNet's Python side (check_call) picks its type and
// puts the stack before the message, and never names the C API function that failed. Our own
// errors (OpInputError, our checks) keep their text and the OpInputError class.
#include "mxapi.h"
#include "runtime.h"

namespace minpy {

void set_python_error(const std::exception& e) {
  const auto* mx = dynamic_cast<const MXError*>(&e);
  if (mx && !mx->mxnet_text.empty() && R->mxnet_error_fn) {
    try {
      py::object exc = R->mxnet_error_fn(mx->mxnet_text, mx->note);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
      return;
    } catch (py::error_already_set&) {  // our own text below
    }
  }
  PyErr_SetString(R->error_cls ? R->error_cls.ptr() : PyExc_RuntimeError, e.what());
}

void set_python_error_from_current() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    set_python_error(e);
  }
}

void register_error_api(py::module_& m) {
  m.def("set_mxnet_error", [](py::object fn) { R->mxnet_error_fn = fn; },
        "The factory of the exception eager MXNet raises for an MXGetLastError text.");
  // Functions bound with pybind11 (flush, close_scope, ...) raise as the C functions do.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const MXError& e) {
      set_python_error(e);
    } catch (const OpInputError& e) {
      set_python_error(e);
    }
  });
}

}  // namespace minpy
