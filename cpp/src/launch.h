// Launching compiled graphs off the Python thread.
//
// Handing a graph to MXNet (MXInvokeCachedOpEx) costs about half a microsecond per array
// it is given, on the calling thread: on W5 a third of the Python thread's time, on W4 a
// fifth. A segment cut mid-scope (segment_due) that hits the cache is therefore queued to
// one background launcher thread, which makes that call while Python records on.
//
// Order is what makes this safe. Jobs are launched in the order they were queued, and
// every other way the program reaches MXNet's engine first waits for the queue to empty
// (drain_launches): each synchronous flush, each eager fallback, each guarded C API call
// (pending() counts queued launches), and the end of every scope. Jobs hold references to
// the Python arrays they use, released on a Python thread after the launch.
#pragma once
#include <memory>
#include <vector>

#include "executor.h"

namespace minpy {

struct LaunchJob {
  std::shared_ptr<Executor> exe;
  LaunchArrays arrays;
  std::vector<NDArrayHandle> temps;  // arrays made for this run only: freed after the launch
  std::vector<void*> refs;           // the Python objects owning ins/outs (PyObject*, owned)
  bool training = false;             // autograd training mode (queued traces never record)
  uint64_t owner = 0;                // ThreadState::id of the queuing thread (set by launch_async)
};

// Queues a job (GIL held). Also releases the references of jobs already launched.
void launch_async(LaunchJob&& job);

// Waits until every queued job has been launched (releasing the GIL meanwhile), then
// releases their references (on the launcher thread itself: returns at once). Throws MXError
// if a job this thread queued failed (its jobs queued after it are not launched; other
// threads' are, and each thread hears only of its own failure); with report=false the
// failure is kept for the next drain.
void drain_launches(bool report = true);

// Jobs queued and not yet launched, plus one if a failed launch awaits this thread's next
// drain (any thread may ask): nonzero means a drain is due before MXNet is reached.
size_t launches_unsettled();

}  // namespace minpy
