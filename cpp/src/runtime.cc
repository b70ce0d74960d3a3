// The runtime singleton and the per-thread state registry.
#include "runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <unordered_map>

namespace minpy {

Runtime* R = nullptr;

// A thread's state is never freed: another thread may hold a pointer to it from
// flush_all's snapshot of the registry. States of finished threads are reused.
struct ThreadSlot {
  ThreadState* st = nullptr;
  ~ThreadSlot() {  // thread exit: runs without the GIL
    if (!st || !R) return;
    std::lock_guard<std::mutex> lock(R->threads_mu);
    R->threads.erase(std::remove(R->threads.begin(), R->threads.end(), st), R->threads.end());
    if (!st->has_pending()) R->spare_states.push_back(st);
  }
};
thread_local ThreadSlot tls;

ThreadState& me() {
  if (!tls.st) {
    std::lock_guard<std::mutex> lock(R->threads_mu);
    if (!R->spare_states.empty()) {
      tls.st = R->spare_states.back();
      R->spare_states.pop_back();
      *tls.st = ThreadState();
    } else {
      tls.st = new ThreadState();
    }
    tls.st->id = ++R->thread_ids;
    R->threads.push_back(tls.st);
  }
  return *tls.st;
}

uint64_t recording_thread_id() { return tls.st ? tls.st->id : 0; }

void* kernel_symbol(const char* name) {
  static std::string loaded_from;
  static std::unordered_map<std::string, void*> found;
  if (R->kernels.empty()) return nullptr;
  if (loaded_from != R->kernels) {  // the library MXNet loaded: found, never loaded again
    loaded_from = R->kernels;
    found.clear();
  }
  auto it = found.find(name);
  if (it != found.end()) return it->second;
  void* sym = nullptr;
  if (void* lib = dlopen(R->kernels.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    sym = dlsym(lib, name);
    dlclose(lib);  // RTLD_NOLOAD took a reference: MXNet's own keeps it loaded
  }
  return found[name] = sym;
}

}  // namespace minpy
