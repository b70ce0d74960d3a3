#include "trace.h"

#include "mxapi.h"

namespace minpy {

bool adds_to_gradient(NDArrayHandle h) {
  int req = 0;
  return !autograd_peek_works() || (autograd_role(h, &req) == AutogradRole::kVariable && req == 3 /* kAddTo */);
}

bool is_batch_norm(const std::string& n) {
  return n == "BatchNorm" || n == "BatchNorm_v1" || n == "_contrib_SyncBatchNorm" || n == "_contrib_BatchNormWithReLU";
}

void Trace::start(bool rec, bool train, bool np) {
  recording = rec, training = train, np_shape = np;
  key = Key128();
  key.add(0x5eed0000ULL | (rec ? 1 : 0) | (train ? 2 : 0) | (np ? 4 : 0));
  for (size_t id = 0; id < values.size(); ++id)
    if (values[id].node < 0) key_external(static_cast<int>(id));
}

// An external input's part of the key, and (recording) its gradient role.
void Trace::key_external(int id) {
  Value& v = values[id];
  key.add(0xE0000000ULL + static_cast<uint64_t>(id));
  key.add(hash_aval(v.aval));
  v.adds_gradient = recording && v.ext && adds_to_gradient(v.ext);
  if (v.adds_gradient) key.add(0xADD00000ULL + static_cast<uint64_t>(id));
}

int Trace::value_of(NDArrayHandle h, const AVal* known_aval, Slot** slot_out) {
  auto it = slots.find(h);
  if (it != slots.end()) {
    if (slot_out) *slot_out = &it->second;
    return it->second.value;
  }
  Value v;
  v.aval = known_aval ? *known_aval : aval_of(h);
  v.ext = h;
  v.home = h;
  int id = static_cast<int>(values.size());
  values.push_back(v);
  key_external(id);
  Slot& s = slots[h];
  s.value = id;
  s.ext_value = id;
  if (slot_out) *slot_out = &s;
  return id;
}

int Trace::add_node(const OpInfo* op, std::vector<Attr>&& attrs, uint64_t attr_hash, const std::vector<int>& in,
                    const std::vector<AVal>& outs, const std::vector<int>& mutated_inputs, int loc) {
  Node n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.in = in;
  n.loc = loc;
  int node_id = static_cast<int>(nodes.size());
  int first = static_cast<int>(values.size());
  n.content = mix64(op->hash ^ mix64(attr_hash));
  n.out.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    n.content = mix64(n.content ^ hash_aval(outs[i]));
    Value v;
    v.aval = outs[i];
    v.node = node_id;
    v.index = static_cast<int>(i);
    n.out.push_back(static_cast<int>(values.size()));
    values.push_back(v);
  }
  for (int mi : mutated_inputs) n.mutated.push_back(in[mi]);
  can_fail |= op->can_fail;
  zero_grad_ops |= op->zero_grad_inputs != 0;
  key.add(op->hash);
  key.add(attr_hash);
  for (int v : in) key.add(static_cast<uint64_t>(v) + 0x1000);
  key.add(0xA000 + outs.size());
  n.position = key.a;
  nodes.push_back(std::move(n));
  return first;
}

NDArrayHandle Trace::canonical_grad(NDArrayHandle h) const {
  auto it = grad_buffers.find(chunk_of(h));
  return it != grad_buffers.end() && same_array(h, it->second) ? it->second : h;
}

Slot& Trace::bind(NDArrayHandle h, int value, bool ours, void* owner) {
  Slot& s = slots[h];
  s = Slot{value, -1, owner, ours, false, false};
  if (!values[value].home) values[value].home = h;
  return s;
}

}  // namespace minpy
