// Python called back by MXNet, and the guard on MXNet's C API that tells when that happens.
//
// MXNet calls Python through ctypes from inside its own C functions: a kvstore's updater runs
// inside MXKVStorePush/PushPull on the calling thread, a CustomOp's forward and backward run on
// MXNet's worker threads (on the pushing thread under NaiveEngine). Whatever such a callback
// raises, ctypes prints and drops, and MXNet reads the callback's results as soon as it
// returns. So ops called from a callback are never recorded: they run eagerly at once, counted
// as fallbacks ("inside an MXNet C callback"). A thread is in a callback when it is inside a
// guarded C API call (the guard below counts them), inside its own flush (a CustomOp under
// NaiveEngine), or is a thread MXNet started (its outermost Python frame is MXNet's).
//
// A callback also never flushes other threads' traces wholesale: their recording threads may
// be between any two ops, and running their work from inside an MXNet callback nests a graph
// launch inside MXNet's own execution (seen to deadlock with CustomOps). It flushes only the
// traces that hold an array the call passes to MXNet, which is what correctness needs.
#include <algorithm>

#include "backward.h"
#include "failures.h"
#include "fragment.h"
#include "launch.h"
#include "mxapi.h"
#include "runtime.h"

namespace minpy {

namespace {

const std::string kInCallback = "inside an MXNet C callback";

// ctypes' object header: CDataObject starts with PyObject_HEAD, then the data pointer; b_size
// follows two fields later (char* b_ptr; int b_needsfree; PyObject* b_base; Py_ssize_t b_size).
struct CDataHead {
  PyObject_HEAD
  char* b_ptr;
  int b_needsfree;
  PyObject* b_base;
  Py_ssize_t b_size;
};

// The NDArray handles among a C API call's ctypes arguments: single handles (c_void_p) and
// arrays of them (c_handle_array). Out-parameters (byref) are new arrays: no trace holds them.
void handles_in(PyObject* const* argv, Py_ssize_t nargs, std::vector<NDArrayHandle>* out) {
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    PyObject* a = argv[i];
    if (Py_TYPE(a) == HL.void_p) {
      out->push_back(*reinterpret_cast<void**>(reinterpret_cast<CDataHead*>(a)->b_ptr));
      continue;
    }
    PyObject* elem = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(a)), "_type_");
    if (!elem) {
      PyErr_Clear();
      continue;
    }
    const bool handle_array = elem == reinterpret_cast<PyObject*>(HL.void_p) && PySequence_Check(a);
    Py_DECREF(elem);
    if (!handle_array) continue;
    auto* head = reinterpret_cast<CDataHead*>(a);
    void** items = reinterpret_cast<void**>(head->b_ptr);
    for (Py_ssize_t k = 0, n = head->b_size / static_cast<Py_ssize_t>(sizeof(void*)); k < n; ++k)
      if (items[k]) out->push_back(items[k]);
  }
}

// Runs the traces (any thread's) that hold one of these arrays, so MXNet sees their values; a
// trace being recorded or flushed right now is left alone, as flush_all leaves it.
void flush_holders(const std::vector<NDArrayHandle>& handles, const std::string& cause, bool eager) {
  if (!handles.empty() && R->pending) {
    std::vector<ThreadState*> states;
    {
      std::lock_guard<std::mutex> lock(R->threads_mu);
      states = R->threads;
    }
    std::string where;
    auto holds = [&](const Trace& t) {
      for (NDArrayHandle h : handles)
        if (t.slots.count(t.canonical(h))) return true;
      return false;
    };
    for (ThreadState* ts : states) {
      if (!ts->has_pending() || ts->busy || ts->flushing) continue;
      bool held = holds(ts->trace) || std::any_of(handles.begin(), handles.end(),
                                                  [&](NDArrayHandle h) { return ts->batch.holds(h); });
      for (const Trace& p : ts->parked) held = held || holds(p);
      if (!held) continue;
      if (where.empty()) where = user_site();
      flush_thread(*ts, cause + " (" + kInCallback + ")", where, eager);
    }
  }
  drain_launches();  // queued launches may write these arrays (a no-op on the launcher thread)
}

// An integer argument as ctypes passes it (a Python int or a c_int / c_uint).
bool int_arg(PyObject* a, long* out) {
  py::object v = py::reinterpret_borrow<py::object>(a);
  if (py::hasattr(v, "value")) v = v.attr("value");
  if (v.is_none()) return false;
  *out = PyLong_AsLong(v.ptr());
  if (*out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// The n handles of a ctypes array argument (c_handle_array, c_array(NDArrayHandle, ...)); None
// or c_void_p(0) for "none given" leaves `out` as n nulls. False if it is neither.
bool handle_array_arg(PyObject* a, long n, std::vector<NDArrayHandle>* out) {
  out->assign(static_cast<size_t>(n), nullptr);
  if (a == Py_None) return true;
  auto* head = reinterpret_cast<CDataHead*>(a);
  if (Py_TYPE(a) == HL.void_p) return *reinterpret_cast<void**>(head->b_ptr) == nullptr;
  PyObject* elem = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(a)), "_type_");
  if (!elem) {
    PyErr_Clear();
    return false;
  }
  const bool handle_array = elem == reinterpret_cast<PyObject*>(HL.void_p) && PySequence_Check(a);
  Py_DECREF(elem);
  if (!handle_array || head->b_size != n * static_cast<Py_ssize_t>(sizeof(void*))) return false;
  void** items = reinterpret_cast<void**>(head->b_ptr);
  for (long k = 0; k < n; ++k) (*out)[k] = items[k];
  return true;
}

// MXAutogradBackwardEx(num_output, heads, head_grads, num_variables, variables, retain_graph,
// create_graph, is_train, ...) as NDArray.backward and autograd.backward call it, on pending
// work: run with its forward as one graph (backward.h) if it can be. False: MXNet's backward
// must run (after the pending work ran under autograd), nothing changed.
bool backward_in_our_graph(ThreadState& ts, PyObject* const* argv, Py_ssize_t nargs) {
  long n = 0, num_vars = 0, retain = 0, train = 0;
  if (nargs != 10 || !int_arg(argv[0], &n) || n < 1 || !int_arg(argv[3], &num_vars) || num_vars != 0 ||
      !int_arg(argv[5], &retain) || !int_arg(argv[7], &train))
    return false;  // explicit variables (autograd.grad) or an unexpected call: MXNet's
  std::vector<NDArrayHandle> heads, head_grads;
  if (!handle_array_arg(argv[1], n, &heads) || !handle_array_arg(argv[2], n, &head_grads)) return false;
  for (NDArrayHandle h : heads)
    if (!h) return false;
  // The heads' context's trace (record.cc: one open trace per context) is the one to run with
  // its backward; the other contexts' stay pending.
  for (Trace& p : ts.parked)
    if (!ts.trace.slots.count(ts.trace.canonical(heads[0])) && p.slots.count(p.canonical(heads[0]))) std::swap(ts.trace, p);
  return backward_in_graph(ts, heads, head_grads, retain != 0, train != 0);
}

// MXInvokeCachedOpEx(op, num_inputs, inputs, ...): a hybridized block called under
// autograd.record() on a 2-d array that may be a oneDNN-layout concat result, whose BatchNorm's
// backward may fail (failures.h): the gradients of its inputs are watched.
void watch_cached_op_gradients(PyObject* const* argv, Py_ssize_t nargs) {
  bool rec = false;
  long n = 0;
  std::vector<NDArrayHandle> ins;
  if (nargs < 3 || MXAutogradIsRecording(&rec) != 0 || !rec || !int_arg(argv[1], &n) || n < 1 ||
      !handle_array_arg(argv[2], n, &ins))
    return;
  for (NDArrayHandle h : ins) {
    int ndim = 0;
    const int* dims = nullptr;
    if (may_be_onednn_concat_result(h) && MXNDArrayGetShapeEx(h, &ndim, &dims) == 0 && ndim == 2) {
      watch_gradients(ins);
      return;
    }
  }
}

// A guarded C API function: self is (function, cause, is_backward).
PyObject* guarded_call(PyObject* self, PyObject* const* argv, Py_ssize_t nargs) {
  PyObject* fn = PyTuple_GET_ITEM(self, 0);
  ThreadState& ts = me();
  const bool is_backward = PyTuple_GET_ITEM(self, 2) == Py_True;
  auto note_capture = [&] {  // a @function fragment being captured touches array data: no replay
    if (capture_open())
      note_data_access(py::reinterpret_borrow<py::str>(PyTuple_GET_ITEM(self, 1)).cast<std::string>().c_str());
  };
  try {
    // backward() touches none when it joins the capture's graph (backward.cc); else noted below
    if (!is_backward) note_capture();
    if (ts.flushing) wait_for_foreign_flush(ts);  // this call must see that flush's results
    raise_foreign_flush_error(ts);
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(self, 1), "hybridized block") == 0)
      watch_cached_op_gradients(argv, nargs);
    if (R->pending || launches_unsettled()) {
      std::string cause = py::reinterpret_borrow<py::str>(PyTuple_GET_ITEM(self, 1));
      bool eager = false;
      if (is_backward && nargs > 6) {
        // MXAutogradBackwardEx's create_graph (argument 6): CachedOp has no higher-order
        // gradients, so pending ops are replayed eagerly, each on the autograd tape.
        py::object flag = py::reinterpret_borrow<py::object>(argv[6]);
        if (py::hasattr(flag, "value")) flag = flag.attr("value");
        if (PyObject_IsTrue(flag.ptr()) == 1) {
          eager = true;
          cause = "backward (create_graph): eager replay";
        }
      }
      struct Heads {  // MXNet's backward's heads, known to the flush that runs its forward
        ThreadState& ts;
        ~Heads() { ts.backward_heads.clear(); }
      } heads{ts};
      if (is_backward && !in_callback(ts) && !ts.busy) {
        if (!eager && backward_in_our_graph(ts, argv, nargs))
          return PyLong_FromLong(0);  // the C API's success: the gradients are in their buffers
        ++R->stats.backward_by_mxnet;
        long n = 0, retain = 1, variables = 0;
        if (nargs == 10 && int_arg(argv[0], &n) && n > 0 && int_arg(argv[5], &retain) &&
            !handle_array_arg(argv[1], n, &ts.backward_heads))
          ts.backward_heads.clear();
        // autograd.grad(heads, variables) fails when a variable is unreachable from the heads,
        // and leaves the graph's history in place: the flush must not count on this backward
        // freeing it (fuzz seed 10523464: a held tanh result, returned through BlockGrad on
        // that count, gave a later backward a zero gradient). So it counts as retaining.
        if (nargs == 10 && int_arg(argv[3], &variables) && variables > 0) retain = 1;
        ts.backward_retains = retain != 0;
      }
      if (in_callback(ts)) {
        std::vector<NDArrayHandle> handles;
        handles_in(argv, nargs, &handles);
        flush_holders(handles, cause, eager);
      } else if (!ts.busy) {
        const bool read = cause == "asnumpy" || cause == "wait_to_read" || cause == "waitall";
        if (eager || !read || !read_keeps_recorded_trace(ts, cause)) flush_all(cause, eager);
      }
    }
    if (is_backward) note_capture();  // MXNet's own backward runs
  } catch (...) {
    set_python_error_from_current();
    return nullptr;
  }
  ++ts.in_mxnet;
  PyObject* result = PyObject_Vectorcall(fn, argv, static_cast<size_t>(nargs), nullptr);
  --ts.in_mxnet;
  if (is_backward) {
    try {
      probe_gradients_after_backward();  // failures.h: a gradient may have failed to compute
    } catch (...) {
      Py_XDECREF(result);
      set_python_error_from_current();
      return nullptr;
    }
  }
  return result;
}

PyMethodDef guarded_def = {"guarded", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(guarded_call)),
                           METH_FASTCALL, "An MXNet C API function that first flushes the pending work it may see."};

}  // namespace

bool foreign_thread(ThreadState& ts) {
  if (ts.foreign < 0) {
    // The outermost Python frame of a thread MXNet started is the callback MXNet called
    // (mxnet/operator.py for CustomOps); Python's own threads start in threading.py or __main__.
    bool mxnet_entry = false;
    PyFrameObject* frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    while (frame) {
      PyFrameObject* back = PyFrame_GetBack(frame);
      if (!back) {
        PyCodeObject* code = PyFrame_GetCode(frame);
        PyObject* file = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
        const char* f = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : nullptr;
        mxnet_entry = f && !R->mxnet_dir.empty() && std::string(f).rfind(R->mxnet_dir, 0) == 0;
        if (!file) PyErr_Clear();
        Py_XDECREF(file);
        Py_DECREF(code);
      }
      Py_DECREF(frame);
      frame = back;
    }
    ts.foreign = mxnet_entry ? 1 : 0;
  }
  return ts.foreign == 1;
}

bool in_callback(ThreadState& ts) { return ts.in_mxnet > 0 || ts.flushing || foreign_thread(ts); }

void before_mxnet_call(ThreadState& ts, const std::string& cause, const std::vector<NDArrayHandle>& handles) {
  if (in_callback(ts)) flush_holders(handles, cause, false);
  else if (!ts.busy) flush_all(cause);
}

py::object run_from_callback(ThreadState& ts, const py::args& args) {
  if (ts.depth > 0 || ts.foreign == 1) {  // a thread with no scope of its own never records: no fallback
    OpInfo& op = op_info(reinterpret_cast<AtomicSymbolCreator>(PyLong_AsVoidPtr(args[0].ptr())));
    ++R->stats.fallbacks[op.name];
    ++R->stats.fallback_reasons[op.name + ": " + kInCallback];
  }
  return R->orig_invoke(*args);  // its C API call is guarded: the traces holding its arrays run first
}

py::object make_guard(py::object fn, const std::string& cause, bool backward) {
  py::tuple self = py::make_tuple(fn, py::str(cause), py::bool_(backward));
  return py::reinterpret_steal<py::object>(PyCFunction_New(&guarded_def, self.ptr()));
}

// Setting the flag needs the array's autograd entry, which a pending lazy result only gets
// when its trace runs: pending work is flushed first, as the guarded ctypes path does. A
// variable (attach_grad, a Gluon parameter) has its entry already, and the flag is all the
// call touches: no flush, so that Trainer.step, which clears the flag of every parameter
// before its update, does not cut a step left open by backward() (backward.cc).
bool set_grad_state_of(NDArrayHandle h, bool state) {
  note_data_access(kGradStateSet);
  int req = 0;
  if ((R->pending || launches_unsettled()) &&
      !(autograd_peek_works() && autograd_role(h, &req) == AutogradRole::kVariable))
    before_mxnet_call(me(), "MXNDArraySetGradState", {h});
  return MXNDArraySetGradState(h, state) == 0;
}

}  // namespace minpy
