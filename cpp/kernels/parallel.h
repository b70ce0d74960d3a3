// Threads for our kernels: how many a call may use, and a loop that hands chunks of a
// range to the calling thread and a few helper threads.
//
// Why our own helpers instead of an OpenMP parallel region: a region ends at a barrier that
// waits for every thread of the team, also one the kernel woke but the scheduler has not run
// yet, and libgomp's threads spin at that barrier. On the shared 2-core machine, under load,
// W2's chain took 105-124 ms a call on two OpenMP threads against 86-95 ms on one, and 10 ms
// more CPU (benchmarks/kernel_threads.py, /tmp measurements in the commit). Here the calling
// thread takes chunks too and waits only for chunks a helper has already taken: a helper
// that wakes late finds nothing left and goes back to sleep. The caller waits for a helper's
// last chunk awake (spinning) for up to 50 us before sleeping, and after a GEMM (exact_gemm.h)
// the helpers stay awake for 100 us (MINPY_KERNELS_SPIN_US): a graph's GEMMs follow each other
// within microseconds, and a sleeping thread's wake-up took 20-30 us here (a 100 us job on two
// threads: 86 us a call when caller and helpers slept, 56 us awake). Other kernels' helpers sleep at once:
// awake, they took a core from the Python thread recording the next segment (W5's 200
// updates under jit(): 0.40 ms a call sleeping against 0.46 spinning).
//
// A kernel asks for threads only where its work is large enough (each kernel states its
// threshold, measured); the split never changes a result: every element is computed by the
// same code whichever thread runs it, and no kernel here reduces across elements.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace minpy_kernels {

// The most threads a call may use: MXNET_OMP_MAX_THREADS or OMP_NUM_THREADS when the user
// set them (the limits MXNet's kernels obey; OMP_NUM_THREADS=1 gives one), else every core
// this process may run on. MXNet's own default is half the cores (it assumes hyperthreads),
// which on a 2-core machine is one: its engine worker's omp_get_max_threads() says 1 there.
int max_threads();

// Calls that ran on more than one thread, since the library loaded (minpy_jit.kernel_threads()).
extern std::atomic<int64_t> parallel_calls;

// How long helpers stay awake after a call that expects a next one soon (a GEMM of a graph:
// exact_gemm.cc passes it as linger_ns): MINPY_KERNELS_SPIN_US, default 100 us.
int64_t idle_spin_ns();

// Whether a helper is awake now, spinning in the time a GEMM's call asked it to stay awake for
// (linger_ns): handing it work costs about a microsecond then, against the 20-30 us of waking
// a sleeping one, so a kernel may split smaller work (fused_elemwise.cc). A hint: the helper
// may fall asleep the next moment (the call then runs with it late or alone, as ever).
bool helpers_awake();

// MINPY_KERNELS_THRESHOLD_SCALE (default 1) multiplies every kernel's threshold: 0 threads
// every call, a large value none. For measuring the thresholds (benchmarks/kernel_threads.py).
double threshold_scale();

// Threads worth using for `work` units when a thread needs at least `min_work` to pay for
// waking it: 1 below 2 * min_work, else up to max_threads(), each getting >= min_work.
inline int threads_for_work(int64_t work, int64_t min_work) {
  min_work = static_cast<int64_t>(static_cast<double>(min_work) * threshold_scale());
  if (min_work < 1) return max_threads();
  if (work < 2 * min_work) return 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(max_threads(), work / min_work)));
}

// body(ctx, begin, end) over [0, n) in chunks of `chunk` items, on the calling thread and up
// to threads - 1 helpers. Chunks are handed out on demand. Runs on the calling thread alone
// when threads <= 1, n <= chunk, or the helpers are busy with another call. `linger_ns`: how
// long the helpers stay awake afterwards for a next call (0: they sleep at once).
void run_chunks(int64_t n, int64_t chunk, int threads, void (*body)(void*, int64_t, int64_t), void* ctx,
                int64_t linger_ns);

template <class Body>
void parallel_chunks(int64_t n, int64_t chunk, int threads, Body&& body, int64_t linger_ns = 0) {
  if (threads <= 1 || n <= chunk) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  run_chunks(n, chunk, threads,
             [](void* b, int64_t begin, int64_t end) { (*static_cast<Body*>(b))(begin, end); }, &body, linger_ns);
}

}  // namespace minpy_kernels
