// Python NDArray objects seen from C++: their MXNet handles, whether anyone
// besides the trace still holds them, and the pool of recycled lazy arrays.

#include "mxapi.h"
#include "runtime.h"

#include <structmember.h>  // after Python.h (via runtime.h)

namespace minpy {

HandleLayout HL;

inline PyObject* handle_obj_fast(PyObject* arr) {
  if (HL.offset < 0 || !PyObject_TypeCheck(arr, HL.base)) return nullptr;
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(arr) + HL.offset);
}

bool is_ndarray(PyObject* obj) { return HL.base && PyObject_TypeCheck(obj, HL.base); }

NDArrayHandle handle_of(PyObject* arr) {
  PyObject* fast = handle_obj_fast(arr);
  if (fast && Py_TYPE(fast) == HL.void_p) {
    char* b_ptr = *reinterpret_cast<char**>(reinterpret_cast<char*>(fast) + sizeof(PyObject));
    return *reinterpret_cast<void**>(b_ptr);
  }
  PyObject* h = PyObject_GetAttrString(arr, "handle");
  if (!h) throw py::error_already_set();
  PyObject* v = PyObject_GetAttrString(h, "value");
  Py_DECREF(h);
  if (!v) throw py::error_already_set();
  void* p = v == Py_None ? nullptr : PyLong_AsVoidPtr(v);
  Py_DECREF(v);
  return p;
}

// True when someone besides the trace holds the array (or its raw handle).
bool held_elsewhere(PyObject* arr) {
  if (Py_REFCNT(arr) > 1) return true;
  if (PyObject* fast = handle_obj_fast(arr)) return Py_REFCNT(fast) > 1;  // the array's slot holds one
  PyObject* h = PyObject_GetAttrString(arr, "handle");
  if (!h) {
    PyErr_Clear();
    return true;
  }
  bool shared = Py_REFCNT(h) > 2;  // the array's slot + our temporary
  Py_DECREF(h);
  return shared;
}

uint64_t pool_key(const AVal& a, bool np) { return hash_aval(a) ^ (np ? 0x4e50ULL : 0); }

// A new lazy array (an NDArray whose data the next flush writes); new reference.
PyObject* make_lazy(const AVal& a, bool np, NDArrayHandle* h_out) {
  auto& bucket = R->pool.at(pool_key(a, np));
  if (!bucket.empty()) {
    PyObject* obj = bucket.back();
    bucket.pop_back();
    *h_out = handle_of(obj);
    return obj;
  }
  NDArrayHandle h = new_lazy_array(a);
  py::object handle = R->void_p(reinterpret_cast<uintptr_t>(h));
  *h_out = h;
  auto* type = reinterpret_cast<PyTypeObject*>((np ? R->np_ndarray_cls : R->ndarray_cls).ptr());
  if (HL.offset >= 0 && HL.writable_offset >= 0) {
    // Filled in C, without running NDArray.__init__: no Python bytecode may run while a trace is
    // half-updated (another thread could take the GIL and flush it).
    PyObject* obj = type->tp_alloc(type, 0);
    if (!obj) throw py::error_already_set();
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + HL.offset) = handle.release().ptr();
    Py_INCREF(Py_True);
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + HL.writable_offset) = Py_True;
    return obj;
  }
  return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type))(handle).release().ptr();
}

}  // namespace minpy
