// Abstract evaluation of one operator call: output shapes, dtypes and context
// from the inputs' abstract values, without running anything.
//
// The first call with a given signature (op, attributes, input avals) asks
// MXNet's own shape and type inference on a one-node symbol; the answer is
// cached, so a repeated op costs one hash-map probe.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace.h"

namespace minpy {

struct OpSignature {
  bool recordable = true;
  std::string why_not;             // reason the op must run eagerly
  std::vector<AVal> outs;
  std::vector<int> mutable_inputs; // input positions the op updates in place (aux states)
  // Its trial run (infer.cc) failed while it ran: recorded as an op that can fail (failures.h),
  // so its trace runs op by op and the error reaches exactly the arrays it reaches eagerly.
  bool fails_while_running = false;
  // Its trial was put off: a run-time error is pending in MXNet, unread (failures.h suspects),
  // which the trial could inherit through MXNet's shared workspace and, reading it, clear.
  // Recorded as without a trial meanwhile; tried at a later call of the signature.
  bool untried = false;
};

// Raised when the inputs cannot be given to the op (MXNet's inference refused them).
struct OpInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SignatureCache {
 public:
  // attr_hash covers keys and values; np_shape selects MXNet's shape semantics.
  const OpSignature& lookup(const OpInfo& op, const std::vector<Attr>& attrs, uint64_t attr_hash,
                            const std::vector<const AVal*>& ins, bool np_shape);
  size_t size() const { return cache_.size(); }
  uint64_t inferences = 0;  // MXNet inference calls made (cache misses)
  static constexpr size_t kMaxEntries = 1 << 14;

 private:
  OpSignature infer(const OpInfo& op, const std::vector<Attr>& attrs, const std::vector<const AVal*>& ins,
                    bool np_shape);
  void try_op(const OpInfo& op, const std::vector<Attr>& attrs, const std::vector<const AVal*>& ins, bool np_shape,
              OpSignature* sig);
  std::unordered_map<uint64_t, std::unique_ptr<OpSignature>> cache_;
};

// Context an op with no array inputs runs on, read from its `ctx` attribute.
void parse_ctx_attr(const std::vector<Attr>& attrs, int* dev_type, int* dev_id);

}  // namespace minpy
