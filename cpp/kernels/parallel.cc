// Thread settings and the helper threads of our kernels (parallel.h).
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace minpy_kernels {

std::atomic<int64_t> parallel_calls{0};

int max_threads() {
  static const int n = [] {
    for (const char* var : {"MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS"}) {
      const char* v = std::getenv(var);
      if (v && std::atoi(v) > 0) return std::atoi(v);
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(CPU_COUNT(&set), 1);
    return std::max(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), 1);
  }();
  return n;
}

int64_t idle_spin_ns() {
  static const int64_t ns = [] {
    const char* v = std::getenv("MINPY_KERNELS_SPIN_US");
    return v && *v ? static_cast<int64_t>(std::max(std::atof(v), 0.0) * 1000) : int64_t(100000);
  }();
  return ns;
}

double threshold_scale() {
  static const double scale = [] {
    const char* v = std::getenv("MINPY_KERNELS_THRESHOLD_SCALE");
    return v && *v ? std::max(std::atof(v), 0.0) : 1.0;
  }();
  return scale;
}

namespace {

std::atomic<int> spinning_helpers{0};  // helpers in their linger spin (helpers_awake)

// One call's range, shared by the caller and the helpers that join it.
struct Job {
  void (*body)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n, chunk;
  int64_t linger_ns = 0;  // helpers stay awake this long after it
  std::atomic<int64_t> next{0};
  std::atomic<int> joined{0};  // helpers running chunks of this job (changed under Pool::mu)

  void run() {
    for (int64_t k = next.fetch_add(chunk); k < n; k = next.fetch_add(chunk)) body(ctx, k, std::min(n, k + chunk));
  }
};

// Helper threads, started on first use, sleeping while there is no job. One job at a time:
// a second caller meanwhile (another engine worker) runs its call alone.
class Pool {
 public:
  void run(Job& job, int threads) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (busy_) {  // another call has the helpers: this one runs alone
        job.run();
        return;
      }
      busy_ = true;
      start_helpers(threads - 1);
      job_ = &job;
      wanted_ = threads - 1;
      posted_.fetch_add(1, std::memory_order_release);
    }
    parallel_calls.fetch_add(1, std::memory_order_relaxed);
    wake_.notify_all();
    job.run();
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = nullptr;  // a helper that looks from here on finds nothing to join
    }
    // A joined helper is at most one chunk from done: wait for it awake first (a sleeping
    // wait costs a wake-up, tens of microseconds on these machines, per call).
    spin_until([&job] { return job.joined.load(std::memory_order_acquire) == 0; }, kJoinSpinNs);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&job] { return job.joined.load() == 0; });
    busy_ = false;
  }

 private:
  void start_helpers(int count) {  // under mu_
    while (static_cast<int>(helpers_) < count) {
      try {
        std::thread([this] { helper(); }).detach();
      } catch (const std::system_error&) {
        return;  // no more threads to be had: the call runs with the helpers there are
      }
      ++helpers_;
    }
  }

  void helper() {
    std::unique_lock<std::mutex> lock(mu_);
    int64_t linger = 0;  // of the last job this helper ran
    for (;;) {
      if (linger > 0 && !(job_ != nullptr && wanted_ > 0)) {
        // Awake a little before sleeping, where the last job asked for it (parallel.h).
        // Bounded, so an idle helper soon stops taking a core.
        const uint64_t seen = posted_.load(std::memory_order_acquire);
        lock.unlock();
        spinning_helpers.fetch_add(1, std::memory_order_relaxed);
        spin_until([this, seen] { return posted_.load(std::memory_order_acquire) != seen; }, linger);
        spinning_helpers.fetch_sub(1, std::memory_order_relaxed);
        lock.lock();
      }
      wake_.wait(lock, [this] { return job_ != nullptr && wanted_ > 0; });
      Job* job = job_;
      --wanted_;
      ++job->joined;
      linger = job->linger_ns;
      lock.unlock();
      job->run();
      lock.lock();
      if (--job->joined == 0) done_.notify_all();
    }
  }

  // Spins until `done()` or `ns` nanoseconds passed.
  template <class Done>
  static void spin_until(Done done, int64_t ns) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    for (int i = 0; !done(); ++i) {
      __builtin_ia32_pause();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > end) return;
    }
  }
  static constexpr int64_t kJoinSpinNs = 50000;

  std::atomic<uint64_t> posted_{0};  // jobs posted so far: what a spinning helper watches
  std::mutex mu_;
  std::condition_variable wake_, done_;
  Job* job_ = nullptr;
  int wanted_ = 0;    // helpers the current job may still take
  bool busy_ = false;  // a caller owns the pool (until its joined helpers finish)
  unsigned helpers_ = 0;
};

// Leaked on purpose: helper threads hold it until the process ends. A forked child has no
// helpers and may inherit a locked mutex: it starts a pool of its own.
Pool* pool = nullptr;
std::once_flag pool_once;

Pool& the_pool() {
  std::call_once(pool_once, [] {
    pool = new Pool;
    pthread_atfork(nullptr, nullptr, [] { pool = new Pool; });
  });
  return *pool;
}

}  // namespace

bool helpers_awake() { return spinning_helpers.load(std::memory_order_relaxed) > 0; }

void run_chunks(int64_t n, int64_t chunk, int threads, void (*body)(void*, int64_t, int64_t), void* ctx,
                int64_t linger_ns) {
  Job job;
  job.body = body;
  job.ctx = ctx;
  job.n = n;
  job.chunk = chunk;
  job.linger_ns = linger_ns;
  the_pool().run(job, threads);
}

}  // namespace minpy_kernels

// For minpy_jit.kernel_threads() (ctypes): the thread limit and the calls that used threads.
extern "C" __attribute__((visibility("default"))) void minpy_kernels_threads(int* max, int64_t* calls) {
  *max = minpy_kernels::max_threads();
  *calls = minpy_kernels::parallel_calls.load(std::memory_order_relaxed);
}
