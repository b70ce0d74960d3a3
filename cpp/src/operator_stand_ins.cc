// Stand-ins for the arithmetic operators of NDArray and mx.np.ndarray (x * 1.01, x + y, 1 - x),
// made by minpy_jit/frontend.py and minpy_jit/np_arithmetic.py, which say which invoke MXNet's
// Python chain for each operator ends in and which module attributes that chain reads.
//
// Why in C: the Python versions of these stand-ins (one Python function per operator, checking
// that chain on each call) cost 0.4 us an op recorded under jit(), a third of W1's 1.1 us per
// op. Here the checks are dictionary look-ups and the invoke is a C call.
//
// A call takes the stand-in's path only for self exactly `self_type` and the other operand
// exactly a Python float or int (the scalar op: ndargs [self], keys ['scalar'], vals
// [float(other)]) or exactly `self_type` (the array op: [self, other], or [other, self] for a
// reflected operator; no attributes), with hooks_active() and every guard holding: a guard is
// (dict, key, allowed), satisfied when dict[key] is one of the objects in `allowed` (a list or
// tuple, read at each call: op_functions.py adds its stand-ins to the lists after the fact).
// An in-place operator (x += y) makes the same invoke with out=self, after MXNet's check that
// self.writable (where MXNet's method checks it). Every other call is MXNet's method, so its
// results and its errors are MXNet's.
#include "runtime.h"
#include "stand_ins.h"

namespace minpy {
namespace {

PyObject* k_scalar = nullptr;  // "scalar", interned

struct OperatorStandIn {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* real;           // MXNet's method
  PyObject* self_type;      // the exact class of self (and of an array operand)
  PyObject* scalar_handle;  // the scalar op's handle (an int), or None: no scalar path
  PyObject* scalar_guards;  // tuple of (dict, key, allowed)
  PyObject* array_handle;   // the array op's handle, or None: no array path
  PyObject* array_guards;
  bool reflected;           // the array op takes (other, self)
  bool is_np;               // the invoke's is_np_op argument
  bool in_place;            // x += y: the op writes self (out=self), and returns it
  bool check_writable;      // ... after MXNet's `if not self.writable: raise` (MXNet's method raises)
  PyObject* weakrefs;
};

// 1 when every guard holds, 0 when one does not, -1 with a Python error set.
int guards_hold(PyObject* guards) {
  for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(guards); i < n; ++i) {
    PyObject* g = PyTuple_GET_ITEM(guards, i);
    PyObject* value = PyDict_GetItemWithError(PyTuple_GET_ITEM(g, 0), PyTuple_GET_ITEM(g, 1));  // borrowed
    if (!value) return PyErr_Occurred() ? -1 : 0;
    PyObject* allowed = PyTuple_GET_ITEM(g, 2);
    PyObject* const* items = PySequence_Fast_ITEMS(allowed);  // an exact list or tuple (checked when made)
    bool found = false;
    for (Py_ssize_t k = 0, m = PySequence_Fast_GET_SIZE(allowed); k < m && !found; ++k) found = items[k] == value;
    if (!found) return 0;
  }
  return 1;
}

// The invoke MXNet's generated op function makes: _imperative_invoke(handle, ndargs, keys,
// vals, out, is_np, False), out being self for an in-place operator, else None. Steals nothing;
// `value` may be null (no attributes).
PyObject* invoke_op(OperatorStandIn* f, PyObject* handle, PyObject* a, PyObject* b, PyObject* value, PyObject* out) {
  PyObject* ndargs = PyList_New(b ? 2 : 1);
  PyObject* keys = PyList_New(value ? 1 : 0);
  PyObject* vals = PyList_New(value ? 1 : 0);
  PyObject* result = nullptr;
  if (ndargs && keys && vals) {
    Py_INCREF(a);
    PyList_SET_ITEM(ndargs, 0, a);
    if (b) {
      Py_INCREF(b);
      PyList_SET_ITEM(ndargs, 1, b);
    }
    if (value) {
      Py_INCREF(k_scalar);
      PyList_SET_ITEM(keys, 0, k_scalar);
      Py_INCREF(value);
      PyList_SET_ITEM(vals, 0, value);
    }
    PyObject* argv[7] = {handle, ndargs, keys, vals, out, f->is_np ? Py_True : Py_False, Py_False};
    result = invoke_fast(nullptr, argv, 7);
  }
  Py_XDECREF(ndargs);
  Py_XDECREF(keys);
  Py_XDECREF(vals);
  return result;
}

// Whether `self.writable` is true (MXNet's in-place operators check it first); -1 with an error.
int writable(PyObject* self) {
  static PyObject* name = PyUnicode_InternFromString("writable");
  PyObject* w = PyObject_GetAttr(self, name);
  if (!w) return -1;
  int truth = PyObject_IsTrue(w);
  Py_DECREF(w);
  return truth;
}

PyObject* operator_call(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<OperatorStandIn*>(self_obj);
  if (PyVectorcall_NARGS(nargsf) == 2 && !kwnames &&
      Py_TYPE(args[0]) == reinterpret_cast<PyTypeObject*>(f->self_type) && hooks_active()) {
    PyObject *self = args[0], *other = args[1];
    PyTypeObject* kind = Py_TYPE(other);
    const bool scalar = (kind == &PyFloat_Type || kind == &PyLong_Type) && f->scalar_handle != Py_None;
    const bool array = kind == reinterpret_cast<PyTypeObject*>(f->self_type) && f->array_handle != Py_None;
    int ok = scalar || array;
    if (ok && f->check_writable) ok = writable(self);  // not writable: MXNet's method raises
    if (ok > 0) ok = guards_hold(scalar ? f->scalar_guards : f->array_guards);
    if (ok < 0) return nullptr;
    if (ok) {
      PyObject* out = f->in_place ? self : Py_None;
      if (array)
        return f->reflected ? invoke_op(f, f->array_handle, other, self, nullptr, out)
                            : invoke_op(f, f->array_handle, self, other, nullptr, out);
      PyObject* value = PyNumber_Float(other);  // float(other), as MXNet's code: its OverflowError too
      if (!value) return nullptr;
      PyObject* r = invoke_op(f, f->scalar_handle, self, nullptr, value, out);
      Py_DECREF(value);
      return r;
    }
  }
  return PyObject_Vectorcall(f->real, args, nargsf, kwnames);
}

void operator_dealloc(PyObject* self) {
  auto* f = reinterpret_cast<OperatorStandIn*>(self);
  PyObject_GC_UnTrack(self);
  if (f->weakrefs) PyObject_ClearWeakRefs(self);
  Py_CLEAR(f->real);
  Py_CLEAR(f->self_type);
  Py_CLEAR(f->scalar_handle);
  Py_CLEAR(f->scalar_guards);
  Py_CLEAR(f->array_handle);
  Py_CLEAR(f->array_guards);
  Py_TYPE(self)->tp_free(self);
}

int operator_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<OperatorStandIn*>(self);
  Py_VISIT(f->real);
  Py_VISIT(f->self_type);
  Py_VISIT(f->scalar_guards);
  Py_VISIT(f->array_guards);
  return 0;
}

// __doc__, __name__, __qualname__, ... are MXNet's method's; __wrapped__ is that method.
PyObject* operator_getattro(PyObject* self, PyObject* name) {
  return stand_in_getattr(self, reinterpret_cast<OperatorStandIn*>(self)->real, name);
}

PyObject* operator_repr(PyObject* self) {
  return PyUnicode_FromFormat("<minpy_jit stand-in for %R>", reinterpret_cast<OperatorStandIn*>(self)->real);
}

PyTypeObject OperatorStandInType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "minpy_jit._core.OperatorStandIn";
  t.tp_basicsize = sizeof(OperatorStandIn);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  t.tp_doc = "An NDArray arithmetic operator's stand-in (operator_stand_ins.cc).";
  t.tp_vectorcall_offset = offsetof(OperatorStandIn, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = operator_dealloc;
  t.tp_traverse = operator_traverse;
  // x.__mul__ binds like a Python function's attribute; binary operators skip this: the type is a
  // method descriptor, so Python calls it with self first and makes no bound method.
  t.tp_descr_get = stand_in_descr_get;
  t.tp_getattro = operator_getattro;
  t.tp_repr = operator_repr;
  t.tp_weaklistoffset = offsetof(OperatorStandIn, weakrefs);
  return t;
}();

// Guards as given: a tuple of (dict, key, list-or-tuple) triples.
py::tuple checked_guards(py::sequence guards) {
  py::tuple out(py::len(guards));
  size_t i = 0;
  for (py::handle g : guards) {
    py::tuple t = py::reinterpret_borrow<py::object>(g);
    const char* what = "operator_stand_in: a guard is (dict, key, list or tuple of allowed objects)";
    if (t.size() != 3 || !PyDict_Check(t[0].ptr())) throw std::invalid_argument(what);
    if (!PyList_CheckExact(t[2].ptr()) && !PyTuple_CheckExact(t[2].ptr())) throw std::invalid_argument(what);
    out[i++] = t;
  }
  return out;
}

}  // namespace

void register_operator_stand_in_api(py::module_& m) {
  if (PyType_Ready(&OperatorStandInType) < 0) throw py::error_already_set();
  if (!k_scalar) k_scalar = PyUnicode_InternFromString("scalar");
  m.add_object("OperatorStandIn", reinterpret_cast<PyObject*>(&OperatorStandInType));
  m.def("operator_stand_in",
        [](py::object real, py::type self_type, bool is_np, py::object scalar_handle, py::sequence scalar_guards,
           py::object array_handle, py::sequence array_guards, bool reflected, bool in_place, bool check_writable) {
          auto* f = PyObject_GC_New(OperatorStandIn, &OperatorStandInType);
          if (!f) throw py::error_already_set();
          f->vectorcall = operator_call;
          f->real = real.inc_ref().ptr();
          f->self_type = self_type.inc_ref().ptr();
          f->scalar_handle = scalar_handle.inc_ref().ptr();
          f->array_handle = array_handle.inc_ref().ptr();
          f->scalar_guards = f->array_guards = nullptr;
          f->reflected = reflected;
          f->is_np = is_np;
          f->in_place = in_place;
          f->check_writable = check_writable;
          f->weakrefs = nullptr;
          auto stand_in = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(f));  // frees f on a throw
          f->scalar_guards = checked_guards(scalar_guards).release().ptr();
          f->array_guards = checked_guards(array_guards).release().ptr();
          PyObject_GC_Track(reinterpret_cast<PyObject*>(f));
          return stand_in;
        },
        py::arg("real"), py::arg("self_type"), py::arg("is_np"), py::arg("scalar_handle"), py::arg("scalar_guards"),
        py::arg("array_handle"), py::arg("array_guards"), py::arg("reflected"), py::arg("in_place") = false,
        py::arg("check_writable") = false,
        "A stand-in for the arithmetic operator `real` of `self_type` (operator_stand_ins.cc): the scalar "
        "and array ops' handles (None: no such path) and the guards each path checks.");
}

}  // namespace minpy
