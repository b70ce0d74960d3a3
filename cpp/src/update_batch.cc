#include "update_batch.h"

#include <algorithm>

#include "launch.h"
#include "mxapi.h"
#include "runtime.h"
#include "update_launch.h"
#include "updates.h"

namespace minpy {

namespace {

constexpr int kMaxStride = 8;  // arrays per weight of any per-weight update op (rmspropalex: 5)

// A batch is launched once its weights hold this many elements (or it has segment_ops calls):
// a launch costs this thread a few microseconds, and what the kernel still has to do after the
// last call is on the step's critical path. W5 (200 weights of 4096 elements), ms an update:
// launches every 8 weights 0.271, 16 0.255, 24 0.269, 64 0.281, all at the end 0.412.
constexpr int64_t kBatchElements = int64_t{1} << 16;

// What one set of attributes of one update op means to our kernel, worked out once: a step's
// updates repeat the same few sets.
struct Reading {
  const OpInfo* op = nullptr;
  std::vector<Attr> attrs;  // compared whole on a hit: a hash collision must not change a rate
  bool ok = false;
  DirectUpdate kernel;      // kernel, shared attributes, stride, mp; lrs/wds: this call's one weight
  uint64_t shared_key = 0;  // kernel and shared attributes: calls with equal keys share a launch
};

// The first call with a set of attributes is asked of the recording path's own signature cache
// (infer.h: MXNet's attribute parser and shape and type inference, as the eager call runs them):
// an unknown key, a value MXNet cannot read or an op that may fail while it runs is left to the
// recording path, which raises or handles it there. `ins`: the call's arrays. May release the
// GIL, so it runs before the memo's entry is touched.
bool recordable(const OpInfo& op, const std::vector<Attr>& attrs, const AVal* ins, int n) {
  std::vector<const AVal*> avals;
  for (int j = 0; j < n; ++j) avals.push_back(&ins[j]);
  try {
    const OpSignature& sig = R->sigs.lookup(op, attrs, hash_attrs(attrs), avals, false);
    return sig.recordable && !sig.fails_while_running;
  } catch (const OpInputError&) {
    return false;
  }
}

const Reading& reading_of(const OpInfo& op, const UpdateOp& u, std::vector<Attr>&& attrs, const AVal* ins,
                          int n) {
  static Reading memo[16];  // the GIL is held: no other thread is in here
  const uint64_t key = mix64(hash_attrs(attrs) ^ op.hash);
  {
    Reading& r = memo[key & 15];
    if (r.op == &op && r.attrs == attrs) return r;
  }
  const bool ok = recordable(op, attrs, ins, n);
  Reading& r = memo[key & 15];
  r = Reading();
  r.op = &op;
  r.attrs = std::move(attrs);
  r.ok = ok && direct_update_of(u, r.attrs, 1, &r.kernel);
  if (r.ok) {
    std::string shared = r.kernel.kernel;
    for (const auto& a : r.kernel.attrs) shared.append("|").append(a.first).append("=").append(a.second);
    r.shared_key = hash_bytes(shared.data(), shared.size());
  }
  return r;
}

// Records the calls of a refused launch as if they had never been gathered: into the trace,
// as recorded ops (autograd was not recording when they were made).
void record_again(ThreadState& ts, const std::vector<py::object>& calls) {
  RecordingPaused paused;
  NumpyShapeState shapes(false);
  struct Replaying {
    int& n;
    ~Replaying() { --n; }
  } replaying{++ts.replaying_batch};
  for (const py::object& c : calls) record_call_tuple(ts, c.ptr());
}

}  // namespace

bool UpdateBatch::holds(NDArrayHandle h) const {
  const void* c = chunk_of(h);
  return c && storage.count(c) != 0;
}

bool gather_update(ThreadState& ts, OpInfo& op, PyObject* const* argv) {
  const UpdateOp& u = *op.update;
  const int stride = update_stride(u);
  if (!update_per_weight(u) || stride > kMaxStride || R->kernels.empty() || !R->cfg.fuse ||
      !R->cfg.direct_updates || ts.capturing || ts.replaying_batch)
    return false;
  UpdateBatch& b = ts.batch;
  if (!ts.trace.empty() || !ts.parked.empty() || R->pending != b.calls.size()) return false;
  if (!peek_works() || !chunk_identity_works() || !data_peek_works()) return false;
  PyObject *ndargs = argv[1], *keys = argv[2], *vals = argv[3], *out = argv[4];
  if (!PyList_CheckExact(ndargs) || PyList_GET_SIZE(ndargs) != stride || !PyList_CheckExact(keys) ||
      !PyList_CheckExact(vals) || PyList_GET_SIZE(keys) != PyList_GET_SIZE(vals) || argv[5] != Py_False ||
      !is_ndarray(out))
    return false;

  // The arrays: weight, gradient, states, as the kernel reads them in place.
  NDArrayHandle h[kMaxStride];
  AVal a[kMaxStride];
  const void* chunk[kMaxStride];
  for (int j = 0; j < stride; ++j) {
    PyObject* obj = PyList_GET_ITEM(ndargs, j);
    if (!is_ndarray(obj)) return false;
    h[j] = handle_of(obj);
    chunk[j] = h[j] ? chunk_of(h[j]) : nullptr;
    if (!chunk[j] || !peek_aval(h[j], &a[j])) return false;  // not dense, or not readable here
    for (int i = 0; i < j; ++i)
      if (chunk[i] == chunk[j]) return false;  // one storage twice: MXNet's op reads what it wrote
  }
  if (!update_arrays_fit_in_place(u, a, stride) || !same_array(handle_of(out), h[0])) return false;
  // (An array a failed op may have reached is refused when the batch is pushed: its calls are
  // then recorded, and the trace runs as failures.h has it.)

  std::vector<Attr> attrs;
  attrs.reserve(static_cast<size_t>(PyList_GET_SIZE(keys)));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); ++i) {
    PyObject* k = PyList_GET_ITEM(keys, i);
    if (!PyUnicode_Check(k)) return false;
    attrs.push_back({str_of(k), str_of(PyList_GET_ITEM(vals, i))});
  }
  const Reading& r = reading_of(op, u, std::move(attrs), a, stride);
  if (!r.ok) return false;

  // Joins the batch, or starts the next one: one plan and one CPU context per launch, and each
  // storage once (a second update of a weight must see the first's result). What the call adds
  // is taken from the memo now: pushing the batch may run Python (releasing its calls' arrays),
  // which could record more updates and reuse the memo's entry.
  const float lr = r.kernel.lrs[0], wd = r.kernel.wds[0];
  const bool fits = b.empty() || (b.shared_key == r.shared_key && b.update.dev_id == a[0].dev_id &&
                                  std::none_of(chunk, chunk + stride, [&](const void* c) { return b.storage.count(c); }));
  if (!fits || b.empty()) {
    UpdateBatch next;
    next.update = r.kernel;
    next.update.arrays.clear(), next.update.sizes.clear(), next.update.lrs.clear(), next.update.wds.clear();
    next.update.dev_id = a[0].dev_id;
    next.shared_key = r.shared_key;
    if (!b.empty()) {
      push_update_batch(ts, "updates of another kind");
      if (!ts.trace.empty() || !ts.batch.empty() || R->pending != 0)
        return false;  // refused and recorded (or more was recorded meanwhile): this call follows them
    }
    ts.batch = std::move(next);
  }
  b.update.arrays.insert(b.update.arrays.end(), h, h + stride);
  b.storage.insert(chunk, chunk + stride);
  b.update.sizes.push_back(static_cast<int64_t>(a[0].size()));
  b.elements += static_cast<int64_t>(a[0].size());
  b.update.lrs.push_back(lr);
  b.update.wds.push_back(wd);
  py::tuple call(7);
  for (int i = 0; i < 7; ++i) {
    Py_INCREF(argv[i]);
    PyTuple_SET_ITEM(call.ptr(), i, argv[i]);
  }
  b.calls.push_back(std::move(call));
  ++R->pending;
  ++R->stats.ops_recorded;
  const size_t every = R->cfg.segment_ops ? R->cfg.segment_ops : R->cfg.max_ops;
  if (b.calls.size() >= every || (R->cfg.segment_ops && b.elements >= kBatchElements)) push_update_batch(ts, "segment");
  return true;
}

void push_update_batch(ThreadState& ts, const std::string& cause) {
  if (ts.batch.empty()) return;
  drain_launches();  // after every launch queued before it, as a flush's run on this thread (may raise: the batch stays)
  UpdateBatch b = std::move(ts.batch);
  ts.batch = UpdateBatch();
  const size_t n = b.calls.size();
  R->pending -= std::min(R->pending, n);
  ++ts.flush_ordinal;
  if (launch_update_directly(ts, b.update, true)) {
    ++R->stats.flushes[cause];
    ++R->stats.update_flushes_direct;
    ++R->stats.fused_kernels;
    R->stats.fused_ops += n;
    FlushEvent ev;
    ev.cause = cause;
    ev.where = user_site();
    ev.nodes = static_cast<int>(n);
    ev.direct = true;
    if (R->cfg.log_flushes)
      log_line("minpy_jit: flush " + cause + " at " + ev.where + ": " + std::to_string(n) +
               " updates, launched directly as they were called");
    R->stats.add_event(std::move(ev));
    return;
  }
  R->stats.ops_recorded -= std::min<uint64_t>(R->stats.ops_recorded, n);
  record_again(ts, b.calls);
}

}  // namespace minpy
