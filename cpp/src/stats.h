// Counters the runtime keeps; exported to Python as a plain dict.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace minpy {

// One flush, as shown by explain() and the logs.
struct FlushEvent {
  std::string cause, where;
  int nodes = 0, graph_nodes = 0;
  bool hit = false, eager = false;
  bool direct = false;  // the trace was one optimizer update, launched directly (update_launch.h)
  double compile_ms = 0;
  std::string key, miss_reason;
};

struct Stats {
  uint64_t ops_recorded = 0;
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
  uint64_t executions = 0, eager_replays = 0;
  uint64_t background_launches = 0;  // executions handed to MXNet by the launcher thread (launch.h)
  uint64_t context_switches = 0;  // ops that continued or opened another context's trace (record.cc)
  uint64_t independent_parts = 0;  // graphs run for recorded segments split into independent parts (parts.h)
  // recorded graphs run with each op its own autograd node, as eagerly (flush.cc, parts_recorded_per_op)
  uint64_t per_op_autograd = 0;
  uint64_t reads_kept_open = 0;  // reads of a recorded trace that ran a copy and kept it open (flush.cc)
  double compile_ms = 0;
  uint64_t fused_kernels = 0, fused_ops = 0;  // our kernels run, and the recorded ops they stood for
  // backward() calls on pending work: run inside our graph (backward.h), or left to MXNet's
  // autograd after the pending work ran under it
  uint64_t backward_in_graph = 0, backward_by_mxnet = 0;
  // ... of those in our graph, how many left it open for the update to join (Config::whole_step)
  uint64_t backward_pending = 0;
  // Trainer._update calls done as one kernel call per context (trainer_update.cc), and those
  // left to MXNet's Python (their ops recorded one by one), by reason
  uint64_t trainer_batched = 0;
  // ... of those, the updates launched directly as one engine operation (update_launch.h)
  uint64_t trainer_direct = 0;
  // flushes whose trace was one optimizer update over arrays made before it, launched directly
  // instead of as a graph (flush.cc, updates.h trace_as_direct_update)
  uint64_t update_flushes_direct = 0;
  // runs of a graph made only of our fused kernels, launched as one engine operation (kernel_launch.h)
  uint64_t kernels_launched_directly = 0;
  std::map<std::string, uint64_t> trainer_python;
  std::map<std::string, uint64_t> flushes;    // by cause
  std::map<std::string, uint64_t> fallbacks;  // eager fallbacks by op name
  std::map<std::string, uint64_t> fallback_reasons;
  struct KVStore {  // kvstore C API calls made while a scope was open (intercept.py)
    std::map<std::string, uint64_t> calls;  // by kind: push, pull, pushpull, init, broadcast, barrier
    uint64_t arrays_pushed = 0, arrays_pulled = 0;
    uint64_t flushes = 0;  // calls that found recorded work pending and ran it first
  } kvstore;
  std::deque<FlushEvent> events;  // most recent flushes (bounded)
  static constexpr size_t kMaxEvents = 256;

  void add_event(FlushEvent e) {
    events.push_back(std::move(e));
    if (events.size() > kMaxEvents) events.pop_front();
  }
};

}  // namespace minpy
