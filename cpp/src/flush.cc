// The flush: which values are live, the cache lookup (or compile, with the
// reason for the miss), execution under the recorded autograd state, release.
#include <algorithm>
#include <cstdio>
#include <chrono>
#include <functional>

#include "explain.h"
#include "failures.h"
#include "launch.h"
#include "mxapi.h"
#include "parts.h"
#include "runtime.h"
#include "updates.h"

namespace minpy {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string user_site() { return R->sources.str(R->sources.capture()); }

void log_line(const std::string& s) {
  if (R->log_fn) R->log_fn(s);
}

struct FlushingGuard {
  ThreadState& ts;
  explicit FlushingGuard(ThreadState& t) : ts(t) {
    ts.flushing = true;
    ts.flusher = std::this_thread::get_id();
  }
  ~FlushingGuard() { ts.flushing = false; }
};

// Drops the trace's references; dead lazy arrays go back to the pool. The trace is
// emptied before any reference is released, since a release may run Python code
// (NDArray.__del__) and let other threads in.
void release_trace(Trace& t) {
  std::vector<PyObject*> drop;
  for (auto& kv : t.slots) {
    PyObject* obj = static_cast<PyObject*>(kv.second.owner);
    if (!obj) continue;
    const Slot& s = kv.second;
    // Only never-written arrays are recycled: a written one (an effectful op's dead output)
    // may carry autograd history, and MXNet refuses to write into such an array again.
    if (s.ours && !s.written && !held_elsewhere(obj)) {
      bool np = Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(R->ndarray_cls.ptr());
      auto& bucket = R->pool.at(pool_key(t.values[s.value].aval, np));
      if (bucket.size() < R->cfg.pool_per_aval) {
        bucket.push_back(obj);
        continue;
      }
    }
    drop.push_back(obj);
  }
  for (auto h : t.owned) MXNDArrayFree(h);
  R->pending -= std::min(R->pending, t.nodes.size());
  t.clear();
  R->pool.tick(&drop);
  for (PyObject* obj : drop) Py_DECREF(obj);
}

// The same question by data addresses, for a build where chunk identity fails its check.
// Reading a data pointer allocates a delay-allocated array, and so does the engine op that
// first writes it: done concurrently, that races. So pending writers finish first
// (without the GIL: a pending Custom op may need it).
template <class Array>
bool overlapping_memory(std::vector<Array>& arrays) {
  {
    py::gil_scoped_release nogil;
    for (const auto& a : arrays) MXNDArrayWaitToRead(a.h);
  }
  struct Range {
    uintptr_t lo, hi;
    NDArrayHandle h;
    bool written;
  };
  std::vector<Range> ranges;
  for (const auto& a : arrays) {
    void* p = nullptr;
    MXNDArrayGetData(a.h, &p);
    auto lo = reinterpret_cast<uintptr_t>(p);
    if (lo) ranges.push_back({lo, lo + static_cast<uintptr_t>(a.aval->size()) * dtype_bytes(a.aval->dtype), a.h, a.written});
  }
  // Sweep in address order, keeping the ranges still open at each start.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<const Range*> active;
  for (const Range& r : ranges) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Range* a) { return a->hi <= r.lo; }),
                 active.end());
    for (const Range* a : active)
      if (a->h != r.h && (a->written || r.written)) return true;
    active.push_back(&r);
  }
  return false;
}

// An optimizer update handed one array twice (nag_mom_update(w, w, m, out=w): the
// gradient is the weight). MXNet's kernels read some inputs again after writing their
// result, so eagerly the repeated array is seen both before and after the write; a graph
// or our kernel reads one value. Such a trace runs eagerly, counted. The op's name, or "".
std::string update_with_repeated_input(const Trace& t) {
  for (const Node& n : t.nodes) {
    const UpdateOp* u = update_op(n.op->name);
    if (!u) continue;
    // weights, gradients and states only: learning-rate inputs are shared on purpose
    const size_t arrays = std::min(n.in.size(), update_weights(*u, n) * static_cast<size_t>(update_stride(*u)));
    std::vector<int> sorted(n.in.begin(), n.in.begin() + arrays);  // a whole step's update has ~1000
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return n.op->name;
  }
  return "";
}

// True when an array the trace writes in place shares storage with another array
// it uses (a view: x.reshape, x[1:3]). One graph cannot order such a write against
// reads through the other handle; eager replay can (MXNet orders them by memory).
// Views of one chunk count as sharing even when their ranges are disjoint: that
// costs an eager replay in a rare case, never a wrong value.
// Whether an output writes into an array that existed before the trace (an out= target, an
// input written in place), not only into a new result of ours.
bool writes_existing_array(const Trace& t, const OutputSpec& o) {
  if (o.target_ext >= 0) return true;
  auto it = t.slots.find(o.handle);
  return it == t.slots.end() || !it->second.ours;
}

bool writes_alias_inputs(const Trace& t, const std::vector<OutputSpec>& outputs) {
  struct Array {
    NDArrayHandle h;
    const AVal* aval;
    bool written;
  };
  std::vector<Array> arrays;
  for (const auto& o : outputs)
    if (writes_existing_array(t, o)) arrays.push_back({o.handle, &t.values[o.value].aval, true});
  if (arrays.empty()) return false;
  for (const auto& v : t.values)
    if (v.node < 0 && v.ext) arrays.push_back({v.ext, &v.aval, false});
  if (!chunk_identity_works()) {
    drain_launches();  // the address check reads data pointers: every earlier launch first
    return overlapping_memory(arrays);
  }
  // Group by storage chunk in an open-addressing table (a flush checks hundreds of arrays;
  // sorting them cost more than the rest of the check).
  struct Group {
    const void* chunk;
    NDArrayHandle first;
    bool written, distinct;
  };
  static thread_local std::vector<Group> table;
  size_t cap = 16;
  while (cap < 2 * arrays.size()) cap <<= 1;
  table.assign(cap, Group{nullptr, nullptr, false, false});
  for (const Array& a : arrays) {
    const void* c = chunk_of(a.h);
    if (!c) continue;
    size_t i = static_cast<size_t>(mix64(reinterpret_cast<uintptr_t>(c))) & (cap - 1);
    while (table[i].chunk && table[i].chunk != c) i = (i + 1) & (cap - 1);
    Group& g = table[i];
    if (!g.chunk) g = Group{c, a.h, false, false};
    g.written |= a.written;
    g.distinct |= a.h != g.first;
    if (g.written && g.distinct) return true;
  }
  return false;
}

// Graph outputs, sorted by value: live lazy arrays, arrays written in place, and one
// output of every effectful op (random draws, in-place state updates) and of every op that
// can fail (its error is seen by nd.waitall), which must run even when its results are
// dead -- written into its dead array, or a temporary.
std::vector<OutputSpec> collect_outputs(const Trace& t, std::vector<NDArrayHandle>* temps) {
  std::vector<OutputSpec> outputs;
  std::vector<char> is_output(t.values.size(), 0);
  std::vector<NDArrayHandle> dead_handle_of_value(t.values.size(), nullptr);
  for (const auto& kv : t.slots) {
    const Slot& s = kv.second;
    if (s.ours) {
      if (s.handed_on || held_elsewhere(static_cast<PyObject*>(s.owner))) {
        outputs.push_back({s.value, -1, kv.first});
        is_output[s.value] = 1;
      } else {
        dead_handle_of_value[s.value] = kv.first;
      }
    } else if (s.value != s.ext_value) {
      outputs.push_back({s.value, s.ext_value, kv.first});
      is_output[s.value] = 1;
    }
  }
  for (const Node& n : t.nodes) {
    if ((!n.op->effectful && !n.op->can_fail && n.mutated.empty()) || n.out.empty()) continue;
    if (std::any_of(n.out.begin(), n.out.end(), [&](int v) { return is_output[v] != 0; })) continue;
    int v = n.out[0];
    NDArrayHandle h = dead_handle_of_value[v];
    if (!h) {
      h = new_lazy_array(t.values[v].aval);
      temps->push_back(h);
    }
    outputs.push_back({v, -1, h});
    is_output[v] = 1;
  }
  // Under autograd, eager MXNet records every op, used or not, and an array an op reads then
  // joins the autograd graph: a later write into it under record() raises, and a backward
  // clears it. A recorded op whose results nothing uses, reading an array that is not in the
  // graph yet, still runs, so that the array joins it as eagerly (fuzz seeds 312572, 403550).
  if (t.runs_recorded()) {
    std::vector<char> needed(is_output);  // values read by what runs, found from the end
    for (size_t i = t.nodes.size(); i-- > 0;) {
      const Node& n = t.nodes[i];
      bool runs = false;
      for (int v : n.out) runs = runs || needed[v];
      if (!runs && !n.out.empty()) {
        for (int v : n.in)
          runs = runs || (t.values[v].node < 0 && t.values[v].ext && !in_autograd_graph(t.values[v].ext));
        if (runs) {
          const int v = n.out[0];
          NDArrayHandle h = dead_handle_of_value[v];
          if (!h) {
            h = new_lazy_array(t.values[v].aval);
            temps->push_back(h);
          }
          outputs.push_back({v, -1, h});
          is_output[v] = 1;
        }
      }
      if (runs)
        for (int v : n.in) needed[v] = 1;
    }
  }
  std::sort(outputs.begin(), outputs.end(), [](const OutputSpec& a, const OutputSpec& b) { return a.value < b.value; });
  return outputs;
}

// A static graph run under record() is one autograd node. MXNet's backward of it runs the
// gradient pass over the graph from all its outputs, in their order, where eager's starts from
// the backward's heads, and gives each output a head gradient, where eager gives a held
// result none. Both change how the gradients of a value read several times are summed: the
// pass adds them in the order its depth-first walk meets the readers, and MXNet's ElementWiseSum
// of 3 or 4 arrays rounds otherwise than of 5 (an output's zero head gradient is one more term).
// So the heads of the backward about to run come first, in its order (each op of a static part
// leads to a head, parts_recorded_per_op: the walk meets every node as eager's does), and a held
// result that ops of the graph read is returned through BlockGrad, whose zero gradient the
// pass's sum drops (AggregateGradient). Random programs reading arrays three or more times
// differed from eager in the last bit in 8 of 300 before (tests/test_gradient_sums.py).
static void order_for_backward(const ThreadState& ts, const Trace& t, std::vector<OutputSpec>* outputs) {
  if (ts.backward_retains || ts.backward_heads.empty()) return;
  size_t front = 0;
  for (NDArrayHandle h : ts.backward_heads) {
    auto it = t.slots.find(h);
    if (it == t.slots.end()) continue;
    for (size_t k = front; k < outputs->size(); ++k)
      if ((*outputs)[k].value == it->second.value) {
        std::rotate(outputs->begin() + front, outputs->begin() + k, outputs->begin() + k + 1);
        ++front;
        break;
      }
  }
  std::vector<char> read(t.values.size(), 0);
  for (const Node& n : t.nodes)
    for (int v : n.in) read[v] = 1;
  for (size_t k = front; k < outputs->size(); ++k) {
    OutputSpec& o = (*outputs)[k];
    o.stop_gradient = o.target_ext < 0 && read[o.value] && t.values[o.value].node >= 0;
  }
}

// A miss: lower and build the graph, cache it (or an eager-only entry if MXNet refuses
// it), count it against the scope's recompile limit, and log it if asked.
std::shared_ptr<Executor> compile_and_cache(ThreadState& ts, const Trace& t, const std::vector<OutputSpec>& outputs,
                                            const Key128& key, const std::string& cause, const std::string& where,
                                            bool per_op_autograd, bool thread_copy, FlushEvent* ev) {
  const std::string site = ts.sites.empty() ? "" : ts.sites.back();
  ++R->stats.cache_misses;
  ev->miss_reason = thread_copy ? "this thread's own copy of a recorded graph another thread compiled (such graphs are per thread)"
                                : nearest_difference(t, outputs, R->cache.entries(), [](int loc) { return R->sources.str(loc); });
  LoweredGraph g;
  std::shared_ptr<Executor> exe;
  try {
    // Our fused units are one autograd node each, whose backward always runs: not where MXNet
    // must record the ops one by one.
    exe = compile(t, outputs, &R->nondiff, R->cfg.fuse && !R->kernels.empty() && !per_op_autograd, &g, per_op_autograd);
    exe->fused_kernels = g.kernel_calls;
    exe->fused_ops = g.kernel_ops;
  } catch (const MXError& e) {
    ev->miss_reason += std::string(" | compile failed, runs eagerly: ") + first_line(e.what());
    exe = std::make_shared<Executor>();
    exe->ir = "(runs eagerly: " + first_line(e.what()) + ")";
  }
  // Compiling runs without the GIL: threads that missed on one key at once each compiled it.
  // The first one's executor is the graph; a later copy is no new graph for the site's limit.
  if (std::shared_ptr<Executor> first = R->cache.find(key)) {
    if (first->op || !exe->op) {
      ev->miss_reason += " | compiled by another thread meanwhile";
      return first;
    }
    thread_copy = true;  // the other thread's compile failed, this one's worked: keep this one
  }
  exe->key = key;
  exe->site = site;
  exe->steps = steps_of(t);
  for (const auto& o : outputs) exe->outputs.emplace_back(o.value, o.target_ext);
  exe->recording = t.runs_recorded();
  exe->training = t.training;
  if (R->seen_positions.size() > (1u << 16)) R->seen_positions.clear();  // bounded: new shapes at every step
  for (const Node& n : t.nodes) R->seen_positions.insert(n.position);
  if (exe->op) {
    char title[160];
    snprintf(title, sizeof title, "graph %s  (%d nodes, %zu inputs, %zu outputs)  compiled at %s", ev->key.c_str(),
             exe->num_nodes, g.input_values.size(), outputs.size(), where.c_str());
    const std::string heading = std::string(title) + (per_op_autograd ? "  (each op its own autograd node)" : "");
    exe->ir = print_graph(t, g, outputs, [](int loc) { return R->sources.str(loc); }, heading);
  }
  R->stats.cache_evictions += R->cache.insert(key, exe);
  R->stats.compile_ms += exe->compile_ms;
  ev->compile_ms = exe->compile_ms;
  ev->graph_nodes = exe->num_nodes;
  if (ts.site && !thread_copy) {
    const int here = ++ts.site->compiles_at[ts.flush_ordinal];
    if (here > R->cfg.recompile_limit && !ts.site->eager) {
      ts.site->eager = true;
      log_line("minpy_jit: WARNING: the jit() scope at " + site + " compiled " + std::to_string(here) +
               " different graphs for its flush #" + std::to_string(ts.flush_ordinal) + " (limit " +
               std::to_string(R->cfg.recompile_limit) + "); it runs eagerly from now on. Last reason: " +
               ev->miss_reason);
    }
  }
  if (R->cfg.log_recompiles)
    log_line("minpy_jit: compile " + ev->key + " nodes=" + std::to_string(ev->graph_nodes) + " ms=" +
             std::to_string(ev->compile_ms) + " at " + where + " (" + cause + "): " + ev->miss_reason);
  return exe;
}

// Launches handed to MXNet by the launcher thread (launch.h) pass at least this many arrays:
// MXNet's launch costs ~0.5 us per array; below this the hand-off to another thread and the
// third busy thread on a 2-core machine cost as much as they save (W4's 13-array segments
// ran 10-15% slower in the background, W5's 193-array ones 5-10% faster).
constexpr size_t kAsyncMinArrays = 128;

// How many arrays a run of the executor hands MXNet (see launch_arrays).
size_t arrays_passed(const Executor& exe) {
  size_t n = exe.input_values.size() + exe.placeholders.size();
  for (char in_place : exe.output_in_place) n += !in_place;
  return n;
}

// Queues a cache hit for the launcher thread (launch.h). The job keeps the Python arrays it
// reads and writes alive, and takes over the arrays the trace made for this run only.
void launch_in_background(const std::shared_ptr<Executor>& exe, Trace& t, const std::vector<OutputSpec>& outputs,
                          std::vector<NDArrayHandle>* temps) {
  LaunchJob job;
  job.exe = exe;
  job.training = t.training;
  job.arrays = launch_arrays(*exe, t, outputs);
  for (const auto* arrays : {&job.arrays.ins, &job.arrays.outs})
    for (NDArrayHandle h : *arrays) {
      auto it = t.slots.find(h);
      if (it == t.slots.end() || !it->second.owner) continue;
      Py_INCREF(static_cast<PyObject*>(it->second.owner));
      job.refs.push_back(it->second.owner);
    }
  job.temps.swap(*temps);
  job.temps.insert(job.temps.end(), t.owned.begin(), t.owned.end());  // lifted scalars
  t.owned.clear();
  launch_async(std::move(job));
  ++exe->runs;
}

// Runs one trace (the thread's, or a part of it): outputs, cache lookup or compile, execution.
// `per_op_autograd`: a recorded trace runs as a graph whose ops MXNet records one by one, each
// its own autograd node (parts_recorded_per_op).
void run_trace(ThreadState& ts, Trace& t, const std::string& cause, const std::string& where, bool force_eager,
               bool per_op_autograd = false) {
  ++ts.flush_ordinal;
  NumpyShapeState shapes(t.np_shape);  // the trace's, whichever thread runs it and whatever it set since
  FlushEvent ev;
  ev.cause = cause;
  ev.where = where;
  ev.nodes = static_cast<int>(t.nodes.size());

  std::vector<NDArrayHandle> temps;
  std::vector<OutputSpec> outputs = collect_outputs(t, &temps);
  for (const auto& o : outputs) {
    auto it = t.slots.find(o.handle);
    if (it != t.slots.end()) it->second.written = true;
  }
  struct Cleanup {  // whatever happens below, the temporaries are freed
    std::vector<NDArrayHandle>& temps;
    ~Cleanup() {
      for (auto h : temps) MXNDArrayFree(h);
    }
  } cleanup{temps};
  if (outputs.empty()) {  // every result is dead and nothing has effects: nothing observable to run
    ev.miss_reason = "nothing live: the recorded ops were dropped";
    R->stats.add_event(std::move(ev));
    return;
  }

  per_op_autograd = per_op_autograd && t.runs_recorded();
  if (t.runs_recorded() && !per_op_autograd) order_for_backward(ts, t, &outputs);
  Key128 key = t.key;  // the sequence, plus which of its values are outputs and where they go
  for (const auto& o : outputs) {
    key.add(0x0A7ULL + static_cast<uint64_t>(o.value));
    key.add(static_cast<uint64_t>(o.target_ext + 2) + (o.stop_gradient ? 0x5709ULL << 32 : 0));
  }
  if (per_op_autograd) key.add(0x1D11AEDULL);
  // A static graph run under record() is one autograd node whose backward reads the buffers
  // of the CachedOp's last forward: another thread running that CachedOp in between would
  // hand this backward its own values. Such graphs are per thread (the trace's owner).
  const bool per_thread = t.runs_recorded() && !per_op_autograd;
  const uint64_t thread_free_key = key.a;
  if (per_thread) key.add(0x7E4D0000ULL + ts.id);
  char keybuf[20];
  snprintf(keybuf, sizeof keybuf, "%016llx", static_cast<unsigned long long>(key.a));
  ev.key = keybuf;

  bool eager = ts.site && ts.site->eager;
  if (force_eager) {
    eager = true;
    ev.miss_reason = "ran eagerly: " + cause;
  } else if (!eager && writes_alias_inputs(t, outputs)) {
    eager = true;
    ev.miss_reason = "an in-place write targets memory shared with another array (a view): ran eagerly";
    // counted under the op making the first such write, as every eager fallback is
    std::string op = "in-place write";
    for (const auto& o : outputs)
      if (writes_existing_array(t, o) && t.values[o.value].node >= 0) {
        op = t.nodes[t.values[o.value].node].op->name;
        break;
      }
    ++R->stats.fallbacks[op];
    ++R->stats.fallback_reasons[op + ": writes in place into memory shared with another array, a view (its trace ran eagerly)"];
  }
  if (!eager) {
    const std::string op = update_with_repeated_input(t);
    if (!op.empty()) {
      eager = true;
      ev.miss_reason = op + " given one array as two of its inputs: ran eagerly";
      ++R->stats.fallbacks[op];
      ++R->stats.fallback_reasons[op + ": one array as two of its inputs (its trace ran eagerly)"];
    }
  }
  if (!eager && t.runs_recorded() && !per_op_autograd) {  // one autograd node: a backward must not run more than eager's
    // The heads of the backward this flush runs for, if it reaches this part and frees it
    // (no retain_graph); else what a later backward can start from: any array the program
    // holds (not the dead results of effectful ops, kept only so that they run).
    std::vector<OutputSpec> heads;
    if (!ts.backward_retains)
      for (NDArrayHandle h : ts.backward_heads) {
        auto it = t.slots.find(h);
        if (it != t.slots.end() && t.values[it->second.value].node >= 0) heads.push_back({it->second.value, -1, h});
      }
    const bool known_heads = !heads.empty();
    if (!known_heads)
      for (const auto& o : outputs) {
        auto it = t.slots.find(o.handle);
        if (it != t.slots.end() && (!it->second.ours || held_elsewhere(static_cast<PyObject*>(it->second.owner))))
          heads.push_back(o);
      }
    std::string op;
    const std::string why = backward_could_do_more(t, heads, known_heads, &op);
    if (!why.empty()) {
      eager = true;
      ev.miss_reason = "ran op by op: " + op + " " + why;
      ++R->stats.fallbacks[op];
      ++R->stats.fallback_reasons[op + ": " + why + " (its trace ran op by op)"];
    }
  }
  if (!eager) {  // a failure while running must reach exactly the arrays it reaches eagerly
    std::string per_op = needs_per_op_run(t, outputs);
    if (!per_op.empty()) {
      eager = true;
      ev.miss_reason = "ran op by op: " + per_op;
    }
  }
  // A trace that is one optimizer update over arrays made before it (W5's per-weight update
  // ops): its graph would be one call of our kernel, and MXNet's launch of it costs about
  // what the kernel does (~0.5 us per array, W5: 192 arrays a segment). Launched directly, as
  // a Trainer's update is (update_launch.h): the same kernel on the same arrays, ordered by
  // MXNet's engine after every earlier operation on them.
  if (!eager && R->cfg.direct_updates && R->cfg.fuse) {
    DirectUpdate d;
    if (trace_as_direct_update(t, outputs, &d)) {
      drain_launches();  // after every launch queued before it, as a run on this thread
      if (launch_update_directly(ts, d, true)) {
        ++R->stats.update_flushes_direct;
        ++R->stats.fused_kernels;
        R->stats.fused_ops += t.nodes.size();
        ev.direct = true;
        if (R->cfg.log_flushes)
          log_line("minpy_jit: flush " + cause + " at " + where + ": " + std::to_string(ev.nodes) +
                   " ops, one update launched directly");
        R->stats.add_event(std::move(ev));
        return;
      }
    }
  }
  std::shared_ptr<Executor> exe;
  if (!eager) {
    exe = R->cache.find(key);
    if (exe && exe->op) {
      ++R->stats.cache_hits;
      ev.hit = true;
      ev.graph_nodes = exe->num_nodes;
    } else if (exe) {
      ev.miss_reason = "known to run eagerly: " + exe->ir;
    } else {
      if (R->per_thread_graphs.size() > (1u << 16)) R->per_thread_graphs.clear();  // bounded: new shapes at every step
      const bool thread_copy = per_thread && !R->per_thread_graphs.insert(thread_free_key).second;
      exe = compile_and_cache(ts, t, outputs, key, cause, where, per_op_autograd, thread_copy, &ev);
    }
  }
  ev.eager = true;
  const bool compiled = exe && exe->op;
  // Not under autograd or numpy shape semantics: both are per-thread modes in MXNet, and the
  // launcher thread only sets the training flag.
  const bool background = compiled && ev.hit && cause == "segment" && !t.recording && !t.np_shape &&
                          R->cfg.async_launch && arrays_passed(*exe) >= kAsyncMinArrays;
  if (background) {
    launch_in_background(exe, t, outputs, &temps);
    ++R->stats.background_launches;
    ev.eager = false;
  } else {
    drain_launches();  // a run on this thread comes after every launch queued before it
    if (compiled) {
      try {
        run(*exe, t, outputs);
        ev.eager = false;
      } catch (const MXError& e) {
        // replayed eagerly below: that gives MXNet's own error for the failing op, if any
        ev.miss_reason += std::string(ev.miss_reason.empty() ? "" : " | ") +
                          "MXNet refused to run the graph, replayed eagerly: " + first_line(e.what());
      }
    }
    if (ev.eager) {
      ++R->stats.eager_replays;
      run_eagerly(t, outputs);
      note_per_op_run(t, outputs);  // arrays a failure may have reached are probed
    }
  }
  if (!ev.eager) {
    ++R->stats.executions;
    R->stats.per_op_autograd += exe->per_op_autograd;
    R->stats.fused_kernels += exe->fused_kernels;
    R->stats.fused_ops += exe->fused_ops;
  }
  if (R->cfg.log_flushes)
    log_line("minpy_jit: flush " + cause + " at " + where + ": " + std::to_string(ev.nodes) + " ops, " +
             (ev.eager ? "eager" : ev.hit ? "cache hit " + ev.key : "compiled " + ev.key));
  R->stats.add_event(std::move(ev));
}

void wait_for_foreign_flush(ThreadState& ts) {
  // `flushing` is only written with the GIL held, and is read here with it held.
  while (ts.flushing && ts.flusher != std::this_thread::get_id()) {
    py::gil_scoped_release nogil;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Marks (in `per_op`) the parts whose gradients would be summed with gradients from outside the
// part. Eager's backward sums the contributions to an array in the order its gradient pass
// visits the readers over the whole autograd graph (AggregateGradient: ElementWiseSum, or a
// chain of _grad_add, in that order). A static part is one node of that graph: its backward
// sums its own readers' contributions first, and the order of its inputs reorders the visits of
// the nodes behind it. So a part reached by the backward stays one graph only when the pass
// meets nothing outside it: no input with recorded history (from an earlier flush or another
// part of this one), no array read both by it and by another part, and no head of the
// backward made before this flush (parts_recorded_per_op: its graph may read the same
// variables; fuzz seed 9741206, backward([sin(x), f(x)]) with sin(x) flushed earlier).
// Otherwise the sums may round differently: a GRU cell looped over `x[:, t, :]` (a reshape
// view flushes each step) summed i2h_weight's five gradients in another order than eager, an
// ulp off in 196 elements.
static void sums_cross_parts(const Trace& t, const std::vector<int>& part_of_node, const std::vector<uint8_t>& gradient,
                             std::vector<char>* per_op) {
  const int kNoReader = -1, kSeveral = -2;
  std::vector<int> reader(t.values.size(), kNoReader);  // the part whose reached ops read a value
  auto reached = [&](const Node& n) {
    for (int v : n.out)
      if (gradient[v] != kNoGradient) return true;
    return false;
  };
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (!reached(n)) continue;
    const int p = part_of_node[i];
    for (int v : n.in) {
      const Value& val = t.values[v];
      int req = 0;
      if (val.node >= 0 ? part_of_node[val.node] != p : val.ext && autograd_role_or_history(val.ext, &req) == AutogradRole::kHistory)
        (*per_op)[p] = 1;
      int& r = reader[v];
      r = r == kNoReader || r == p ? p : kSeveral;
    }
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (!reached(n)) continue;
    for (int v : n.in) {
      if (reader[v] != kSeveral) continue;
      const Value& val = t.values[v];
      int req = 0;
      const AutogradRole role = val.node >= 0 ? AutogradRole::kHistory
                                : val.ext   ? autograd_role_or_history(val.ext, &req)
                                            : AutogradRole::kNone;
      const bool gets_gradient = role == AutogradRole::kHistory || (role == AutogradRole::kVariable && req != 0);
      if (gets_gradient) (*per_op)[part_of_node[i]] = 1;
    }
  }
}

// Per part (by index): whether it runs as a graph whose ops MXNet records one by one, each its
// own autograd node as eagerly (compile(): per_op_autograd), instead of as one node.
//
// MXNet's gradient pass gives an op whose output gradients are all zero nodes (a comparison's,
// floor's, argmax's, uniform_like's: parts.h) zero nodes for its inputs instead of running its
// backward, so eagerly what reaches a head only through such ops never runs its backward, and
// what reaches no head is never visited. A static CachedOp is one autograd node whose backward
// runs all of its ops, with zero arrays where eager has zero nodes or nothing: 0 * inf = NaN
// where eager's gradient is 0, and gemm2's backward into a grad_req='add' gradient reads
// uninitialised memory. So a part runs op by op in the graph when
//  - its history outlives this flush: a later flush may record the zero-gradient op reading
//    its results (fuzz seeds 1439174, 1482938: a read or waitall ends the recorded segment,
//    argmax or == of its result follows; 1415001: an sgd_update recorded outside the gradient
//    graph does). That is every part unless this flush precedes a backward (without
//    retain_graph) that reaches the part and frees its history;
//  - that backward does not reach one of its ops (a held log(y) beside the loss's y * 2);
//  - or the backward skips one of its ops that its graph would run (parts_hiding_zero_gradients);
//  - or its gradients meet others in a sum (sums_cross_parts).
// A part whose every op that backward reaches with a real gradient stays one static graph.
std::vector<char> parts_recorded_per_op(const ThreadState& ts, const Trace& t, const std::vector<int>& part_of_node,
                                        int parts) {
  std::vector<char> per_op(parts, 1);
  if (ts.backward_retains || ts.backward_heads.empty()) return per_op;
  std::vector<int> heads;
  for (NDArrayHandle h : ts.backward_heads) {
    auto it = t.slots.find(h);
    if (it == t.slots.end() || t.values[it->second.value].node < 0)
      return per_op;  // a head from an earlier graph: the backward reaches its readers too (sums_cross_parts)
    heads.push_back(it->second.value);
  }
  std::vector<uint8_t> gradient;
  std::vector<char> skipped;
  eager_gradient_pass(t, heads, &gradient, &skipped);
  std::vector<char> reached(parts, 0), unreached_op(parts, 0);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    bool r = false;
    for (int v : t.nodes[i].out) r = r || gradient[v] != kNoGradient;
    (r ? reached : unreached_op)[part_of_node[i]] = 1;
  }
  for (int p = 0; p < parts; ++p) per_op[p] = !reached[p] || unreached_op[p];
  sums_cross_parts(t, part_of_node, gradient, &per_op);
  return per_op;
}

// The parts (by index) whose graph would run a backward eager's pass skips behind a zero
// gradient (parts.h), among those not already run op by op (`per_op`).
std::vector<char> zero_gradient_parts(const ThreadState& ts, const Trace& t, const std::vector<int>& part_of_node,
                                      int parts, const std::vector<char>& per_op) {
  if (!t.zero_grad_ops) return std::vector<char>(parts, 0);
  // What each part's graph hands on: results the program holds, and values other parts read.
  std::vector<char> handed_on(t.values.size(), 0);
  std::vector<int> held;
  for (const auto& kv : t.slots) {
    const Slot& s = kv.second;
    if (t.values[s.value].node < 0) continue;
    if (s.ours ? held_elsewhere(static_cast<PyObject*>(s.owner)) : s.value != s.ext_value) {
      if (!handed_on[s.value]) held.push_back(s.value);
      handed_on[s.value] = 1;
    }
  }
  for (size_t i = 0; i < t.nodes.size(); ++i)
    for (int v : t.nodes[i].in)
      if (t.values[v].node >= 0 && part_of_node[t.values[v].node] != part_of_node[i]) handed_on[v] = 1;
  // The backward about to run, and, if the parts outlive it (retain_graph, or no backward
  // yet), any held result as the head of a later one.
  std::vector<std::vector<int>> head_sets(1);
  for (NDArrayHandle h : ts.backward_heads) {
    auto it = t.slots.find(h);
    if (it != t.slots.end() && t.values[it->second.value].node >= 0) head_sets[0].push_back(it->second.value);
  }
  if (head_sets[0].empty()) head_sets.clear();
  if (ts.backward_retains || head_sets.empty())
    for (int v : held) head_sets.push_back({v});
  std::string op;
  return parts_hiding_zero_gradients(t, part_of_node, parts, head_sets, handed_on, per_op, R->cfg.fuse, &op);
}

namespace {

// Runs the current trace; `counted`: the flush is in stats()['flushes'] already (one flush
// runs every context's trace, counted once).
void run_current(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager,
                 bool counted) {
  Trace& t = ts.trace;
  if (ts.flushing) {  // already under way: on this thread (a nested call) or another one
    wait_for_foreign_flush(ts);
    return;
  }
  ts.segment_anchor = 0;  // a segment cut sets it again once this returns
  if (t.nodes.empty()) {
    release_trace(t);
    return;
  }
  FlushingGuard guard(ts);
  if (!counted) ++R->stats.flushes[cause];
  // A trace a read kept open that now runs with no backward known: its forward ran twice.
  if (t.peeked && t.runs_recorded() && (ts.backward_retains || ts.backward_heads.empty())) {
    if (R->reads_not_kept.size() >= 4096) R->reads_not_kept.clear();
    R->reads_not_kept.insert(t.peek_key);
  }
  struct Release {  // whatever happens below, the trace is released
    Trace& t;
    ~Release() { release_trace(t); }
  } release{t};
  // Under autograd, independent computations are separate graphs (parts.cc); a trace whose
  // backward() runs inside its graph runs without autograd (backward.h): one graph.
  std::vector<Trace> parts;
  std::vector<char> per_op;  // per part: MXNet records its ops one by one (parts_recorded_per_op)
  // A part that can fail runs op by op and watches the gradients of its own inputs; the
  // backward() after it reaches the variables behind the other parts too (a Pooling before a
  // failing tile), whose gradient buffers it leaves the error on: all are probed after it
  // (a later graph writing one would be skipped whole: fuzz seed 9062593).
  if (t.runs_recorded() && t.can_fail) watch_input_gradients(t);
  if (t.runs_recorded()) {
    // The backward MXNet is about to run (without retain_graph) names its heads: if every op
    // of the segment leads to one of them, that backward visits all of them with real
    // gradients, and no held result needs to end a part (parts.cc).
    bool all_lead_to_heads = !ts.backward_retains && !ts.backward_heads.empty();
    if (all_lead_to_heads) {
      std::vector<char> needed(t.values.size(), 0);
      for (NDArrayHandle h : ts.backward_heads) {
        auto it = t.slots.find(h);
        if (it != t.slots.end()) needed[it->second.value] = 1;
      }
      for (size_t i = t.nodes.size(); i-- > 0;) {
        const Node& n = t.nodes[i];
        bool leads = false;
        for (int v : n.out) leads = leads || needed[v];
        if (leads) {
          for (int v : n.in) needed[v] = 1;
        } else {
          all_lead_to_heads = false;
        }
      }
    }
    std::vector<NDArrayHandle> held(t.values.size(), nullptr);  // results the program holds
    if (!all_lead_to_heads)
      for (const auto& kv : t.slots) {
        const Slot& s = kv.second;
        if (s.ours ? held_elsewhere(static_cast<PyObject*>(s.owner)) : s.value != s.ext_value) held[s.value] = kv.first;
      }
    std::vector<int> part_of_node;
    parts = independent_parts(t, held, &part_of_node);
    const int n_parts = std::max<int>(1, static_cast<int>(parts.size()));
    per_op = parts_recorded_per_op(ts, t, part_of_node, n_parts);
    const std::vector<char> behind_zero = zero_gradient_parts(ts, t, part_of_node, n_parts, per_op);
    for (int p = 0; p < n_parts; ++p) per_op[p] = per_op[p] || behind_zero[p];
  }
  auto per_op_for = [&](size_t p) { return p < per_op.size() && per_op[p] != 0; };
  if (parts.empty()) {
    run_trace(ts, t, cause, where, force_eager, per_op_for(0));
    return;
  }
  R->stats.independent_parts += parts.size();
  for (size_t p = 0; p < parts.size(); ++p) {
    Trace& part = parts[p];
    run_trace(ts, part, cause, where, force_eager, per_op_for(p));
    for (const auto& kv : part.slots)  // never recycled into the pool (see release_trace)
      if (kv.second.written) t.slots.at(kv.first).written = true;
  }
}

}  // namespace

void flush_current(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager) {
  if (!ts.flushing) push_update_batch(ts, cause);  // pending only while the trace is empty
  run_current(ts, cause, where, force_eager, false);
}

void flush_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager) {
  if (ts.flushing) {  // already under way: on this thread (a nested call) or another one
    wait_for_foreign_flush(ts);
    return;
  }
  push_update_batch(ts, cause);  // gathered updates (pending only while the traces are empty)
  if (ts.parked.empty()) return run_current(ts, cause, where, force_eager, false);
  ++R->stats.flushes[cause];
  // Other contexts' traces first (they were opened before the current one); each runs even
  // if one before it fails to, as a single trace's ops would all have been recorded to run.
  std::exception_ptr first_error;
  while (!ts.parked.empty()) {
    Trace current = std::move(ts.trace);
    ts.trace = std::move(ts.parked.front());
    ts.parked.erase(ts.parked.begin());
    try {
      run_current(ts, cause, where, force_eager, true);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
    ts.trace = std::move(current);
  }
  try {
    run_current(ts, cause, where, force_eager, true);
  } catch (...) {
    if (!first_error) first_error = std::current_exception();
  }
  if (first_error) std::rethrow_exception(first_error);
}

// Why: a recorded trace flushed before its backward is known must run with each op its own
// autograd node (parts_recorded_per_op: a later zero-gradient op or a backward that does not
// reach all of it would otherwise run more of its gradient than eager's pass), unfused. A read
// of the loss before loss.backward() is the common such flush. Instead the read gets the
// trace's results from a copy run without autograd (fused, one static graph), and the trace
// stays open: whatever follows is recorded into it as if there had been no read, and it runs
// whole later, with its backward known (in our graph, or MXNet's with its heads). The copy's
// values are the trace's own: only pure traces qualify (no random draws, no writes into
// existing arrays, no updates, nothing that can fail at run time), so running them twice
// gives the same arrays the same values and changes nothing else. One such run per trace: a
// second read after more ops were recorded flushes it, as does any other call; a trace read
// so that then ran without a known backward is not kept again (Runtime::reads_not_kept).
bool read_keeps_recorded_trace(ThreadState& ts, const std::string& cause) {
  Trace& t = ts.trace;
  if (!R->cfg.reads_keep_recorded || ts.flushing || ts.busy || !t.runs_recorded() || !ts.parked.empty() ||
      R->pending != t.nodes.size() || launches_unsettled() || (ts.site && ts.site->eager))
    return false;
  if (t.peeked == t.nodes.size()) return true;  // nothing recorded since: every held result is in its array
  if (t.peeked || t.can_fail || R->reads_not_kept.count(t.key.a)) return false;
  for (const Node& n : t.nodes) {
    if (n.op->effectful || n.op->can_fail || n.op->update || !n.mutated.empty()) return false;
    for (NDArrayHandle h : n.targets)
      if (h) return false;  // writes an existing array
  }
  for (const auto& kv : t.slots)
    if (!kv.second.ours && kv.second.value != kv.second.ext_value) return false;
  Trace copy = t;  // shares the slots' owners: never released, only run
  copy.recording = false;
  copy.key.add(0x9EE4EADULL);  // the graph without autograd: its own cache entry
  {
    FlushingGuard guard(ts);
    try {
      run_trace(ts, copy, cause + " (recorded trace kept open)", user_site(), false);
    } catch (...) {
      return false;  // the flush that follows runs it as usual, and raises what it raises
    }
  }
  for (const auto& kv : copy.slots)  // never recycled into the pool (see release_trace)
    if (kv.second.written) t.slots.at(kv.first).written = true;
  // The copy's compile passed the site's recompile limit: from now on its ops run eagerly where
  // they are called, and would read the copy's results, which have no autograd history. The
  // trace runs now, under autograd (eagerly, as the site does), and is not kept open.
  if (ts.site && ts.site->eager) return false;
  t.peeked = t.nodes.size();
  t.peek_key = t.key.a;
  ++R->stats.reads_kept_open;
  return true;
}

void flush_all(const std::string& cause, bool force_eager) {
  if (R->pending == 0) {
    drain_launches();  // nothing recorded, but segments may still be on their way to MXNet
    return;
  }
  std::string where = user_site();
  ThreadState& mine = me();
  flush_thread(mine, cause, where, force_eager);
  if (R->pending == 0) return;
  std::vector<ThreadState*> others;
  {
    std::lock_guard<std::mutex> lock(R->threads_mu);
    others = R->threads;
  }
  for (ThreadState* ts : others)
    if (ts != &mine && ts->has_pending() && !ts->busy)
      flush_other_thread(*ts, cause + " (from another thread)", where, force_eager);
}

void flush_other_thread(ThreadState& ts, const std::string& cause, const std::string& where, bool force_eager) {
  try {
    flush_thread(ts, cause, where, force_eager);
  } catch (const py::error_already_set&) {
    throw;  // Python's own (an interrupt while this thread waited): this thread's
  } catch (const std::runtime_error&) {  // MXError, OpInputError: the failing op is that thread's
    if (!ts.foreign_flush_error) ts.foreign_flush_error = std::current_exception();
  }
}

void raise_foreign_flush_error(ThreadState& ts) {
  if (!ts.foreign_flush_error) return;
  std::exception_ptr e = ts.foreign_flush_error;
  ts.foreign_flush_error = nullptr;
  std::rethrow_exception(e);
}

}  // namespace minpy
