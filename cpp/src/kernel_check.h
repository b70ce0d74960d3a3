// What the bit checks of our rewrites share (projections.cc, exact_fc.cc): arrays made from
// host data, MXNet's operator run on them, and the random draws the checks compare on.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aval.h"
#include "mxapi.h"
#include "nogil.h"
#include "trace.h"

namespace minpy {

// The attributes as one string, whatever order the call gave them in (a cache key).
std::string canonical_attrs(std::vector<Attr> attrs);

// A new array of `a` holding `data` (null on failure); freed with `held`.
NDArrayHandle array_of(const AVal& a, const float* data, OwnedArrays* held);

// A 1-D array of `like`'s dtype and context holding a zero, then `x`: views of it from
// element 1 on are unaligned, as an eager call's data may be (null on failure).
NDArrayHandle padded_array(const std::vector<float>& x, const AVal& like, OwnedArrays* held);

// A (rows, in) view of 1-D `flat` from element `start` on (null on failure).
NDArrayHandle block_view(NDArrayHandle flat, int64_t start, int64_t rows, int64_t in, OwnedArrays* held);

// A copy of `h`'s floats (false on failure).
bool read_floats(NDArrayHandle h, size_t size, std::vector<float>* out);

// MXNet's operator on `inputs` (under the thread's autograd state): its first result, held by
// `held` (null on any failure).
NDArrayHandle invoke_op(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
                        std::vector<NDArrayHandle> inputs, OwnedArrays* held);

// MXNet's operator on `inputs`, its first result copied into `out` (false on any failure).
bool run_op(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
            std::vector<NDArrayHandle> inputs, size_t out_size, std::vector<float>* out, OwnedArrays* held);

// `creator` with `keys`/`vals` on the one input x (of `a`), forward and backward under autograd
// with head gradient g and the training flag `training`: its output and x's gradient (false on
// any failure).
bool forward_backward(AtomicSymbolCreator creator, std::vector<const char*> keys, std::vector<const char*> vals,
                      const AVal& a, const std::vector<float>& x, const std::vector<float>& g, bool training,
                      std::vector<float>* y, std::vector<float>* dx);

// Whether a and b hold the same floats bit for bit (NaN payloads and zero signs included).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

// Whether a check must wait: it runs MXNet's operators, and an error an earlier op left in
// MXNet's engine may reach them (through the shared temp workspace) and be read by the check,
// which clears it for every array holding it: eager code would still raise it at its own first
// read (fuzz seed 12113657: a float16 argsort that failed, then a FullyConnected whose check
// consumed argsort's error). So while errors may be pending (failures.h) no check runs: the
// caller uses MXNet's operator this time, and the check is asked for again at the next compile.
bool checks_deferred();

// check() once per process for `key` (its result remembered, false included); a thread asking
// while another runs the check runs it too (it waits for MXNet, so not under the lock). False,
// remembering nothing, while checks_deferred().
bool checked_once(const std::string& key, const std::function<bool()>& check);

// The draws the checks compare on. kWide: values of many magnitudes and both signs, so an
// output summed in another order (or with and without FMA) differs in its last bits.
// kUnderflow: subnormal inputs whose every product underflows to a signed zero, so outputs
// are zeros whose signs show how the kernel accumulates.
enum class Draw { kWide, kUnderflow };

class DrawSource {
 public:
  explicit DrawSource(uint64_t seed) : state_(0x2545f4914f6cdd1dULL ^ seed) {}
  float value(Draw draw) {
    state_ = mix64(state_);
    const float unit = static_cast<float>(state_ >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
    if (draw == Draw::kUnderflow) return std::ldexp(unit, -130);  // |x * w| < 2^-260 rounds to a signed zero
    return std::ldexp(unit, static_cast<int>((state_ >> 8) % 9) - 4);
  }
  // A bias: a wide value, or a signed zero on underflow draws.
  float bias(Draw draw) { return draw == Draw::kWide ? value(draw) : std::copysign(0.0f, value(draw)); }

 private:
  uint64_t state_;
};

}  // namespace minpy
