// A kvstore's optimizer (MXNet's SGD, with or without momentum) as a C function that MXNet
// calls per key instead of the Python Updater (minpy_jit/server_updates.py).
//
// A dist kvstore's server runs the optimizer once per key and per step from its main thread
// (kvstore_dist_server.h, ApplyUpdates): MXNet's Python Updater there is a ctypes callback,
// the optimizer's bookkeeping, and a multi_sgd_update op pushed to the engine, which the
// server then waits for before it answers the workers. This function does the same update
// in the calling thread: it waits for the summed gradient and the stored weight as the
// engine would, and runs the kernel the recorded Trainer update runs (cpp/kernels/
// multi_update.cc, the one MXNet's multi_sgd_update / multi_sgd_mom_update is matched
// against bit for bit), with the float32 rates MXNet would parse from the op's attributes.
//
// Only what it models: float32, dense arrays in CPU memory of one size. Any other call (a
// row_sparse push, float16, ...) goes to MXNet's Python Updater, which the kvstore keeps; a
// key is ours or the Updater's from its first call on (an optimizer state lives on one side).
// The learning rate and weight decay of a key are the optimizer's own `_get_lrs` /
// `_get_wds` for it, asked once: the Python side installs this only without an lr_scheduler,
// so they cannot change until the next set_optimizer (which replaces this function).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mxapi.h"
#include "mxparse.h"
#include "runtime.h"
#include "update_launch.h"

namespace minpy {

namespace {

using IntUpdater = void (*)(int key, NDArrayHandle recv, NDArrayHandle local, void* handle);
using StrUpdater = void (*)(const char* key, NDArrayHandle recv, NDArrayHandle local, void* handle);

struct KeyState {
  bool ours = false;
  int64_t size = 0;
  float lr = 0, wd = 0;
  std::vector<float> momentum;  // the optimizer state create_state would make: zeros
};

struct ServerUpdater {
  std::shared_ptr<void> plan;
  UpdatePlanRun run = nullptr;
  int stride = 2;        // arrays per weight: weight, gradient (, momentum)
  py::object rates;      // key -> (lr, wd): the optimizer's own, as Python floats
  IntUpdater fallback = nullptr;  // MXNet's Python Updater (its ctypes callback)
  std::unordered_map<int, KeyState> keys;  // only the thread MXNet calls updaters on
  int64_t updates = 0, python_updates = 0;
};

// Elements of a dense float32 array in CPU memory, or -1 (never throws: MXNet calls us from C).
int64_t dense_cpu_float32_size(NDArrayHandle h) {
  try {
    if (stype_of(h) != 0) return -1;
    const AVal a = aval_of(h);
    return a.dtype == 0 && in_cpu_memory(a.dev_type) ? a.size() : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// float(str(v)) as MXNet's Tuple<float> reads a list item (repr, strtof); GIL held.
bool tuple_item(PyObject* v, float* out) {
  PyObject* text = PyObject_Repr(v);
  if (!text) return false;
  const char* c = PyUnicode_AsUTF8(text);
  if (c) *out = mx_tuple_item(c);
  Py_DECREF(text);
  return c != nullptr;
}

// A key's first call: ours if the arrays are, with the optimizer's rates for it.
void first_call(ServerUpdater& u, int key, int64_t size, KeyState* k) {
  if (size < 0) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* r = PyObject_CallFunction(u.rates.ptr(), "i", key);
  float lr = 0, wd = 0;
  const bool ok = r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 && tuple_item(PyTuple_GET_ITEM(r, 0), &lr) &&
                  tuple_item(PyTuple_GET_ITEM(r, 1), &wd);
  if (!ok && PyErr_Occurred()) PyErr_Print();  // then MXNet's Updater takes the key, as without us
  Py_XDECREF(r);
  PyGILState_Release(gil);
  if (!ok) return;
  k->ours = true;
  k->size = size;
  k->lr = lr;
  k->wd = wd;
  if (u.stride == 3) k->momentum.assign(static_cast<size_t>(size), 0.0f);
}

[[noreturn]] void fail(int key, const std::string& why) {
  // MXNet would raise inside its updater callback, which ctypes reports and ignores: the
  // workers would pull weights that missed an update. Stopping the server makes the job fail.
  std::fprintf(stderr, "minpy_jit server updater, key %d: %s\n", key, why.c_str());
  std::fflush(stderr);
  std::abort();
}

void server_update(int key, NDArrayHandle recv, NDArrayHandle local, void* handle) {
  ServerUpdater& u = *static_cast<ServerUpdater*>(handle);
  const int64_t n = dense_cpu_float32_size(local);
  const bool arrays_fit = n >= 0 && dense_cpu_float32_size(recv) == n;
  auto found = u.keys.find(key);
  if (found == u.keys.end()) {
    found = u.keys.emplace(key, KeyState{}).first;
    first_call(u, key, arrays_fit ? n : -1, &found->second);
  }
  KeyState& k = found->second;
  if (!k.ours) {
    ++u.python_updates;
    u.fallback(key, recv, local, nullptr);  // it takes the handles, as MXNet hands them over
    return;
  }
  if (!arrays_fit || n != k.size) fail(key, "the arrays of this key changed kind or size between steps");
  // What the engine would wait for before running the op: the summed gradient written, and
  // no pending read or write of the stored weight.
  if (MXNDArrayWaitToRead(recv) != 0 || MXNDArrayWaitToWrite(local) != 0) fail(key, MXGetLastError());
  void* w = nullptr;
  void* g = nullptr;
  if (MXNDArrayGetData(local, &w) != 0 || MXNDArrayGetData(recv, &g) != 0 || !w || !g) fail(key, MXGetLastError());
  void* arrays[3] = {w, g, k.momentum.data()};
  u.run(u.plan.get(), 1, arrays, &k.size, &k.lr, &k.wd);
  ++u.updates;
  MXNDArrayFree(recv);
  MXNDArrayFree(local);
}

// Python floats as MXNet's op parses a float field of its parameters (str, dmlc's parser).
std::string field(py::handle v) { return exact_float(mx_float_field(py::str(v).cast<std::string>())); }

}  // namespace

void register_server_update_api(py::module_& m) {
  m.def(
      "set_c_updater",
      [](uintptr_t kv_handle, uintptr_t fallback, uintptr_t str_fallback, py::object rescale_grad,
         py::object clip_gradient, py::object momentum, py::object rates) -> py::object {
        const bool with_momentum = !momentum.is_none();
        std::vector<std::pair<const char*, std::string>> attrs = {
            {"rescale_grad", field(rescale_grad)},
            {"clip_gradient", clip_gradient.is_none() ? std::string("-1") : field(clip_gradient)}};
        if (with_momentum) attrs.push_back({"momentum", field(momentum)});
        else attrs.push_back({"formula", "multi_sgd_update"});
        auto u = std::make_unique<ServerUpdater>();
        if (!update_plan(with_momentum ? "_minpy_multi_sgd_mom_update" : "_minpy_multi_sgd_update", attrs, &u->plan,
                         &u->run))
          return py::none();
        u->stride = with_momentum ? 3 : 2;
        u->rates = std::move(rates);
        u->fallback = reinterpret_cast<IntUpdater>(fallback);
        ServerUpdater* raw = u.release();  // MXNet may call it until the process ends: never freed
        MX_CALL(MXKVStoreSetUpdaterEx(reinterpret_cast<KVStoreHandle>(kv_handle),
                                      reinterpret_cast<MXKVStoreUpdater*>(&server_update),
                                      reinterpret_cast<MXKVStoreStrUpdater*>(str_fallback), raw));
        return py::capsule(raw, "minpy_jit.ServerUpdater");
      },
      py::arg("kv_handle"), py::arg("fallback"), py::arg("str_fallback"), py::arg("rescale_grad"),
      py::arg("clip_gradient"), py::arg("momentum"), py::arg("rates"),
      "Sets MXNet's SGD (momentum None or a float) as a C updater of kvstore `kv_handle`; `fallback` and "
      "`str_fallback` are the addresses of the Python Updater's ctypes callbacks (calls we do not model), "
      "`rates(key)` returns the optimizer's (lr, wd) for a key. Returns a capsule for c_updater_counts, or "
      "None (nothing changed) without the kernel library.");
  m.def(
      "c_updater_counts",
      [](py::capsule c) {
        const ServerUpdater* u = static_cast<const ServerUpdater*>(c.get_pointer());
        return py::make_tuple(u->updates, u->python_updates);
      },
      "(updates by the C updater, updates handed to the Python Updater) so far.");
}

}  // namespace minpy
