// Stand-ins for MXNet's generated `mx.nd` op functions (minpy_jit/op_functions.py installs them).
//
// MXNet builds each legacy op's Python function from the op's metadata (ndarray/register.py):
//   def op(a=None, b=None, attr1=_Null, ..., out=None, name=None, **kwargs):
//       ndargs = []; keys = list(kwargs.keys()); vals = list(kwargs.values())
//       if a is not None: assert isinstance(a, NDArrayBase), ...; ndargs.append(a)   # each array
//       if attr1 is not _Null: keys.append('attr1'); vals.append(attr1)               # each attribute
//       _verify_all_legacy_ndarrays("op", "op", ndargs, out)
//       return _imperative_invoke(handle, ndargs, keys, vals, out, False, False)
// or, for an op with a variable number of inputs,
//   def op(*data, **kwargs):   # arrays asserted; name and out popped from kwargs; the rest in order
// Inside jit() that Python is most of an update op's cost (1.5 us of 2.8 us). A stand-in builds
// the same ndargs, keys and vals (the caller's own objects, in the same order) and makes the
// same _imperative_invoke call, for the calls whose outcome it knows: every array argument and
// `out` exactly an NDArray (so the assert and the check pass), no `dtype` (MXNet converts it
// with numpy), no keyword the signature lacks, and the module globals the generated code reads
// still those it was made with. Anything else -- and everything while hooks_active() is false --
// calls MXNet's function itself, so its errors and edge cases are MXNet's.
#include "runtime.h"
#include "stand_ins.h"

#include <structmember.h>

namespace minpy {
namespace {

// What the generated code reads from its module's globals at each call, as they were when the
// stand-ins were made. The check may be MXNet's or frontend.py's builtin: both pass, with no
// side effect, for NDArray arguments.
struct Globals {
  PyObject* dict = nullptr;  // mxnet.ndarray.register's __dict__ (the generated code's globals)
  PyObject* array_base = nullptr;  // NDArrayBase
  PyObject* null = nullptr;        // _Null
  PyObject* checks[2] = {nullptr, nullptr};
  PyObject* core_invoke = nullptr;  // _core.invoke: called directly, not through Python
  PyObject* k_invoke = nullptr;     // interned global names
  PyObject* k_check = nullptr;
  PyObject* k_base = nullptr;
  PyObject* k_null = nullptr;
  PyObject* k_name = nullptr;
  PyObject* k_out = nullptr;
  PyObject* k_dtype = nullptr;
};
Globals G;

constexpr Py_ssize_t kMaxParams = 128;

struct OpFunction {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* real;     // MXNet's generated function
  PyObject* code;     // its __code__ and __defaults__ when the stand-in was made: should either
  PyObject* defaults; // be replaced, the function's calls are its own again
  PyObject* handle;   // the op handle, as the int the generated code passes
  PyObject* params;   // tuple: array parameters, attribute parameters, "out", "name" (fixed arity)
  Py_ssize_t n_arrays;
  Py_ssize_t dtype_at;  // index in params of `dtype`, or -1
  bool var_args;        // def op(*data, **kwargs)
  PyObject* weakrefs;
};

PyObject* call_real(OpFunction* f, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return PyObject_Vectorcall(f->real, args, nargsf, kwnames);
}

// `_imperative_invoke` from the generated code's globals, or null if the code around it is no
// longer what the stand-ins were made for.
PyObject* current_invoke() {
  PyObject* d = G.dict;
  PyObject* check = PyDict_GetItemWithError(d, G.k_check);
  if (!check || (check != G.checks[0] && check != G.checks[1])) return nullptr;
  if (PyDict_GetItemWithError(d, G.k_base) != G.array_base || PyDict_GetItemWithError(d, G.k_null) != G.null)
    return nullptr;
  return PyDict_GetItemWithError(d, G.k_invoke);  // borrowed
}

inline bool is_plain_ndarray(PyObject* a) {
  return Py_TYPE(a) == reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr());
}

// `out` as the check passes it: None, an NDArray, or a list/tuple of NDArrays.
bool plain_out(PyObject* out) {
  if (out == Py_None || is_plain_ndarray(out)) return true;
  if (!PyList_CheckExact(out) && !PyTuple_CheckExact(out)) return false;
  PyObject* fast = out;  // exact list or tuple: items read in place
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!is_plain_ndarray(PySequence_Fast_GET_ITEM(fast, i))) return false;
  return true;
}

Py_ssize_t param_index(OpFunction* f, PyObject* kw) {
  Py_ssize_t n = PyTuple_GET_SIZE(f->params);
  PyObject* const* names = &PyTuple_GET_ITEM(f->params, 0);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (names[i] == kw) return i;  // keyword names are interned as the code's names are
  for (Py_ssize_t i = 0; i < n; ++i) {
    int eq = PyUnicode_Compare(names[i], kw) == 0;
    if (PyErr_Occurred()) PyErr_Clear();
    if (eq) return i;
  }
  return -1;
}

struct Lists {  // ndargs, keys, vals
  PyObject* l[3] = {nullptr, nullptr, nullptr};
  ~Lists() {
    for (PyObject* o : l) Py_XDECREF(o);
  }
  bool make(Py_ssize_t n_arrays, Py_ssize_t n_attrs) {
    l[0] = PyList_New(n_arrays);
    l[1] = PyList_New(n_attrs);
    l[2] = PyList_New(n_attrs);
    return l[0] && l[1] && l[2];
  }
  void set_array(Py_ssize_t i, PyObject* a) {
    Py_INCREF(a);
    PyList_SET_ITEM(l[0], i, a);
  }
  void set_attr(Py_ssize_t j, PyObject* key, PyObject* value) {
    Py_INCREF(key);
    Py_INCREF(value);
    PyList_SET_ITEM(l[1], j, key);
    PyList_SET_ITEM(l[2], j, value);
  }
};

PyObject* invoke_with(PyObject* invoke, OpFunction* f, Lists& lists, PyObject* out) {
  PyObject* argv[7] = {f->handle, lists.l[0], lists.l[1], lists.l[2], out, Py_False, Py_False};
  if (invoke == G.core_invoke) return invoke_fast(nullptr, argv, 7);
  Py_INCREF(invoke);  // borrowed from the globals, which the call may change
  PyObject* r = PyObject_Vectorcall(invoke, argv, 7, nullptr);
  Py_DECREF(invoke);
  return r;
}

PyObject* call_fixed(OpFunction* f, PyObject* invoke, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nparams = PyTuple_GET_SIZE(f->params);
  const Py_ssize_t out_at = nparams - 2;
  if (nargs > nparams) return call_real(f, args, nargsf, kwnames);
  PyObject* bound[kMaxParams] = {};
  for (Py_ssize_t i = 0; i < nargs; ++i) bound[i] = args[i];
  if (kwnames) {
    for (Py_ssize_t k = 0, nk = PyTuple_GET_SIZE(kwnames); k < nk; ++k) {
      Py_ssize_t at = param_index(f, PyTuple_GET_ITEM(kwnames, k));
      if (at < 0 || bound[at]) return call_real(f, args, nargsf, kwnames);  // **kwargs, or a TypeError
      bound[at] = args[nargs + k];
    }
  }
  if (f->dtype_at >= 0 && bound[f->dtype_at] && bound[f->dtype_at] != G.null)
    return call_real(f, args, nargsf, kwnames);
  PyObject* out = bound[out_at] ? bound[out_at] : Py_None;
  Py_ssize_t n_in = 0, n_attrs = 0;
  for (Py_ssize_t i = 0; i < f->n_arrays; ++i) {
    PyObject* a = bound[i];
    if (!a || a == Py_None) continue;
    if (!is_plain_ndarray(a)) return call_real(f, args, nargsf, kwnames);
    ++n_in;
  }
  if (!plain_out(out)) return call_real(f, args, nargsf, kwnames);
  for (Py_ssize_t i = f->n_arrays; i < out_at; ++i)
    if (bound[i] && bound[i] != G.null) ++n_attrs;
  Lists lists;
  if (!lists.make(n_in, n_attrs)) return nullptr;
  Py_ssize_t j = 0;
  for (Py_ssize_t i = 0; i < f->n_arrays; ++i) {
    PyObject* a = bound[i];
    if (a && a != Py_None) lists.set_array(j++, a);
  }
  j = 0;
  for (Py_ssize_t i = f->n_arrays; i < out_at; ++i) {
    PyObject* v = bound[i];
    if (!v || v == G.null) continue;
    lists.set_attr(j++, PyTuple_GET_ITEM(f->params, i), v);
  }
  return invoke_with(invoke, f, lists, out);
}

PyObject* call_var_args(OpFunction* f, PyObject* invoke, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  for (Py_ssize_t i = 0; i < nargs; ++i)
    if (!is_plain_ndarray(args[i])) return call_real(f, args, nargsf, kwnames);
  PyObject* out = Py_None;
  Py_ssize_t n_attrs = 0;
  const Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; ++k) {
    PyObject* kw = PyTuple_GET_ITEM(kwnames, k);
    if (!PyUnicode_CheckExact(kw)) return call_real(f, args, nargsf, kwnames);
    if (PyUnicode_Compare(kw, G.k_dtype) == 0) return call_real(f, args, nargsf, kwnames);
    if (PyUnicode_Compare(kw, G.k_out) == 0)
      out = args[nargs + k];
    else if (PyUnicode_Compare(kw, G.k_name) != 0)
      ++n_attrs;
  }
  if (!plain_out(out)) return call_real(f, args, nargsf, kwnames);
  Lists lists;
  if (!lists.make(nargs, n_attrs)) return nullptr;
  for (Py_ssize_t i = 0; i < nargs; ++i) lists.set_array(i, args[i]);
  Py_ssize_t j = 0;
  for (Py_ssize_t k = 0; k < nk; ++k) {
    PyObject* kw = PyTuple_GET_ITEM(kwnames, k);
    if (PyUnicode_Compare(kw, G.k_out) == 0 || PyUnicode_Compare(kw, G.k_name) == 0) continue;
    lists.set_attr(j++, kw, args[nargs + k]);
  }
  return invoke_with(invoke, f, lists, out);
}

PyObject* op_function_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<OpFunction*>(self);
  if (!hooks_active() || PyFunction_GET_CODE(f->real) != f->code || PyFunction_GET_DEFAULTS(f->real) != f->defaults)
    return call_real(f, args, nargsf, kwnames);
  PyObject* invoke = current_invoke();
  if (!invoke) {
    if (PyErr_Occurred()) return nullptr;
    return call_real(f, args, nargsf, kwnames);
  }
  return f->var_args ? call_var_args(f, invoke, args, nargsf, kwnames) : call_fixed(f, invoke, args, nargsf, kwnames);
}

void op_function_dealloc(PyObject* self) {
  auto* f = reinterpret_cast<OpFunction*>(self);
  PyObject_GC_UnTrack(self);
  if (f->weakrefs) PyObject_ClearWeakRefs(self);
  Py_CLEAR(f->real);
  Py_CLEAR(f->code);
  Py_CLEAR(f->defaults);
  Py_CLEAR(f->handle);
  Py_CLEAR(f->params);
  Py_TYPE(self)->tp_free(self);
}

int op_function_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<OpFunction*>(self);
  Py_VISIT(f->real);
  Py_VISIT(f->code);
  Py_VISIT(f->defaults);
  Py_VISIT(f->params);
  return 0;
}

// The attributes it lacks are MXNet's function's (stand_ins.h).
PyObject* op_function_getattro(PyObject* self, PyObject* name) {
  return stand_in_getattr(self, reinterpret_cast<OpFunction*>(self)->real, name);
}

PyObject* op_function_repr(PyObject* self) {
  auto* f = reinterpret_cast<OpFunction*>(self);
  return PyUnicode_FromFormat("<minpy_jit stand-in for %R>", f->real);
}

PyTypeObject OpFunctionType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "minpy_jit._core.OpFunction";
  t.tp_basicsize = sizeof(OpFunction);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "A generated mx.nd op function's stand-in (op_functions.cc).";
  t.tp_vectorcall_offset = offsetof(OpFunction, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_dealloc = op_function_dealloc;
  t.tp_traverse = op_function_traverse;
  t.tp_descr_get = stand_in_descr_get;
  t.tp_getattro = op_function_getattro;
  t.tp_repr = op_function_repr;
  t.tp_weaklistoffset = offsetof(OpFunction, weakrefs);
  return t;
}();

}  // namespace

void register_op_function_api(py::module_& m) {
  if (PyType_Ready(&OpFunctionType) < 0) throw py::error_already_set();
  m.add_object("OpFunction", reinterpret_cast<PyObject*>(&OpFunctionType));
  m.def("set_op_function_globals",
        [](py::dict globals, py::object array_base, py::object null, py::object mxnet_check,
           py::object builtin_check, py::object core_invoke) {
          auto keep = [](PyObject*& slot, PyObject* v) {
            Py_XINCREF(v);
            Py_XDECREF(slot);
            slot = v;
          };
          keep(G.dict, globals.ptr());
          keep(G.array_base, array_base.ptr());
          keep(G.null, null.ptr());
          keep(G.checks[0], mxnet_check.ptr());
          keep(G.checks[1], builtin_check.ptr());
          keep(G.core_invoke, core_invoke.ptr());
          auto key = [](PyObject*& slot, const char* s) {
            if (!slot) slot = PyUnicode_InternFromString(s);
          };
          key(G.k_invoke, "_imperative_invoke");
          key(G.k_check, "_verify_all_legacy_ndarrays");
          key(G.k_base, "NDArrayBase");
          key(G.k_null, "_Null");
          key(G.k_name, "name");
          key(G.k_out, "out");
          key(G.k_dtype, "dtype");
        },
        "What the generated op functions read from their globals, as the stand-ins expect it.");
  m.def("op_function",
        [](py::object real, py::int_ handle, py::tuple params, Py_ssize_t n_arrays, Py_ssize_t dtype_at,
           bool var_args) {
          if (!G.dict) throw std::runtime_error("set_op_function_globals first");
          if (!PyFunction_Check(real.ptr())) throw std::invalid_argument("op_function: a Python function");
          if (!var_args && (PyTuple_GET_SIZE(params.ptr()) > kMaxParams || PyTuple_GET_SIZE(params.ptr()) < 2 + n_arrays))
            throw std::invalid_argument("op_function: parameter count");
          for (py::handle p : params)
            if (!PyUnicode_CheckExact(p.ptr())) throw std::invalid_argument("op_function: parameter names are str");
          auto* f = PyObject_GC_New(OpFunction, &OpFunctionType);
          if (!f) throw py::error_already_set();
          f->vectorcall = op_function_call;
          f->real = real.inc_ref().ptr();
          f->code = PyFunction_GET_CODE(real.ptr());
          f->defaults = PyFunction_GET_DEFAULTS(real.ptr());
          Py_XINCREF(f->code);
          Py_XINCREF(f->defaults);
          f->handle = handle.inc_ref().ptr();
          f->params = params.inc_ref().ptr();
          f->n_arrays = n_arrays;
          f->dtype_at = dtype_at;
          f->var_args = var_args;
          f->weakrefs = nullptr;
          PyObject_GC_Track(reinterpret_cast<PyObject*>(f));
          return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(f));
        },
        py::arg("real"), py::arg("handle"), py::arg("params"), py::arg("n_arrays"), py::arg("dtype_at"),
        py::arg("var_args"),
        "A stand-in for MXNet's generated op function `real` (params: array parameter names, then "
        "attribute names, then 'out', 'name'; dtype_at: index of 'dtype' or -1).");
}

}  // namespace minpy
