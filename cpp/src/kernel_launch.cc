// Plans of graphs made only of our kernels: see kernel_launch.h (the launch itself is
// kernel_job.cc).
#include "kernel_launch.h"

#include <algorithm>
#include <cstdlib>

#include "json.h"
#include "launch_check.h"
#include "runtime.h"

namespace minpy {

namespace {

// The kernel library's entry points for a kind of program (cpp/kernels/fused_elemwise.cc,
// fc_op.cc, grad_sum.cc; named ones, created from the op's name too: multi_update.cc, step_ops.cc).
using ProgramCreate = void* (*)(int num_attrs, const char* const* keys, const char* const* vals);
using NamedCreate = void* (*)(const char* op, int num_attrs, const char* const* keys, const char* const* vals);
using StepOpCreate = void* (*)(const char* op, int num_attrs, const char* const* keys, const char* const* vals,
                               int ndim, const int64_t* shape, int* out_ndim, int64_t* out_shape);
using ProgramFree = void (*)(void* program);

struct Entries {
  void* create = nullptr;  // a ProgramCreate, NamedCreate or StepOpCreate, by kind
  ProgramFree free = nullptr;
  FusedProgramRun run = nullptr;
  bool found() const { return create && free && run; }
};

// Looked up until found, then kept (MXNet never unloads the library). GIL held.
const Entries& entries_of(Entries& e, const char* create, const char* free, const char* run) {
  if (!e.found()) {
    e.create = kernel_symbol(create);
    e.free = reinterpret_cast<ProgramFree>(kernel_symbol(free));
    e.run = reinterpret_cast<FusedProgramRun>(kernel_symbol(run));
  }
  return e;
}

const Entries& fused_entries() {
  static Entries e;
  return entries_of(e, "minpy_fused_program_create", "minpy_fused_program_free", "minpy_fused_program_run");
}

const Entries& fused_grad_entries() {
  static Entries e;
  return entries_of(e, "minpy_fused_grad_program_create", "minpy_fused_program_free", "minpy_fused_program_run");
}

const Entries& fc_entries() {
  static Entries e;
  return entries_of(e, "minpy_fc_program_create", "minpy_fc_program_free", "minpy_fc_program_run");
}

const Entries& fc_grad_entries() {
  static Entries e;
  return entries_of(e, "minpy_fc_program_create", "minpy_fc_program_free", "minpy_fc_grad_program_run");
}

const Entries& grad_sum_entries() {
  static Entries e;
  return entries_of(e, "minpy_grad_sum_program_create", "minpy_grad_sum_program_free", "minpy_grad_sum_program_run");
}

const Entries& update_entries() {
  static Entries e;
  return entries_of(e, "minpy_update_node_create", "minpy_update_plan_free", "minpy_update_node_run");
}

const Entries& step_op_entries() {
  static Entries e;
  return entries_of(e, "minpy_step_op_create", "minpy_step_op_free", "minpy_step_op_run");
}

// Concat along the first axis of row-major arrays: the inputs' elements one after the other.
// Its "program" is the number of inputs.
const char* concat_rows(const void* program, const float* const* in, const int64_t* in_sizes, float* const* out,
                        const int64_t* out_sizes) {
  const int64_t n = *static_cast<const int64_t*>(program);
  int64_t at = 0;
  for (int64_t j = 0; j < n; ++j) at += in_sizes[j];
  if (at != out_sizes[0]) return "Concat: the output size is not the inputs' sum";
  if (!out[0]) return nullptr;
  at = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::copy(in[j], in[j] + in_sizes[j], out[0] + at);
    at += in_sizes[j];
  }
  return nullptr;
}

using Shape = std::vector<int64_t>;

int64_t elems_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape parse_shape(const std::string& text) {  // "(2, 3)" -> {2, 3}
  Shape out;
  for (const char* p = text.c_str(); *p;) {
    if (*p >= '0' && *p <= '9') {
      char* end = nullptr;
      out.push_back(std::strtoll(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return out;
}

const JValue* str_attr(const JValue& node, const char* key) {
  const JValue* attrs = node.get("attrs");
  const JValue* v = attrs && attrs->kind == JValue::kObj ? attrs->get(key) : nullptr;
  return v && v->kind == JValue::kStr ? v : nullptr;
}

// The node's attributes (all strings), or false.
bool node_attrs(const JValue& node, std::vector<Attr>* out) {
  out->clear();
  if (const JValue* attrs = node.get("attrs"))
    for (const auto& kv : attrs->obj) {
      if (kv.second.kind != JValue::kStr) return false;
      out->push_back(Attr{kv.first, kv.second.str});
    }
  return true;
}

// The attributes as the kernel library's create functions take them.
struct CStrings {
  std::vector<const char*> keys, vals;
  explicit CStrings(const std::vector<Attr>& attrs) {
    for (const Attr& a : attrs) keys.push_back(a.key.c_str()), vals.push_back(a.val.c_str());
  }
  int size() const { return static_cast<int>(keys.size()); }
};

// `program` (from lib's create, or null) owned, freed by the library.
std::shared_ptr<void> owned(const Entries& lib, void* program) {
  return program ? std::shared_ptr<void>(program, lib.free) : nullptr;
}

std::shared_ptr<void> make_program(const Entries& lib, const std::vector<Attr>& attrs) {
  const CStrings c(attrs);
  return owned(lib, reinterpret_cast<ProgramCreate>(lib.create)(c.size(), c.keys.data(), c.vals.data()));
}

// The forward node of gradient node `node` (its one control dependency, before node `i`), or -1.
int forward_of(const JValue& node, int i) {
  const JValue* deps = node.get("control_deps");
  if (!deps || deps->kind != JValue::kArr || deps->arr.size() != 1) return -1;
  const int fwd = deps->arr[0].as_int();
  return fwd >= 0 && fwd < i ? fwd : -1;
}

// What planning one node needs: the node, its attributes and operands' shapes, what it reads
// (an earlier step's result or a launch input), and the shapes of every earlier node's operands
// (a gradient node's result has its forward's input shape). A kind's planner sets the step's
// program and run function and the node's result shapes; false: the graph keeps the CachedOp.
struct NodePlan {
  const JValue& node;
  int index;                                   // in the graph's node list
  const std::string& op;
  const std::vector<Attr>& attrs;
  const std::vector<Shape>& in;                // operand shapes
  const std::vector<std::vector<Shape>>& operand_shapes;  // of every node before this one
  const std::vector<std::pair<int, int>>& from;  // per operand: (step, k) or (-1, launch input)
  KernelLaunch& plan;
  int dev_id;
  KernelLaunch::Step& st;
  std::vector<Shape>& out;
};

bool plan_fused(NodePlan& p) {
  const Entries& fused = fused_entries();
  const JValue* nout = str_attr(p.node, "num_outputs");
  const JValue* shape = str_attr(p.node, "out_shape");
  if (!nout || !shape || std::atoi(nout->str.c_str()) < 1) return false;
  p.out.assign(std::atoi(nout->str.c_str()), parse_shape(shape->str));
  p.st.program = make_program(fused, p.attrs);
  p.st.run = fused.run;
  return true;
}

// [output gradients, forward inputs, forward outputs] -> the forward inputs' gradients
bool plan_fused_grad(NodePlan& p) {
  const Entries& grad = fused_grad_entries();
  const JValue* nin = str_attr(p.node, "num_inputs");
  const JValue* nout = str_attr(p.node, "num_outputs");
  const int fwd = forward_of(p.node, p.index);
  if (!grad.found() || fwd < 0 || !nin || !nout) return false;
  const size_t n_in = std::atoi(nin->str.c_str()), n_out = std::atoi(nout->str.c_str());
  if (p.operand_shapes[fwd].size() != n_in || p.in.size() != n_out + n_in + n_out) return false;
  p.out = p.operand_shapes[fwd];
  p.st.program = make_program(grad, p.attrs);
  p.st.run = grad.run;
  return true;
}

// Gradients summed (cpp/kernels/grad_sum.cc).
bool plan_grad_sum(NodePlan& p) {
  const Entries& lib = grad_sum_entries();
  if (!lib.found() || p.in.empty()) return false;
  for (const Shape& s : p.in)
    if (s != p.in[0]) return false;
  p.out = {p.in[0]};
  p.st.program = make_program(lib, p.attrs);
  p.st.run = lib.run;
  return true;
}

// _minpy_fc [X, W, (b)] -> Y; _minpy_fc_grad [dY, X, W, (Y)] -> [dX, dW, (db)]
bool plan_fc(NodePlan& p) {
  const bool grad = p.op == "_minpy_fc_grad";
  const Entries& fc = grad ? fc_grad_entries() : fc_entries();
  const JValue* hidden = str_attr(p.node, "num_hidden");
  const JValue* no_bias = str_attr(p.node, "no_bias");
  const JValue* flatten = str_attr(p.node, "flatten");
  const int64_t N = hidden ? std::atoll(hidden->str.c_str()) : 0;
  const size_t x = grad ? 1 : 0;
  const std::vector<Shape>& in = p.in;
  if (!fc.found() || N < 1 || in.size() < x + 2 || in[x].size() != 2 || in[x + 1] != Shape{N, in[x][1]} ||
      (flatten && flatten->str != "True" && flatten->str != "1"))
    return false;  // 2-D data only: the shapes our GEMMs were checked on
  const bool bias = !no_bias || (no_bias->str != "True" && no_bias->str != "1");
  if (grad) {
    p.out = {in[1], in[2]};
    if (bias) p.out.push_back({N});
  } else {
    p.out = {{in[0][0], N}};
  }
  p.st.program = make_program(fc, p.attrs);
  p.st.run = fc.run;
  return true;
}

// Along the first axis only: the inputs' rows in turn.
bool plan_concat(NodePlan& p) {
  const JValue* dim = str_attr(p.node, "dim");
  if (!dim || dim->str != "0" || p.in.empty() || p.in[0].empty()) return false;
  Shape joined = p.in[0];
  for (size_t j = 1; j < p.in.size(); ++j) {
    if (p.in[j].size() != joined.size()) return false;
    joined[0] += p.in[j][0];
  }
  p.out = {joined};
  p.st.program = std::make_shared<int64_t>(static_cast<int64_t>(p.st.in_elems.size()));
  p.st.run = concat_rows;
  return true;
}

// An update writing its weights and states in place: those must be launch inputs, marked written.
bool plan_update(NodePlan& p) {
  const Entries& lib = update_entries();
  if (!lib.found()) return false;
  const CStrings c(p.attrs);
  p.st.program = owned(lib, reinterpret_cast<NamedCreate>(lib.create)(p.op.c_str(), c.size(), c.keys.data(),
                                                                       c.vals.data()));
  p.st.run = lib.run;
  const JValue* nw = str_attr(p.node, "num_weights");
  const JValue* hyper = str_attr(p.node, "hyper_inputs");
  const int weights = nw ? std::atoi(nw->str.c_str()) : 0;
  const size_t arrays = p.from.size() - (hyper && hyper->str == "1" ? weights : 0);  // then (lr, wd, rescale)s
  if (weights < 1 || arrays > p.from.size() || arrays % weights) return false;
  const size_t stride = arrays / weights;
  for (size_t j = 0; j < arrays; ++j) {
    if (j % stride == 1) continue;  // the gradient: read; the weight and its states: written
    if (p.from[j].first >= 0) return false;  // written in place: a graph input
    p.plan.input_written[p.from[j].second] = 1;
  }
  p.out = {{1}};  // the placeholder head (graph.cc): not written
  return true;
}

// One of MXNet's small operators, by the kernel library's stand-in, if it agrees with MXNet's
// operator on these shapes and attributes (launch_check.h).
bool plan_step_op(NodePlan& p) {
  const Entries& lib = step_op_entries();
  if (!lib.found() || p.in.empty()) return false;
  Shape shape = p.in[0];
  if (p.op.compare(0, 10, "_backward_") == 0) {  // its result: the gradient of its forward's input
    const int fwd = forward_of(p.node, p.index);
    if (fwd < 0 || p.operand_shapes[fwd].empty()) return false;
    shape = p.operand_shapes[fwd][0];
  }
  if (shape.size() > 8) return false;
  const CStrings c(p.attrs);
  int out_ndim = 0;
  int64_t out_dims[8];
  p.st.program = owned(lib, reinterpret_cast<StepOpCreate>(lib.create)(
                                p.op.c_str(), c.size(), c.keys.data(), c.vals.data(),
                                static_cast<int>(shape.size()), shape.data(), &out_ndim, out_dims));
  if (!p.st.program) return false;
  p.st.run = lib.run;
  p.out = {Shape(out_dims, out_dims + out_ndim)};
  return step_op_agrees(p.op, p.attrs, p.in, p.out[0], p.st.program.get(), lib.run, p.dev_id);
}

bool plan_node(NodePlan& p) {
  if (p.op == "_minpy_fused_elemwise") return plan_fused(p);
  if (p.op == "_backward__minpy_fused_elemwise") return plan_fused_grad(p);
  if (p.op == "elemwise_sum") return plan_grad_sum(p);
  if (p.op == "_minpy_fc" || p.op == "_minpy_fc_grad") return plan_fc(p);
  if (p.op == "Concat") return plan_concat(p);
  if (p.op.compare(0, 12, "_minpy_multi") == 0) return plan_update(p);
  return plan_step_op(p);
}

// Heads: results written into the launch's output arrays, each result at most one head.
bool place_heads(const JValue& heads, const std::vector<int>& step_of, const std::vector<int64_t>& head_elems,
                 KernelLaunch* plan) {
  const int num_nodes = static_cast<int>(step_of.size());
  for (size_t h = 0; h < heads.arr.size(); ++h) {
    const JValue& e = heads.arr[h];
    if (e.kind != JValue::kArr || e.arr.size() < 2) return false;
    const int node = e.arr[0].as_int(), k = e.arr[1].as_int();
    if (node < 0 || node >= num_nodes || step_of[node] < 0) return false;  // a graph input returned as is
    auto& outs = plan->steps[step_of[node]].outputs;
    if (k < 0 || k >= static_cast<int>(outs.size()) || outs[k].kind != KernelSlot::kNone) return false;
    if (plan->steps[step_of[node]].out_elems[k] != head_elems[h]) return false;
    outs[k] = KernelSlot{KernelSlot::kHead, static_cast<int>(h)};
  }
  return true;
}

// Where each operand is read from: an input, a head, or a buffer of the launch for a result no
// head holds.
void place_operands(const std::vector<std::vector<std::pair<int, int>>>& operands, KernelLaunch* plan) {
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (const auto& f : operands[s]) {
      if (f.first < 0) {
        plan->steps[s].inputs.push_back(KernelSlot{KernelSlot::kInput, f.second});
        continue;
      }
      KernelLaunch::Step& from = plan->steps[f.first];
      KernelSlot& made = from.outputs[f.second];
      if (made.kind == KernelSlot::kNone) {
        made = KernelSlot{KernelSlot::kTemp, static_cast<int>(plan->temp_elems.size())};
        plan->temp_elems.push_back(from.out_elems[f.second]);
      }
      plan->steps[s].inputs.push_back(made);
    }
}

}  // namespace

std::shared_ptr<const KernelLaunch> plan_kernel_launch(const std::string& json, const std::vector<int>& input_values,
                                                       const std::vector<Shape>& input_shapes,
                                                       const std::vector<int64_t>& head_elems, bool all_cpu_float32,
                                                       int dev_id) {
  if (!all_cpu_float32 || !kernel_jobs_work() || input_shapes.size() != input_values.size()) return nullptr;
  if (!fused_entries().found()) return nullptr;
  JValue g;
  try {
    g = parse_json(json);
  } catch (const std::exception&) {
    return nullptr;
  }
  const JValue* nodes = g.get("nodes");
  const JValue* heads = g.get("heads");
  if (!nodes || !heads || nodes->kind != JValue::kArr || heads->kind != JValue::kArr ||
      head_elems.size() != heads->arr.size())
    return nullptr;
  const int num_nodes = static_cast<int>(nodes->arr.size());
  auto plan = std::make_shared<KernelLaunch>();
  plan->dev_id = dev_id;
  plan->head_elems = head_elems;
  // Per node: its step (-1 for a variable), the shapes of its operands and of its results; per
  // step operand, an earlier step's result (step, k) or a graph input (-1, index into input_pos).
  std::vector<int> step_of(num_nodes, -1), input_of(num_nodes, -1);  // input_of: a variable's CachedOp position
  std::vector<std::vector<Shape>> operand_shapes(num_nodes), result_shapes(num_nodes);
  std::vector<std::vector<std::pair<int, int>>> operands;
  for (int i = 0; i < num_nodes; ++i) {
    const JValue& node = nodes->arr[i];
    const JValue* op = node.get("op");
    if (!op || op->kind != JValue::kStr) return nullptr;
    if (op->str == "null") {  // a graph input: variables are named "v<value>" (graph.cc)
      const JValue* name = node.get("name");
      if (!name || name->kind != JValue::kStr || name->str.size() < 2 || name->str[0] != 'v') return nullptr;
      auto at = std::find(input_values.begin(), input_values.end(), std::atoi(name->str.c_str() + 1));
      if (at == input_values.end()) return nullptr;
      input_of[i] = static_cast<int>(at - input_values.begin());
      result_shapes[i] = {input_shapes[input_of[i]]};
      continue;
    }
    KernelLaunch::Step st;
    std::vector<std::pair<int, int>> from;
    const JValue* ins = node.get("inputs");
    if (!ins || ins->kind != JValue::kArr) return nullptr;
    for (const JValue& e : ins->arr) {
      if (e.kind != JValue::kArr || e.arr.size() < 2) return nullptr;
      const int src = e.arr[0].as_int(), k = e.arr[1].as_int();
      if (src < 0 || src >= i || k < 0 || k >= static_cast<int>(result_shapes[src].size()))
        return nullptr;  // the JSON lists nodes in topological order
      operand_shapes[i].push_back(result_shapes[src][k]);
      st.in_elems.push_back(elems_of(result_shapes[src][k]));
      if (step_of[src] >= 0) {
        from.push_back({step_of[src], k});
        continue;
      }
      const int pos = input_of[src];
      auto seen = std::find(plan->input_pos.begin(), plan->input_pos.end(), pos);
      const int index = static_cast<int>(seen - plan->input_pos.begin());  // (the new last one if not seen)
      if (seen == plan->input_pos.end()) {
        plan->input_pos.push_back(pos);
        plan->input_elems.push_back(elems_of(input_shapes[pos]));
        plan->input_written.push_back(0);
      }
      from.push_back({-1, index});
    }
    std::vector<Attr> attrs;
    if (!node_attrs(node, &attrs)) return nullptr;
    NodePlan p{node, i, op->str, attrs, operand_shapes[i], operand_shapes, from, *plan, dev_id, st, result_shapes[i]};
    if (!plan_node(p) || !st.program) return nullptr;
    for (const Shape& o : result_shapes[i]) st.out_elems.push_back(elems_of(o));
    st.outputs.assign(st.out_elems.size(), KernelSlot{});
    step_of[i] = static_cast<int>(plan->steps.size());
    plan->steps.push_back(std::move(st));
    operands.push_back(std::move(from));
  }
  if (plan->steps.empty() || !place_heads(*heads, step_of, head_elems, plan.get())) return nullptr;
  place_operands(operands, plan.get());
  return plan;
}

}  // namespace minpy
