// A kvstore's optimizer (MXNet's SGD or NAG, with or without momentum, or Adam) as a C
// function that MXNet calls per key instead of the Python Updater
// (minpy_jit/server_updates.py).
//
// A dist kvstore's server runs the optimizer once per key and per step from its main thread
// (kvstore_dist_server.h, ApplyUpdates): MXNet's Python Updater there is a ctypes callback,
// the optimizer's bookkeeping, and an update op pushed to the engine, which the server then
// waits for before it answers the workers. This function does the same update in the
// calling thread: it waits for the summed gradient and the stored weight as the engine
// would, and runs the kernel the recorded Trainer update runs (cpp/kernels/multi_update.cc,
// the one MXNet's multi_sgd_update / multi_sgd_mom_update / nag_mom_update / adam_update is
// matched against bit for bit), with the float32 rates MXNet would parse from the op's
// attributes.
//
// Only what it models: float32, dense arrays in CPU memory of one size. Any other call (a
// row_sparse push, float16, ...) goes to MXNet's Python Updater, which the kvstore keeps; a
// key is ours or the Updater's from its first call on (an optimizer state lives on one side).
// A key's learning rate and weight decay come from Python: the optimizer's own bookkeeping
// for one call (update count, lr_scheduler, multipliers, Adam's bias correction), asked at
// every call when they can change between steps, once per key when they cannot (SGD and NAG
// without a scheduler: a constant until the next set_optimizer, which replaces this function).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
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
  float lr = 0, wd = 0;                    // the constant rates (when not asked at every call)
  std::vector<std::vector<float>> states;  // what create_state would make: zeros (momentum; mean, var)
};

struct ServerUpdater {
  std::shared_ptr<void> plan;
  UpdatePlanRun run = nullptr;
  int stride = 2;           // arrays per weight: weight, gradient, then the states
  py::object rates;         // (key, device id) -> (lr, wd): the optimizer's own, as Python floats
  bool every_call = false;  // the rates may change from one call to the next: ask each time
  Text text = Text::kItem;  // how the op MXNet would run reads them (lrs= items, or lr= fields)
  IntUpdater fallback = nullptr;  // MXNet's Python Updater (its ctypes callback)
  std::unordered_map<int, KeyState> keys;  // only the thread MXNet calls updaters on
  int64_t updates = 0, python_updates = 0;
};

// Elements of a dense float32 array in CPU memory, or -1 (never throws: MXNet calls us from C).
int64_t dense_cpu_float32_size(NDArrayHandle h, int* dev_id) {
  try {
    if (stype_of(h) != 0) return -1;
    const AVal a = aval_of(h);
    *dev_id = a.dev_id;
    return a.dtype == 0 && in_cpu_memory(a.dev_type) ? a.size() : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// The optimizer's rates for one call of `key`, as MXNet's op would read them; false (the
// Python error printed) if Python failed.
bool ask_rates(ServerUpdater& u, int key, int dev_id, float* lr, float* wd) {
  PyGILState_STATE gil = PyGILState_Ensure();
  bool ok = false;
  try {
    py::tuple t = u.rates(key, dev_id).cast<py::tuple>();
    if (t.size() == 2) {
      *lr = mx_value(t[0].ptr(), u.text);
      *wd = mx_value(t[1].ptr(), u.text);
      ok = true;
    }
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Print();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minpy_jit server updater, key %d: %s\n", key, e.what());
  }
  PyGILState_Release(gil);
  return ok;
}

// A key's first call: ours if the arrays are (and, with constant rates, if Python gave them).
void first_call(ServerUpdater& u, int key, int64_t size, int dev_id, KeyState* k) {
  if (size < 0) return;
  if (!u.every_call && !ask_rates(u, key, dev_id, &k->lr, &k->wd)) return;  // then MXNet's Updater takes it
  k->ours = true;
  k->size = size;
  k->states.assign(static_cast<size_t>(u.stride - 2), std::vector<float>(static_cast<size_t>(size), 0.0f));
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
  int dev_id = 0, recv_dev = 0;
  const int64_t n = dense_cpu_float32_size(local, &dev_id);
  const bool arrays_fit = n >= 0 && dense_cpu_float32_size(recv, &recv_dev) == n;
  auto found = u.keys.find(key);
  if (found == u.keys.end()) {
    found = u.keys.emplace(key, KeyState{}).first;
    first_call(u, key, arrays_fit ? n : -1, dev_id, &found->second);
  }
  KeyState& k = found->second;
  if (!k.ours) {
    ++u.python_updates;
    u.fallback(key, recv, local, nullptr);  // it takes the handles, as MXNet hands them over
    return;
  }
  if (!arrays_fit || n != k.size) fail(key, "the arrays of this key changed kind or size between steps");
  float lr = k.lr, wd = k.wd;
  // The optimizer's count for this key steps here, before the update, as in its update().
  if (u.every_call && !ask_rates(u, key, dev_id, &lr, &wd)) fail(key, "the optimizer's rates failed (above)");
  // What the engine would wait for before running the op: the summed gradient written, and
  // no pending read or write of the stored weight.
  if (MXNDArrayWaitToRead(recv) != 0 || MXNDArrayWaitToWrite(local) != 0) fail(key, MXGetLastError());
  void* w = nullptr;
  void* g = nullptr;
  if (MXNDArrayGetData(local, &w) != 0 || MXNDArrayGetData(recv, &g) != 0 || !w || !g) fail(key, MXGetLastError());
  void* arrays[4] = {w, g, nullptr, nullptr};
  for (size_t i = 0; i < k.states.size(); ++i) arrays[2 + i] = k.states[i].data();
  u.run(u.plan.get(), 1, arrays, &k.size, &lr, &wd);
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
      [](uintptr_t kv_handle, uintptr_t fallback, uintptr_t str_fallback, const std::string& kernel, py::list attrs,
         int stride, py::object rates, bool every_call, bool list_items) -> py::object {
        if (stride < 2 || stride > 4) throw std::invalid_argument("set_c_updater: stride must be 2, 3 or 4");
        std::vector<std::string> names;  // the fields' keys point into these
        std::vector<std::string> values;
        for (py::handle item : attrs) {
          py::tuple kv = item.cast<py::tuple>();
          names.push_back(kv[0].cast<std::string>());
          values.push_back(py::isinstance<py::str>(kv[1]) ? kv[1].cast<std::string>() : field(kv[1]));
        }
        std::vector<std::pair<const char*, std::string>> fields;
        for (size_t i = 0; i < names.size(); ++i) fields.push_back({names[i].c_str(), values[i]});
        auto u = std::make_unique<ServerUpdater>();
        if (!update_plan(kernel, fields, &u->plan, &u->run)) return py::none();
        u->stride = stride;
        u->rates = std::move(rates);
        u->every_call = every_call;
        u->text = list_items ? Text::kItem : Text::kField;
        u->fallback = reinterpret_cast<IntUpdater>(fallback);
        ServerUpdater* raw = u.release();  // MXNet may call it until the process ends: never freed
        MX_CALL(MXKVStoreSetUpdaterEx(reinterpret_cast<KVStoreHandle>(kv_handle),
                                      reinterpret_cast<MXKVStoreUpdater*>(&server_update),
                                      reinterpret_cast<MXKVStoreStrUpdater*>(str_fallback), raw));
        return py::capsule(raw, "minpy_jit.ServerUpdater");
      },
      py::arg("kv_handle"), py::arg("fallback"), py::arg("str_fallback"), py::arg("kernel"), py::arg("attrs"),
      py::arg("stride"), py::arg("rates"), py::arg("every_call"), py::arg("list_items"),
      "Sets our multi-tensor `kernel` (its shared attributes: (name, Python float or str) pairs; `stride` "
      "arrays per weight: weight, gradient, states) as a C updater of kvstore `kv_handle`; `fallback` and "
      "`str_fallback` are the addresses of the Python Updater's ctypes callbacks (calls we do not model), "
      "`rates(key, device_id)` steps the optimizer for one call and returns its (lr, wd), asked at every call "
      "if `every_call`, else once per key; `list_items`: read as items of lrs=/wds= lists, else as lr=/wd= "
      "fields. Returns a capsule for c_updater_counts, or None (nothing changed) without the kernel library.");
  m.def(
      "c_updater_counts",
      [](py::capsule c) {
        const ServerUpdater* u = static_cast<const ServerUpdater*>(c.get_pointer());
        return py::make_tuple(u->updates, u->python_updates);
      },
      "(updates by the C updater, updates handed to the Python Updater) so far.");
}

}  // namespace minpy
