// Graphs of our fused kernels launched as one engine operation: see kernel_launch.h.
//
// Compiled like peek.cc, with libmxnet.so's string ABI and without MKLDNN: the job holds
// mxnet::NDArray copies (NDArray's own members depend on no build option) and calls the
// library's own functions for everything that touches a storage chunk, whose layout in the
// library has oneDNN members this compiler does not see. No std::string crosses to or from
// another file.
#define _GLIBCXX_USE_CXX11_ABI 0
#undef MXNET_USE_MKLDNN
#define MXNET_USE_MKLDNN 0
#define MSHADOW_USE_MKL 0
#define MSHADOW_USE_CBLAS 0
#define MSHADOW_USE_CUDA 0
#include <dlfcn.h>

#include <algorithm>
#include <mxnet/ndarray.h>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "kernel_launch.h"
#include "mxapi.h"

namespace minpy {

namespace {

// libmxnet.so's own code for a chunk (its layout) and for a default-layout copy:
// NDArray::Chunk::CheckAndAlloc(uint64_t) and NDArray::Reorder2Default() const (returned
// through a hidden pointer, the Itanium C++ ABI's way for a class with a destructor).
using ChunkAlloc = void (*)(void* chunk, uint64_t bytes);
using DefaultCopy = void (*)(mxnet::NDArray* result, const mxnet::NDArray* self);

struct Library {
  ChunkAlloc alloc = nullptr;
  DefaultCopy default_copy = nullptr;  // null in a build without oneDNN: no blocked layout exists
  ChunkReorder reorder = nullptr;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    l.alloc = reinterpret_cast<ChunkAlloc>(dlsym(RTLD_DEFAULT, "_ZN5mxnet7NDArray5Chunk13CheckAndAllocEm"));
    l.default_copy = reinterpret_cast<DefaultCopy>(dlsym(RTLD_DEFAULT, "_ZNK5mxnet7NDArray15Reorder2DefaultEv"));
    l.reorder = chunk_reorder();
    return l;
  }();
  return lib;
}

// What one pushed run holds: the plan (and so its program) and copies of the arrays, which
// keep their storage alive until the run even if Python drops them first.
struct Job {
  std::shared_ptr<const KernelLaunch> plan;
  std::vector<mxnet::NDArray> ins, heads;  // per KernelLaunch::input_pos, per graph head
};

// A default-layout copy of `a` made by the library, or nothing when `a` is in the default
// layout already (the library then returns `a` itself).
struct DefaultCopyOf {
  alignas(mxnet::NDArray) unsigned char raw[sizeof(mxnet::NDArray)];
  bool made = false;
  mxnet::NDArray* get() { return reinterpret_cast<mxnet::NDArray*>(raw); }
  ~DefaultCopyOf() {
    if (made) get()->~NDArray();
  }
};

float* data_ptr(const mxnet::NDArray& a, int64_t elems, const char* what, size_t index) {
  void* p = data_of(const_cast<mxnet::NDArray*>(&a), static_cast<size_t>(elems) * sizeof(float));
  if (!p && elems > 0)
    throw std::runtime_error(std::string("minpy_jit fused kernel: ") + what + " " + std::to_string(index) +
                             " has no storage of " + std::to_string(elems) + " float32 values");
  return static_cast<float*>(p);
}

// Buffers for values only a later kernel of the launch reads: kept per thread between runs (a
// 1M-element intermediate allocated at every run would cost its page faults each time), unless
// larger than this (the memory would stay taken for the thread's life).
constexpr size_t kKeptTempElems = size_t(1) << 23;  // 32 MB

std::vector<std::vector<float>>& temp_pool() {
  thread_local std::vector<std::vector<float>> pool;
  return pool;
}

std::vector<float*> temp_buffers(const std::vector<int64_t>& elems) {
  std::vector<std::vector<float>>& pool = temp_pool();
  if (pool.size() < elems.size()) pool.resize(elems.size());
  std::vector<float*> out(elems.size());
  for (size_t t = 0; t < elems.size(); ++t) {
    if (pool[t].size() < static_cast<size_t>(elems[t])) pool[t].resize(static_cast<size_t>(elems[t]));
    out[t] = pool[t].data();
  }
  return out;
}

// The run, with the inputs readable and the outputs writable; throws what went wrong.
void run(Job& j) {
  const KernelLaunch& k = *j.plan;
  const Library& lib = library();
  const size_t nin = j.ins.size(), nheads = j.heads.size();
  std::vector<DefaultCopyOf> copies(nin);
  std::vector<const float*> in(nin);
  std::vector<float*> head(nheads, nullptr);
  for (size_t i = 0; i < nin; ++i) {
    const mxnet::NDArray& a = j.ins[i];
    lib.alloc(const_cast<void*>(chunk_of(const_cast<mxnet::NDArray*>(&a))), 0);  // as reading data() would
    const mxnet::NDArray* src = &a;
    if (k.input_written[i]) {  // written where it is: in the default layout first, as before a CachedOp
      if (lib.reorder) lib.reorder(const_cast<void*>(chunk_of(const_cast<mxnet::NDArray*>(&a))));
    } else if (lib.default_copy) {
      lib.default_copy(copies[i].get(), &a);
      copies[i].made = true;
      if (chunk_of(copies[i].get()) != chunk_of(const_cast<mxnet::NDArray*>(&a))) {
        if (a.byte_offset() != 0)
          throw std::runtime_error("minpy_jit fused kernel: a view of an array in oneDNN's layout");
        src = copies[i].get();
      }
    }
    in[i] = data_ptr(*src, k.input_elems[i], "input", i);
  }
  for (size_t h = 0; h < nheads; ++h) {
    void* chunk = const_cast<void*>(chunk_of(&j.heads[h]));
    lib.alloc(chunk, 0);
    if (lib.reorder) lib.reorder(chunk);  // overwritten whole, but MXNet must read it as default layout
    head[h] = data_ptr(j.heads[h], k.head_elems[h], "output", h);
  }
  const std::vector<float*> temp = temp_buffers(k.temp_elems);
  auto where = [&](const KernelSlot& s) -> float* {
    switch (s.kind) {
      case KernelSlot::kInput: return const_cast<float*>(in[s.index]);
      case KernelSlot::kHead: return head[s.index];
      case KernelSlot::kTemp: return temp[s.index];
      default: return nullptr;
    }
  };
  std::vector<const float*> step_in;
  std::vector<float*> step_out;
  for (const KernelLaunch::Step& st : k.steps) {
    step_in.clear();
    step_out.clear();
    for (const KernelSlot& s : st.inputs) step_in.push_back(where(s));
    for (const KernelSlot& s : st.outputs) step_out.push_back(where(s));
    const char* why = st.run(st.program.get(), step_in.data(), st.in_elems.data(), step_out.data(), st.out_elems.data());
    if (why)
      throw std::runtime_error(std::string("minpy_jit fused kernel: ") + why);
  }
  for (std::vector<float>& buffer : temp_pool())
    if (buffer.size() > kKeptTempElems) std::vector<float>().swap(buffer);
}

// On the pushing thread or MXNet's worker. An error goes to MXNet's engine through the completion
// callback, which stores it on the outputs as for any operator (an exception thrown out of an
// engine operation is fatal to MXNet 1.9.1's engine).
void run_job(void*, void* on_complete, void* param) {
  const auto& done = *static_cast<const mxnet::engine::CallbackOnComplete*>(on_complete);
  try {
    run(*static_cast<Job*>(param));
  } catch (const std::exception& e) {
    const dmlc::Error error(e.what());
    done(&error);
    return;
  }
  done();
}

void free_job(void* param) { delete static_cast<Job*>(param); }

bool dense_cpu(NDArrayHandle h, int dev_id) {
  const auto* a = static_cast<const mxnet::NDArray*>(h);
  if (a->is_none() || a->storage_type() != mxnet::kDefaultStorage || a->dtype() != mshadow::kFloat32) return false;
  const mxnet::Context ctx = a->ctx();
  return ctx.dev_type == mxnet::Context::kCPU && ctx.dev_id == dev_id;
}

}  // namespace

bool kernel_jobs_work() {
  static const bool works = [] {
    const Library& lib = library();
    if (!lib.alloc || !lib.default_copy != !lib.reorder || !data_peek_works() || !chunk_identity_works()) return false;
    // On a real array: allocation through the library's chunk code, and its default-layout
    // "copy" of an array in the default layout being the array itself.
    const uint32_t shape[] = {5};
    NDArrayHandle h = nullptr;
    if (MXNDArrayCreateEx(shape, 1, 1, 0, 1, 0, &h) != 0) return false;  // delay-allocated
    const auto* a = static_cast<const mxnet::NDArray*>(h);
    lib.alloc(const_cast<void*>(chunk_of(h)), 0);
    void* real = nullptr;
    bool ok = data_of(h, 20) && MXNDArrayGetData(h, &real) == 0 && real == data_of(h, 20);
    if (ok && lib.default_copy) {
      DefaultCopyOf copy;
      lib.default_copy(copy.get(), a);
      copy.made = true;
      ok = chunk_of(copy.get()) == chunk_of(h) && copy.get()->shape() == a->shape();
    }
    MXNDArrayFree(h);
    return ok;
  }();
  return works;
}

bool launch_kernel(const std::shared_ptr<const KernelLaunch>& k, const std::vector<NDArrayHandle>& ins,
                   const std::vector<NDArrayHandle>& outs) {
  if (!k || outs.size() != k->head_elems.size()) return false;
  // Every array dense float32 on the plan's CPU context; outputs each in storage of their own.
  // Not a view that starts inside its storage (a row, a slice of rows): if that storage is in
  // oneDNN's layout when the run comes (its producer may still be pending), no default-layout
  // copy of the view exists (NDArray::Reorder2Default copies the whole chunk, and where the view
  // lies in it is not known here); the CachedOp reads it as eager does (fuzz seed 11953696:
  // concat's output, then x[1].sum()).
  std::vector<const void*> in_chunks;
  for (int pos : k->input_pos) {
    if (pos >= static_cast<int>(ins.size()) || !dense_cpu(ins[pos], k->dev_id)) return false;
    if (static_cast<const mxnet::NDArray*>(ins[pos])->byte_offset() != 0) return false;
    in_chunks.push_back(chunk_of(ins[pos]));
  }
  for (size_t a = 0; a < outs.size(); ++a) {
    if (!dense_cpu(outs[a], k->dev_id)) return false;
    const void* c = chunk_of(outs[a]);
    if (std::find(in_chunks.begin(), in_chunks.end(), c) != in_chunks.end()) return false;
    for (size_t b = 0; b < a; ++b)
      if (chunk_of(outs[b]) == c) return false;
  }
  auto job = std::make_unique<Job>();
  job->plan = k;
  job->ins.reserve(k->input_pos.size());
  for (int pos : k->input_pos) job->ins.push_back(*static_cast<const mxnet::NDArray*>(ins[pos]));
  job->heads.reserve(outs.size());
  for (NDArrayHandle h : outs) job->heads.push_back(*static_cast<const mxnet::NDArray*>(h));
  // Engine variables: each input chunk once (kernels may read one array twice), outputs apart;
  // an input written in place is written, in storage no other array of the launch has.
  std::vector<NDArrayHandle> reads, writes(outs);
  std::vector<const void*> sorted_chunks(in_chunks);  // a step's update writes hundreds of weights
  std::sort(sorted_chunks.begin(), sorted_chunks.end());
  std::unordered_set<const void*> seen;  // chunks already read
  for (size_t i = 0; i < k->input_pos.size(); ++i) {
    const void* c = in_chunks[i];
    if (k->input_written[i]) {
      const auto same = std::equal_range(sorted_chunks.begin(), sorted_chunks.end(), c);
      if (same.second - same.first > 1) return false;
      writes.push_back(ins[k->input_pos[i]]);
      continue;
    }
    if (seen.insert(c).second) reads.push_back(ins[k->input_pos[i]]);
  }
  static const mxnet::FnProperty run_at_once = mxnet::FnProperty::kAsync;  // on this thread when nothing is pending
  const struct {
    int dev_type, dev_id;  // mxnet::Context
  } ctx{1, k->dev_id};
  // MXNet owns the job from here (free_job); a push it refuses pushed nothing: the CachedOp runs.
  return MXEnginePushAsyncND(run_job, job.release(), free_job, const_cast<void*>(static_cast<const void*>(&ctx)),
                            reads.data(), static_cast<int>(reads.size()), writes.data(),
                            static_cast<int>(writes.size()), &run_at_once, 0, "minpy_fused_kernel", false) == 0;
}

}  // namespace minpy
