// minpy_jit._core: the Python module. Scopes, statistics, configuration; the
// interceptor itself lives in record.cc and the flush in flush.cc.
#include <pybind11/stl.h>

#include <algorithm>

#include "exact_activation.h"
#include "exact_fc.h"
#include "fragment.h"
#include "launch.h"
#include "mxapi.h"
#include "mxparse.h"
#include "projections.h"
#include "runtime.h"

#include <structmember.h>  // after Python.h (via runtime.h)

using namespace minpy;
namespace py = pybind11;

namespace {

// The handle of an NDArray argument; null, with a Python error set, if it has none.
NDArrayHandle handle_arg(PyObject* arr) {
  try {
    NDArrayHandle h = handle_of(arr);
    if (!h) PyErr_SetString(PyExc_ValueError, "not an NDArray with a handle");
    return h;
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

// A failed C API call as ValueError (frontend.py then runs MXNet's own path for its error).
PyObject* c_api_failed() {
  PyErr_SetString(PyExc_ValueError, MXGetLastError());
  return nullptr;
}

// NDArray.context for frontend.py: a new mxnet.context.Context (`cls`, bound as the
// function's self) holding what Context.__init__ would set, made without running it (16 calls
// a W3 step through Gluon's blocks: 431 ns each in Python). A new object each call, as MXNet's
// property gives: `with ctx:` stores state in it. ValueError (frontend.py then runs MXNet's
// property) on a failed call or a device type Context does not name.
PyObject* context_of(PyObject* cls, PyObject* arr) {
  NDArrayHandle h = handle_arg(arr);
  if (!h) return nullptr;
  int dev_type = 0, dev_id = 0;
  if (MXNDArrayGetContext(h, &dev_type, &dev_id) != 0) return c_api_failed();
  if (dev_type != 1 && dev_type != 2 && dev_type != 3 && dev_type != 5) {
    PyErr_SetString(PyExc_ValueError, "device type unknown to Context");
    return nullptr;
  }
  static PyObject* const typeid_key = PyUnicode_InternFromString("device_typeid");
  static PyObject* const id_key = PyUnicode_InternFromString("device_id");
  static PyObject* const old_key = PyUnicode_InternFromString("_old_ctx");
  static PyObject* const no_args = PyTuple_New(0);
  PyTypeObject* type = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* ctx = type->tp_new(type, no_args, nullptr);
  if (!ctx) return nullptr;
  PyObject* t = PyLong_FromLong(dev_type);
  PyObject* i = PyLong_FromLong(dev_id);
  const bool ok = t && i && PyObject_SetAttr(ctx, typeid_key, t) == 0 && PyObject_SetAttr(ctx, id_key, i) == 0 &&
                  PyObject_SetAttr(ctx, old_key, Py_None) == 0;
  Py_XDECREF(t);
  Py_XDECREF(i);
  if (!ok) {
    Py_DECREF(ctx);
    return nullptr;
  }
  return ctx;
}

PyMethodDef context_of_def = {"context_of", context_of, METH_O, "A new Context of an NDArray's device."};

// NDArray.dtype / .stype / ._fresh_grad for frontend.py, likewise (Trainer.step reads them
// for every parameter). Metadata only: no flush.
template <int (*Query)(NDArrayHandle, int*)>
PyObject* int_of(PyObject*, PyObject* arr) {
  NDArrayHandle h = handle_arg(arr);
  if (!h) return nullptr;
  int v = 0;
  if (Query(h, &v) != 0) return c_api_failed();
  return PyLong_FromLong(v);
}

PyMethodDef dtype_id_def = {"dtype_id", int_of<MXNDArrayGetDType>, METH_O, "MXNet's dtype id of an NDArray."};
PyMethodDef stype_id_def = {"stype_id", int_of<MXNDArrayGetStorageType>, METH_O, "Storage type id of an NDArray."};
PyMethodDef grad_state_def = {"grad_state", int_of<MXNDArrayGetGradState>, METH_O,
                              "The fresh-gradient flag of an NDArray (NDArray._fresh_grad)."};

// NDArray._fresh_grad's setter (set_grad_state_of).
PyObject* set_grad_state(PyObject*, PyObject* const* argv, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "set_grad_state(array, state)");
    return nullptr;
  }
  NDArrayHandle h = handle_arg(argv[0]);
  const int state = h ? PyObject_IsTrue(argv[1]) : -1;
  if (state < 0) return nullptr;
  try {
    if (!set_grad_state_of(h, state)) return c_api_failed();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    set_python_error(e);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef set_grad_state_def = {"set_grad_state", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(set_grad_state)),
                                  METH_FASTCALL, "Sets NDArray._fresh_grad (after flushing pending work)."};

// MXNet's per-op argument check (`_verify_all_legacy_ndarrays`, `_verify_all_np_ndarrays`)
// without its per-call `import mxnet.numpy`: one isinstance per array, here. The builtin's
// `self` is MXNet's own check, called on a bad argument so that the error is MXNet's.
template <bool kNumpyOp>
PyObject* verify_arrays(PyObject* mxnet_check, PyObject* const* argv, Py_ssize_t nargs) {
  if (!hooks_active()) return PyObject_Vectorcall(mxnet_check, argv, nargs, nullptr);
  auto wrong_kind = [](PyObject* a) {
    if (a == Py_None) return false;
    const int is_np = PyObject_IsInstance(a, R->np_ndarray_cls.ptr());
    return is_np < 0 || (kNumpyOp ? !is_np : is_np);
  };
  auto any_wrong = [&](PyObject* seq) {  // a list or tuple of arrays
    PyObject* fast = PySequence_Fast(seq, "");
    if (!fast) return true;
    bool wrong = false;
    for (Py_ssize_t i = 0, n = PySequence_Fast_GET_SIZE(fast); i < n && !wrong; ++i)
      wrong = wrong_kind(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    return wrong;
  };
  bool wrong = nargs != 4 || any_wrong(argv[2]);  // (op_name, func_name, args, out)
  if (!wrong && argv[3] != Py_None)
    wrong = (PyList_Check(argv[3]) || PyTuple_Check(argv[3])) ? any_wrong(argv[3]) : wrong_kind(argv[3]);
  if (!wrong) Py_RETURN_NONE;
  PyErr_Clear();
  return PyObject_Vectorcall(mxnet_check, argv, nargs, nullptr);
}

PyMethodDef verify_legacy_def = {
    "_verify_all_legacy_ndarrays", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(verify_arrays<false>)),
    METH_FASTCALL, "MXNet's legacy-op argument check, without its per-call import."};
PyMethodDef verify_np_def = {
    "_verify_all_np_ndarrays", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(verify_arrays<true>)),
    METH_FASTCALL, "MXNet's numpy-op argument check, without its per-call import."};

PyMethodDef invoke_def = {"invoke", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(invoke_fast)),
                          METH_FASTCALL, "Replacement for mxnet's _imperative_invoke: records the op inside jit()."};


py::dict stats_dict() {
  Stats& s = R->stats;
  py::dict d;
  d["ops_recorded"] = s.ops_recorded;
  d["flushes"] = py::cast(s.flushes);
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["cache_evictions"] = s.cache_evictions;
  d["graphs_cached"] = R->cache.size();
  d["compile_ms"] = s.compile_ms;
  d["executions"] = s.executions;
  d["eager_replays"] = s.eager_replays;
  d["background_launches"] = s.background_launches;
  d["context_switches"] = s.context_switches;
  d["independent_parts"] = s.independent_parts;
  d["per_op_autograd"] = s.per_op_autograd;
  d["reads_kept_open"] = s.reads_kept_open;
  size_t pooled = 0;
  for (const auto& kv : R->pool.buckets) pooled += kv.second.arrays.size();
  d["pooled_arrays"] = pooled;  // recycled lazy arrays kept for reuse (no data)
  d["signatures"] = R->sigs.size();  // op signatures whose shapes and dtypes are known
  d["fallbacks"] = py::cast(s.fallbacks);
  d["fallback_reasons"] = py::cast(s.fallback_reasons);
  bool eager_site = false;
  for (auto& kv : R->sites) eager_site |= kv.second.eager;
  d["clean"] = s.fallbacks.empty() && s.eager_replays == 0 && !eager_site;  // nothing ran eagerly
  d["shape_inferences"] = R->sigs.inferences;
  d["fused_kernels"] = s.fused_kernels;
  d["backward_in_graph"] = s.backward_in_graph;
  d["backward_by_mxnet"] = s.backward_by_mxnet;
  d["backward_pending"] = s.backward_pending;
  d["fused_ops"] = s.fused_ops;
  d["trainer_updates"] = py::dict(py::arg("batched") = s.trainer_batched, py::arg("direct") = s.trainer_direct,
                                  py::arg("python") = py::cast(s.trainer_python));
  d["update_flushes_direct"] = s.update_flushes_direct;
  d["kernels_launched_directly"] = s.kernels_launched_directly;
  d["kvstore"] = py::dict(py::arg("calls") = py::cast(s.kvstore.calls),
                          py::arg("arrays_pushed") = s.kvstore.arrays_pushed,
                          py::arg("arrays_pulled") = s.kvstore.arrays_pulled,
                          py::arg("flushes") = s.kvstore.flushes);
  py::dict sites;
  for (auto& kv : R->sites)
    if (int n = kv.second.compiles()) sites[py::str(kv.first)] = py::dict(py::arg("compiles") = n,
                                                                py::arg("eager") = kv.second.eager);
  d["sites"] = sites;
  return d;
}

py::list events() {
  py::list out;
  for (const auto& e : R->stats.events) {
    py::dict d;
    d["cause"] = e.cause;
    d["where"] = e.where;
    d["ops"] = e.nodes;
    d["graph_nodes"] = e.graph_nodes;
    d["hit"] = e.hit;
    d["eager"] = e.eager;
    d["direct"] = e.direct;
    d["compile_ms"] = e.compile_ms;
    d["key"] = e.key;
    d["miss_reason"] = e.miss_reason;
    out.append(d);
  }
  return out;
}

py::list graphs() {
  py::list out;
  for (const auto& e : R->cache.entries()) {
    py::dict d;
    char k[20];
    snprintf(k, sizeof k, "%016llx", static_cast<unsigned long long>(e->key.a));
    d["key"] = std::string(k);
    d["ir"] = e->ir;
    d["json"] = e->json;
    d["nodes"] = e->num_nodes;
    d["batched_projections"] = e->batched_projections;
    d["fc_kernels"] = e->fc_kernels;
    {
      std::lock_guard<std::mutex> lock(e->run_mu);  // Executor::params is the runs' state
      d["param_inputs"] = e->params.op ? std::count(e->params.stable.begin(), e->params.stable.end(), 1) : 0;
    }
    d["runs"] = e->runs;
    d["compile_ms"] = e->compile_ms;
    d["site"] = e->site;
    py::list steps;
    for (const auto& st : e->steps) {
      py::dict sd;
      sd["value"] = st.value;
      sd["input"] = st.is_input;
      sd["op"] = st.op;
      py::list attrs;
      for (const auto& a : st.attrs) attrs.append(py::make_tuple(a.key, a.val));
      sd["attrs"] = attrs;
      sd["in"] = st.in;
      sd["nout"] = st.nout;
      sd["shape"] = py::tuple(py::cast(std::vector<int64_t>(st.aval.dims, st.aval.dims + st.aval.ndim)));
      sd["dtype"] = dtype_name(st.aval.dtype);
      steps.append(sd);
    }
    d["steps"] = steps;
    d["outputs"] = e->outputs;
    d["eager_only"] = e->op == nullptr;
    d["recording"] = e->recording;  // the autograd state it runs under (record(), train_mode)
    d["training"] = e->training;
    out.append(d);
  }
  return out;
}

// A FullyConnected call of float32 CPU data (rows, in) by a (out, in) weight, as the bit checks
// of projections.h and exact_fc.h take it: for the tests' bindings below.
struct FcProbe {
  AtomicSymbolCreator fc = nullptr;
  AVal data, weight;
  std::vector<Attr> attrs;
  FcProbe(int64_t rows, int64_t in, int64_t out, bool bias) {
    MX_CALL(NNGetOpHandle("FullyConnected", &fc));
    data.ndim = weight.ndim = 2;
    data.dims[0] = rows, data.dims[1] = in, weight.dims[0] = out, weight.dims[1] = in;
    attrs = {{"num_hidden", std::to_string(out)}, {"no_bias", bias ? "False" : "True"}};
  }
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "minpy_jit core: op recording, graph lowering, executor cache";
  R = new Runtime();  // lives for the process: MXNet handles must not be freed at interpreter teardown
  m.def("install", [](py::object orig, py::object cls, py::object np_cls, py::object void_p, py::object err,
                      std::vector<std::string> lib_dirs, std::string mxnet_dir) {
    R->orig_invoke = orig;
    R->ndarray_cls = cls;
    R->np_ndarray_cls = np_cls;
    R->void_p = void_p;
    R->error_cls = err;
    R->sources.set_library_dirs(lib_dirs);
    R->mxnet_dir = mxnet_dir;
    py::object base = cls.attr("__mro__")[py::int_(-2)];  // NDArrayBase (before object)
    py::object desc = base.attr("__dict__")["handle"];
    if (Py_TYPE(desc.ptr()) == &PyMemberDescr_Type) {
      HL.base = reinterpret_cast<PyTypeObject*>(base.ptr());
      HL.void_p = reinterpret_cast<PyTypeObject*>(void_p.ptr());
      HL.offset = reinterpret_cast<PyMemberDescrObject*>(desc.ptr())->d_member->offset;
      py::object wdesc = base.attr("__dict__")["writable"];
      if (Py_TYPE(wdesc.ptr()) == &PyMemberDescr_Type)
        HL.writable_offset = reinterpret_cast<PyMemberDescrObject*>(wdesc.ptr())->d_member->offset;
    }
  });
  m.def("set_log", [](py::object fn) { R->log_fn = fn; });
  m.def("set_cell_namer", [](py::object fn) { R->sources.set_namer(fn.ptr()); });
  m.add_object("invoke", py::reinterpret_steal<py::object>(PyCFunction_New(&invoke_def, nullptr)));
  m.def("context_getter", [](py::object context_cls) {  // context_of bound to mxnet.context.Context
    if (!PyType_Check(context_cls.ptr())) throw py::type_error("context_getter: a class");
    return py::reinterpret_steal<py::object>(PyCFunction_New(&context_of_def, context_cls.ptr()));
  });
  for (PyMethodDef* def : {&dtype_id_def, &stype_id_def, &grad_state_def, &set_grad_state_def})
    m.add_object(def->ml_name, py::reinterpret_steal<py::object>(PyCFunction_New(def, nullptr)));
  m.def("argument_check", [](py::object mxnet_check, bool numpy_op) {
    return py::reinterpret_steal<py::object>(
        PyCFunction_New(numpy_op ? &verify_np_def : &verify_legacy_def, mxnet_check.ptr()));
  }, "MXNet's per-op argument check `mxnet_check` as a builtin that only calls it on a bad argument.");
  m.def("guard", &make_guard, py::arg("fn"), py::arg("cause"), py::arg("backward") = false,
        "fn (an MXNet C API function) behind a guard: pending work it may see runs first; Python "
        "that MXNet calls back while fn runs is not recorded.");
  register_scope_api(m);
  register_error_api(m);
  register_trainer_api(m);
  register_server_update_api(m);
  register_op_function_api(m);
  register_operator_stand_in_api(m);
  m.def("depth", []() { return me().depth; });
  m.def("pending", []() { return R->pending + launches_unsettled(); });
  m.def("flush", [](const std::string& cause, bool eager) {
        // Python running *inside* our recording of an op on this thread (a garbage-collected
        // object's __del__ freeing a CachedOp, say) must not flush the half-recorded trace.
        // Our own flushes inside recording happen at safe points and do not come through here.
        if (me().busy) return;
        flush_all(cause, eager);
      }, py::arg("cause"),
        py::arg("eager") = false, "Run pending work; eager=True replays it op by op (tape nodes per op).");
  m.def("note_kvstore_call", [](const std::string& kind, uint64_t pushed, uint64_t pulled) {
        auto& k = R->stats.kvstore;
        ++k.calls[kind];
        k.arrays_pushed += pushed;
        k.arrays_pulled += pulled;
        if (R->pending) ++k.flushes;  // the guard around the call runs the pending work first
      }, "Counts a kvstore call: its kind and the arrays it pushes and pulls.");
  m.def("stats", &stats_dict);
  m.def("events", &events);
  m.def("graphs", &graphs);
  m.def("reset_stats", []() { R->stats = Stats(); });
  m.def("clear_cache", []() {
    R->cache.clear();
    for (auto& kv : R->sites) kv.second = Site();  // entries stay: threads point at them
    R->seen_positions.clear();
    R->backward_built.clear();
    R->reads_not_kept.clear();
    R->per_thread_graphs.clear();
  });
  m.def("configure", [](py::dict kw) {
    for (auto item : kw) {
      std::string k = py::str(item.first);
      py::handle v = item.second;
      if (k == "max_ops") R->cfg.max_ops = std::max<size_t>(1, v.cast<size_t>());
      else if (k == "segment_ops") R->cfg.segment_ops = v.cast<size_t>();
      else if (k == "async_launch") R->cfg.async_launch = v.cast<bool>();
      else if (k == "backward_in_graph") R->cfg.backward_in_graph = v.cast<bool>();
      else if (k == "whole_step") R->cfg.whole_step = v.cast<bool>();
      else if (k == "reads_keep_recorded") R->cfg.reads_keep_recorded = v.cast<bool>();
      else if (k == "direct_updates") R->cfg.direct_updates = v.cast<bool>();
      else if (k == "stable_params") R->cfg.stable_params = v.cast<bool>();
      else if (k == "direct_kernels") R->cfg.direct_kernels = v.cast<bool>();
      else if (k == "batch_projections" || k == "fc_kernels") {
        bool& flag = k == "fc_kernels" ? R->cfg.fc_kernels : R->cfg.batch_projections;
        if (v.cast<bool>() != flag) R->cache.clear();  // as for fuse: graphs built the other way
        flag = v.cast<bool>();
      }
      else if (k == "cache_size") R->cache.set_capacity(v.cast<size_t>());
      else if (k == "recompile_limit") R->cfg.recompile_limit = v.cast<int>();
      else if (k == "track_source") R->cfg.track_source = v.cast<bool>();
      else if (k == "log_recompiles") R->cfg.log_recompiles = v.cast<bool>();
      else if (k == "log_flushes") R->cfg.log_flushes = v.cast<bool>();
      else if (k == "pool_per_aval") R->cfg.pool_per_aval = v.cast<size_t>();
      else if (k == "fuse") {
        bool f = v.cast<bool>();
        if (f != R->cfg.fuse) R->cache.clear();  // cached graphs were built under the other setting
        R->cfg.fuse = f;
      }
      else throw py::key_error("unknown minpy_jit option: " + k);
    }
  });
  m.def("config", []() {
    py::dict d;
    d["max_ops"] = R->cfg.max_ops;
    d["segment_ops"] = R->cfg.segment_ops;
    d["async_launch"] = R->cfg.async_launch;
    d["backward_in_graph"] = R->cfg.backward_in_graph;
    d["whole_step"] = R->cfg.whole_step;
    d["reads_keep_recorded"] = R->cfg.reads_keep_recorded;
    d["direct_updates"] = R->cfg.direct_updates;
    d["stable_params"] = R->cfg.stable_params;
    d["direct_kernels"] = R->cfg.direct_kernels;
    d["batch_projections"] = R->cfg.batch_projections;
    d["fc_kernels"] = R->cfg.fc_kernels;
    d["cache_size"] = R->cache.capacity();
    d["recompile_limit"] = R->cfg.recompile_limit;
    d["track_source"] = R->cfg.track_source;
    d["log_recompiles"] = R->cfg.log_recompiles;
    d["log_flushes"] = R->cfg.log_flushes;
    d["pool_per_aval"] = R->cfg.pool_per_aval;
    d["fuse"] = R->cfg.fuse;
    return d;
  });
  // The kernel library (cpp/kernels) was loaded into MXNet from this path: fusion may use it.
  m.def("set_kernels", [](const std::string& path) { R->kernels = path; });
  m.def("kernels", []() { return R->kernels; });
  m.def("fusing", []() { return R->cfg.fuse && !R->kernels.empty(); },
        "Whether recorded work may run in our kernels (fusion on and the library loaded).");
  // The float32 an MXNet op computes with for an attribute string, as an exact literal:
  // scalar_op=True for a double field (the scalar of _mul_scalar ...), else a float field.
  m.def("mx_float", [](const std::string& s, bool scalar_op) {
    return exact_float(scalar_op ? mx_scalar_as_float(s) : mx_float_field(s));
  });
  // A literal MXNet's attribute parser reads back as exactly v ("" if none): as a double field
  // (double_field=True: the scalar of _mul_scalar ...) or as a float field (v rounded to float).
  m.def("mx_literal", [](double v, bool double_field) {
    return double_field ? mx_literal(v) : mx_literal(static_cast<float>(v));
  });
  // How flushes detect in-place writes through views: "storage chunk" (no waiting) or
  // "data address" (waits for pending writers; used if the chunk check fails on a build).
  m.def("peek_works", &peek_works);  // array metadata read without C API calls (peek.cc)
  m.def("autograd_peek_works", &autograd_peek_works);  // autograd membership read likewise
  register_fragment_api(m);
  // Whether FullyConnected (float32, cpu) computes `blocks` blocks of `rows` rows by a (out, in)
  // weight bit for bit as one call (projections.h): for tests and benchmarks.
  m.def("row_blocks_exact", [](int64_t rows, int64_t in, int64_t out, int blocks, bool bias, bool training) {
    const FcProbe p(rows, in, out, bias);
    return row_blocks_exact(p.fc, p.attrs, p.data, p.weight, bias, blocks, training);
  }, py::arg("rows"), py::arg("in"), py::arg("out"), py::arg("blocks"), py::arg("bias"), py::arg("training") = false);
  // The reduction blocks (forward, data and weight gradients) with which _minpy_fc gives
  // FullyConnected's bits on data (rows, in) by a (out, in) weight (exact_fc.h), or None.
  m.def("fc_kernel_blocks", [](int64_t rows, int64_t in, int64_t out, bool bias, bool training,
                               bool backward) -> py::object {
    const FcProbe p(rows, in, out, bias);
    FcBlocks b;
    if (!fc_kernel_blocks(p.fc, p.attrs, p.data, p.weight, bias, training, backward, &b)) return py::none();
    return py::make_tuple(b.kc, b.kc_data, b.kc_weight);
  }, py::arg("rows"), py::arg("in"), py::arg("out"), py::arg("bias"), py::arg("training") = false,
     py::arg("backward") = true);
  // Whether _minpy_fc's relu epilogue (act=relu) gives Activation(act_type='relu')'s bits on a
  // float32 (rows, cols) array, forward and backward (exact_fc.h).
  m.def("relu_epilogue_exact", [](int64_t rows, int64_t cols, bool training) {
    AVal out;
    out.ndim = 2;
    out.dims[0] = rows, out.dims[1] = cols;
    return relu_epilogue_exact(out, training);
  }, py::arg("rows"), py::arg("cols"), py::arg("training") = false);
  m.attr("fc_kernel_min_multiply_adds") = fc_min_multiply_adds();
  m.def("fc_kernel_serial_multiply_adds", &fc_serial_multiply_adds);
  m.def("activation_instr", [](const std::string& act, const std::vector<int64_t>& shape, bool training) -> py::object {
    AVal a;
    a.ndim = static_cast<int>(std::min<size_t>(shape.size(), AVal::kMaxDim));
    for (int i = 0; i < a.ndim; ++i) a.dims[i] = shape[i];
    const char* instr = activation_instr(act, a, training);
    return instr ? py::object(py::str(instr)) : py::object(py::none());
  }, py::arg("act"), py::arg("shape"), py::arg("training") = false,
        "The fused instruction standing for Activation(act_type=act) on float32 CPU data of `shape`, or None "
        "(exact_activation.h: sigmoid and tanh only where the check against MXNet's operator passed).");
  m.def("alias_check", []() { return chunk_identity_works() ? "storage chunk" : "data address"; });
}
