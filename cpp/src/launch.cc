#include "launch.h"

#include <pybind11/pybind11.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "mxapi.h"
#include "runtime.h"

namespace minpy {
namespace py = pybind11;

namespace {

thread_local bool on_launcher_thread = false;

struct Launcher {
  std::mutex mu;
  std::condition_variable work, done;
  std::deque<LaunchJob> queue;
  size_t in_flight = 0;            // queued or being launched
  std::vector<void*> retired;      // references of launched jobs, to release under the GIL
  // Per queuing thread (ThreadState::id): its first failed launch, until that thread's next
  // drain reports it; its later jobs are skipped meanwhile. Other threads' jobs are their own
  // programs' work and still run: one failure for all skipped them too, and the thread that
  // drained first got the error, so the other read arrays never written (garbage), silently.
  std::unordered_map<uint64_t, std::string> failures;
  bool started = false;
  uint64_t kernels_launched = 0;  // runs that were an executor's kernels launched directly (kernel_launch.h), not yet counted

  void loop() {
    on_launcher_thread = true;
    for (;;) {
      LaunchJob job;
      bool skip;
      {
        std::unique_lock<std::mutex> lock(mu);
        work.wait(lock, [&] { return !queue.empty(); });
        job = std::move(queue.front());
        queue.pop_front();
        skip = failures.count(job.owner) > 0;
      }
      std::string error;
      if (!skip) {
        AutogradState state(false, job.training);  // this thread's own autograd state
        if (invoke_cached_op(*job.exe, job.arrays) != 0) error = MXGetLastError();
      }
      const bool kernel_launched = !skip && error.empty() && job.arrays.kernel_launched;
      for (auto h : job.temps) MXNDArrayFree(h);
      job.exe.reset();
      {
        std::lock_guard<std::mutex> lock(mu);
        retired.insert(retired.end(), job.refs.begin(), job.refs.end());
        kernels_launched += kernel_launched;
        if (!error.empty()) failures.emplace(job.owner, error);  // the first one stays
        --in_flight;
      }
      done.notify_all();
    }
  }

  // Releases the references of launched jobs (GIL held).
  void retire() {
    std::vector<void*> refs;
    {
      std::lock_guard<std::mutex> lock(mu);
      refs.swap(retired);
      R->stats.kernels_launched_directly += kernels_launched;  // counted here, with the GIL
      kernels_launched = 0;
    }
    for (void* r : refs) Py_DECREF(static_cast<PyObject*>(r));
  }
};

Launcher& launcher() {
  static Launcher* l = new Launcher();  // never destroyed: its thread runs until the process ends
  return *l;
}

}  // namespace

void launch_async(LaunchJob&& job) {
  Launcher& l = launcher();
  l.retire();
  job.owner = me().id;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (!l.started) {
      std::thread([&l] { l.loop(); }).detach();
      l.started = true;
    }
    l.queue.push_back(std::move(job));
    ++l.in_flight;
  }
  l.work.notify_one();
}

void drain_launches(bool report) {
  // A launch that calls Python back (a CustomOp under NaiveEngine) reaches here on the
  // launcher thread itself: every earlier job is done, and the current one is ours.
  if (on_launcher_thread) return;
  Launcher& l = launcher();
  const uint64_t mine = recording_thread_id();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.in_flight == 0 && l.retired.empty() && !l.failures.count(mine)) return;
  }
  {
    py::gil_scoped_release nogil;  // a launch may need Python (a Custom op under NaiveEngine)
    std::unique_lock<std::mutex> lock(l.mu);
    l.done.wait(lock, [&] { return l.in_flight == 0; });
  }
  l.retire();
  if (!report) return;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    auto it = l.failures.find(mine);
    if (it == l.failures.end()) return;
    failure.swap(it->second);
    l.failures.erase(it);
  }
  // The user gets MXNet's error as eager code would; what happened here is the exception's note.
  const std::string note =
      "minpy_jit: raised by a graph launched in the background (it and this thread's segments queued after it did not run)";
  if (!failure.empty()) throw MXError(note + ": " + failure, failure, note);
}

size_t launches_unsettled() {  // asked before every MXNet call while the hooks are in: cheap
  Launcher& l = launcher();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.failures.empty() || on_launcher_thread) return l.in_flight;
  const uint64_t mine = recording_thread_id();
  return l.in_flight + (mine && l.failures.count(mine) ? 1 : 0);
}

}  // namespace minpy
