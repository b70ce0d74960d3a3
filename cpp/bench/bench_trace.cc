// Microbenchmark of the recorder's per-op costs, in pure C++ (no Python).
//
// For sequences of 10, 100, 1,000 and 10,000 ops (a repeating chain
// _mul_scalar -> _plus_scalar -> relu on one (32, 32) float32 external input)
// it measures, as medians over many repetitions:
//
//   record  ns/op   the C++ part of the runtime's per-op record path (what
//                   bindings.cc:invoke does once Python has handed it the op):
//                   build the attribute list + its hash, look the input handle
//                   up in the trace's slots, SignatureCache::lookup (a hit),
//                   Trace::add_node (incl. the incremental Key128 update) and
//                   Trace::bind of the output handle. Output handles are fake
//                   distinct pointer values: no MXNet allocation is timed.
//   hash    ns/op   Key128::add alone, the same calls add_node makes per op.
//   ns/lookup       ExecutorCache::find with the trace's final flush key, a hit,
//                   in a cache holding 256 executors; "lookup ns/op" divides it
//                   by the sequence length.
//   clear   ns/op   Trace::clear() after the flush, divided by the sequence length.
// and, for the cache-miss path (once per new graph), per op of the sequence:
//   lower           lower() of the trace to NNVM JSON;
//   compile         compile(): lower + MXSymbolCreateFromJSON + MXCreateCachedOpEx;
//   explain         nearest_difference() against 256 cached executors that all share
//                   the whole sequence (its worst case: every prefix compared in full).
// Finally the longest trace is recorded with a clock read every tenth, to show the
// cost of an op does not depend on how many ops precede it.
//
// A flat column means no O(n) work per op and no O(n^2) work at the flush.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <ctime>
#include <unordered_set>
#include <vector>

#include "../src/executor.h"
#include "../src/explain.h"
#include "../src/graph.h"
#include "../src/infer.h"
#include "../src/mxapi.h"
#include "../src/runtime.h"
#include "../src/trace.h"

using namespace minpy;
using Clock = std::chrono::steady_clock;

namespace {

template <class T>
inline void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

double now_ns() { return std::chrono::duration<double, std::nano>(Clock::now().time_since_epoch()).count(); }

// This thread's CPU time: excludes time the thread was descheduled (the machine may be
// busy), at ~0.6 us per pair of reads; used for samples of 1,000 ops and more.
double cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Cost of one pair of clock reads, subtracted from every sample.
double timer_overhead(double (*clock)()) {
  std::vector<double> s(20001);
  for (auto& x : s) {
    double t0 = clock();
    double t1 = clock();
    x = t1 - t0;
  }
  return median(s);
}

// One op kind of the chain, prepared like bindings.cc:op_info does.
struct OpKind {
  OpInfo info;
  std::vector<Attr> attrs;
};

OpKind make_op(const char* name, std::vector<Attr> attrs) {
  OpKind k;
  OpHandle h = nullptr;
  if (NNGetOpHandle(name, &h) != 0 || !h) {
    std::fprintf(stderr, "NNGetOpHandle(%s) failed: %s\n", name, MXGetLastError());
    std::exit(1);
  }
  k.info.creator = reinterpret_cast<AtomicSymbolCreator>(h);
  k.info.name = op_name_of(k.info.creator);
  k.info.hash = hash_bytes(k.info.name.data(), k.info.name.size());
  k.attrs = std::move(attrs);
  return k;
}

inline NDArrayHandle fake_handle(size_t i) { return reinterpret_cast<NDArrayHandle>(0x100000 + 64 * i); }

// Records n ops into t, the way bindings.cc:invoke does per op (its C++ part).
// Returns the value id of the last op's output. With marks, stamps the clock every n/10 ops.
int record(Trace& t, SignatureCache& sigs, const std::vector<OpKind>& kinds, NDArrayHandle ext, size_t n,
           double* marks = nullptr) {
  t.start(false, false, false);
  NDArrayHandle cur = ext;
  int last = -1;
  for (size_t i = 0; i < n; ++i) {
    if (marks && i % (n / 10) == 0) marks[i / (n / 10)] = cpu_ns();
    const OpKind& k = kinds[i % kinds.size()];
    // attributes: built per op from the caller's strings, hashed as invoke() does
    std::vector<Attr> attrs;
    uint64_t attr_hash = 0x41;
    attrs.reserve(k.attrs.size());
    for (const Attr& src : k.attrs) {
      Attr a{src.key, src.val};
      attr_hash = mix64(attr_hash ^ hash_bytes(a.key.data(), a.key.size()));
      attr_hash = mix64(attr_hash ^ hash_bytes(a.val.data(), a.val.size()));
      attrs.push_back(std::move(a));
    }
    // inputs: the value the input array holds now (external on first sight)
    std::vector<int> in(1);
    auto it = t.slots.find(cur);
    if (it != t.slots.end()) {
      in[0] = it->second.value;
    } else {
      Slot* slot = nullptr;
      in[0] = t.value_of(cur, nullptr, &slot);  // one aval_of (MXNet getters) per trace
    }
    std::vector<const AVal*> in_avals(1);
    in_avals[0] = &t.values[in[0]].aval;
    const OpSignature& sig = sigs.lookup(k.info, attrs, attr_hash, in_avals, false);
    int first = t.add_node(&k.info, std::move(attrs), attr_hash, in, sig.outs, sig.mutable_inputs, -1);
    NDArrayHandle out = fake_handle(i);
    t.bind(out, first, true, nullptr);
    cur = out;
    last = first;
  }
  if (marks) marks[10] = cpu_ns();
  return last;
}

// The flush key, as bindings.cc:flush_thread derives it from t.key and the outputs.
Key128 flush_key(const Trace& t, const std::vector<OutputSpec>& outputs) {
  Key128 key = t.key;
  for (const auto& o : outputs) {
    key.add(0x0A7ULL + static_cast<uint64_t>(o.value));
    key.add(static_cast<uint64_t>(o.target_ext + 2));
  }
  return key;
}

// Everything measured for one sequence length; samples from all rounds.
struct Series {
  size_t n = 0;
  Trace ref;  // one recorded sequence of this length, for the flush-side measurements
  std::vector<OutputSpec> outputs;
  Key128 key;
  std::vector<uint64_t> words;  // the Key128::add arguments add_node used, in order
  std::vector<std::shared_ptr<Executor>> explain_cache;
  std::vector<double> record, clear, hash, lookup, lower, compile, explain;
};

}  // namespace

int main(int argc, char** argv) {
  // argv[1]: scales the number of rounds (default 1); argv[2..]: sequence lengths instead of the default.
  const double budget = argc > 1 ? std::atof(argv[1]) : 1.0;
  std::vector<size_t> sizes{10, 100, 1000, 10000};  // 10,000 = the runtime's default max_ops cap
  if (argc > 2) {
    sizes.clear();
    for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  // The runtime's state, as the Python module's init makes it (bindings.cc): the recorder reads
  // its configuration, and releases the GIL around MXNet calls, so an interpreter must exist.
  Py_Initialize();
  minpy::R = new minpy::Runtime();
  const double wall_ov = timer_overhead(now_ns), cpu_ov = timer_overhead(cpu_ns);

  // The external input: a real (32, 32) float32 array on cpu(0).
  uint32_t shape[2] = {32, 32};
  NDArrayHandle ext = nullptr;
  MX_CALL(MXNDArrayCreateEx(shape, 2, 1, 0, 0, 0, &ext));

  std::vector<OpKind> kinds;
  kinds.push_back(make_op("_mul_scalar", {{"scalar", "1.01"}}));
  kinds.push_back(make_op("_plus_scalar", {{"scalar", "0.5"}}));
  kinds.push_back(make_op("relu", {}));

  SignatureCache sigs;
  std::unordered_set<std::string> nondiff;
  // A full 256-entry executor cache of unrelated graphs; each sequence's own entry evicts one.
  ExecutorCache cache(256);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 256; ++i) {
    Key128 k;
    k.add(rng());
    cache.insert(k, std::make_shared<Executor>());
  }

  // Setup per length (untimed): the first recording fills the signature cache (MXNet inference).
  std::vector<std::unique_ptr<Series>> all;
  for (size_t n : sizes) {
    auto S = std::make_unique<Series>();
    S->n = n;
    int last = record(S->ref, sigs, kinds, ext, n);
    S->outputs = {{last, -1, fake_handle(n - 1)}};
    S->key = flush_key(S->ref, S->outputs);
    cache.insert(S->key, std::make_shared<Executor>());
    for (const Node& node : S->ref.nodes) {
      S->words.push_back(node.op->hash);
      uint64_t ah = 0x41;
      for (const Attr& a : node.attrs) {
        ah = mix64(ah ^ hash_bytes(a.key.data(), a.key.size()));
        ah = mix64(ah ^ hash_bytes(a.val.data(), a.val.size()));
      }
      S->words.push_back(ah);
      for (int v : node.in) S->words.push_back(static_cast<uint64_t>(v) + 0x1000);
      S->words.push_back(0xA000 + node.out.size());
    }
    std::vector<Step> steps = steps_of(S->ref);
    for (int i = 0; i < 256; ++i) {
      S->explain_cache.push_back(std::make_shared<Executor>());
      S->explain_cache.back()->steps = steps;
    }
    all.push_back(std::move(S));
  }
  const uint64_t warm_inferences = sigs.inferences;

  // Rounds interleave the lengths, so background load on the machine hits them all alike.
  Trace t;  // one trace reused across flushes, as the runtime's ThreadState does
  const int rounds = std::max(3, static_cast<int>(21 * budget));
  for (int round = 0; round < rounds; ++round) {
    for (auto& Sp : all) {
      Series& S = *Sp;
      const size_t n = S.n;
      // wall clock for short samples; thread CPU time from 1,000 ops up (immune to preemption)
      double (*clk)() = n >= 1000 ? cpu_ns : now_ns;
      const double tov = n >= 1000 ? cpu_ov : wall_ov;
      // (a) the record path, then the trace clear at the flush
      for (size_t i = 0, reps = std::max<size_t>(5, 150000 / n); i < reps; ++i) {
        double t0 = clk();
        record(t, sigs, kinds, ext, n);
        double t1 = clk();
        if (!(t.key == S.ref.key)) {
          std::fprintf(stderr, "structural key differs between two recordings of the same sequence\n");
          return 1;
        }
        double t2 = clk();
        t.clear();
        double t3 = clk();
        S.record.push_back((t1 - t0 - tov) / n);
        S.clear.push_back((t3 - t2 - tov) / n);
      }
      // (b) the same Key128::add calls add_node makes, on the same values
      for (size_t i = 0, reps = std::max<size_t>(5, 150000 / n); i < reps; ++i) {
        Key128 k;
        double t0 = clk();
        for (uint64_t w : S.words) k.add(w);
        keep(k);
        double t1 = clk();
        S.hash.push_back((t1 - t0 - tov) / n);
      }
      // (c) executor-cache hit with the flush key, batches of 1000 finds
      for (int b = 0; b < 5; ++b) {
        double t0 = now_ns();
        for (int j = 0; j < 1000; ++j) {
          auto e = cache.find(S.key);
          keep(e);
          if (!e) return 1;
        }
        double t1 = now_ns();
        S.lookup.push_back((t1 - t0 - wall_ov) / 1000);
      }
      // (d) cache-miss path: lower() to JSON; compile() = lower + MXNet parse + CachedOp build;
      //     nearest_difference() against 256 entries that all share the whole sequence (worst case)
      for (size_t i = 0, reps = std::max<size_t>(1, 30000 / n); i < reps; ++i) {
        double t0 = clk();
        LoweredGraph g = lower(S.ref, S.outputs, nondiff, /*fuse=*/false);  // no kernel library here
        double t1 = clk();
        keep(g.json);
        S.lower.push_back((t1 - t0 - tov) / n);
      }
      for (size_t i = 0, reps = std::max<size_t>(1, 300 / n); i < reps; ++i) {
        double t0 = clk();
        auto exe = compile(S.ref, S.outputs, &nondiff, /*fuse=*/false, nullptr);
        double t1 = clk();
        S.compile.push_back((t1 - t0 - tov) / n);
      }
      for (size_t i = 0, reps = std::max<size_t>(1, 300 / n); i < reps; ++i) {
        double t0 = clk();
        std::string why = nearest_difference(S.ref, S.outputs, S.explain_cache, [](int) { return std::string(); });
        double t1 = clk();
        keep(why);
        S.explain.push_back((t1 - t0 - tov) / n);
      }
    }
  }
  if (sigs.inferences != warm_inferences) {
    std::fprintf(stderr, "signature cache missed in the timed loop\n");
    return 1;
  }

  std::printf("minpy_jit C++ recorder microbenchmark: medians over %d interleaved rounds; chain\n"
              "_mul_scalar/_plus_scalar/relu on a (32,32) float32 input; executor cache of %zu entries;\n"
              "wall clock below 1,000 ops, thread CPU time from 1,000 ops; clock-read cost subtracted\n\n",
              rounds, cache.size());
  std::printf("every trace (cache-hit path):\n");
  std::printf("%8s | %12s | %10s | %9s | %12s | %11s\n", "ops", "ns/op record", "ns/op hash", "ns/lookup",
              "lookup ns/op", "clear ns/op");
  std::printf("---------+--------------+------------+-----------+--------------+------------\n");
  for (auto& S : all) {
    double lk = median(S->lookup);
    std::printf("%8zu | %12.1f | %10.1f | %9.1f | %12.3f | %11.1f\n", S->n, median(S->record), median(S->hash), lk,
                lk / S->n, median(S->clear));
  }
  std::printf("\nonce per new graph (cache-miss path), per op of the sequence:\n");
  std::printf("%8s | %11s | %13s | %27s\n", "ops", "lower ns/op", "compile ns/op", "explain ns/op (256 entries)");
  std::printf("---------+-------------+---------------+----------------------------\n");
  for (auto& S : all)
    std::printf("%8zu | %11.1f | %13.1f | %27.1f\n", S->n, median(S->lower), median(S->compile),
                median(S->explain));

  // Position check: each tenth of the longest trace timed separately. A per-op cost that grew
  // with the number of ops already recorded would make the later tenths slower.
  {
    size_t n = std::max<size_t>(100, all.back()->n);
    size_t reps = std::max<size_t>(51, static_cast<size_t>(budget * 1e6 / n));
    std::vector<std::vector<double>> tenth(10);
    double marks[11];
    for (size_t i = 0; i < reps; ++i) {
      record(t, sigs, kinds, ext, n, marks);
      t.clear();
      for (int k = 0; k < 10; ++k) tenth[k].push_back((marks[k + 1] - marks[k] - cpu_ov) / (n / 10));
    }
    std::printf("\nrecord ns/op by tenth of a %zu-op trace (flat = an op's cost does not depend on its position):\n ",
                n);
    for (int k = 0; k < 10; ++k) std::printf(" %.0f", median(tenth[k]));
    std::printf("\n");
  }
  const Series &lo = *all.front(), &hi = *all.back();
  std::printf("\nns/op ratio %zu ops / %zu ops: record %.2f, hash %.2f, lookup(per lookup) %.2f, lower %.2f, "
              "compile %.2f, explain %.2f\n",
              hi.n, lo.n, median(hi.record) / median(lo.record), median(hi.hash) / median(lo.hash),
              median(hi.lookup) / median(lo.lookup), median(hi.lower) / median(lo.lower),
              median(hi.compile) / median(lo.compile), median(hi.explain) / median(lo.explain));
  MXNDArrayFree(ext);
  return 0;
}
