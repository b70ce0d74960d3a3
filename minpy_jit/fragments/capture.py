"""Capture: one run of a fragment's statements, checked so that it can be replayed.

The statements run for real, under the recorder (so the run's result is right
whatever this module decides). Every call, attribute read, index and in-place
store goes through the helpers below (codegen.py rewrote them), which

* build the guard tree: everything the run read from its inputs -- arrays,
  Python values, attributes of objects reached from the inputs, the state of
  each Gluon block it called -- with how to read it again on the next call;
* refuse the capture (the run still completes, correctly) when it does
  something a replay would not repeat: calling a Python function whose effects
  are unknown, changing a Python object it did not create, calling a block
  defined outside mxnet.gluon, and so on. The refusal names the line, which
  becomes a graph break (fragment.py).

What the recorder itself sees -- array data read, a flush, an eager op, an array
read or written that no input reaches -- is checked in C++ (fragment.cc) when
the capture ends.
"""
import builtins
import cmath
import math
import operator
import sys
import threading
import types

import numpy as np
from mxnet.context import Context
from mxnet.gluon.block import Block
from mxnet.gluon.parameter import Parameter
from mxnet.gluon.trainer import Trainer
from mxnet.ndarray.ndarray import NDArray
from mxnet.optimizer import NAG, SGD, AdaDelta, AdaGrad, Ftrl, RMSProp, Signum, Updater

from .. import _core

from .analyze import _is_mxnet_op
from .codegen import UNBOUND

try:
    from mxnet.numpy import ndarray as _np_ndarray
    ARRAY_TYPES = (NDArray, _np_ndarray)
except ImportError:  # pragma: no cover
    ARRAY_TYPES = (NDArray,)

_tls = threading.local()

SCALAR_TYPES = frozenset([int, float, bool, complex, str, bytes, type(None), type(Ellipsis), range, slice])
MAX_GUARD_NODES = 20000

# Builtins a fragment may call (pure, given their arguments).
PURE_BUILTINS = {id(f) for f in (
    len, range, min, max, abs, int, float, bool, str, tuple, list, dict, set, frozenset, zip, enumerate,
    isinstance, issubclass, sum, round, divmod, pow, reversed, sorted, any, all, slice, type, repr, format,
    chr, ord, callable, complex, hasattr, getattr)}
PURE_MODULES = {"math", "cmath", "_operator", "operator"}
# mx.nd functions that are not array ops of the recorder (or call back into Python)
REFUSED_MXNET = {"save", "load", "load_frombuffer", "waitall", "foreach", "while_loop", "cond", "from_numpy",
                 "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "imdecode", "Custom"}
PURE_MXNET_ELSEWHERE = {("mxnet.context", n) for n in ("cpu", "gpu", "cpu_pinned", "current_context", "num_gpus")} | {
    ("mxnet.autograd", n) for n in ("is_recording", "is_training", "record", "pause", "train_mode", "predict_mode")}
# NDArray methods refused (they reach Python state or the autograd tape outside an op)
REFUSED_ARRAY_METHODS = {"attach_grad", "detach", "asnumpy", "asscalar", "item", "tolist",
                         "wait_to_read", "wait_to_write", "copyto_host", "_fresh_grad", "__setstate__",
                         "as_np_ndarray", "as_nd_ndarray", "tostype", "to_dlpack_for_read",
                         "to_dlpack_for_write"}
# methods of Python containers
MUTATORS = {
    list: {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__",
           "__delitem__", "__iadd__", "__imul__"},
    dict: {"pop", "popitem", "clear", "update", "setdefault", "__setitem__", "__delitem__", "__ior__"},
    set: {"add", "discard", "remove", "pop", "clear", "update", "difference_update", "intersection_update",
          "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__"},
}
PURE_METHODS = {
    list: {"index", "count", "copy", "__len__", "__getitem__", "__contains__"},
    dict: {"get", "keys", "values", "items", "copy", "__len__", "__getitem__", "__contains__"},
    set: {"copy", "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset",
          "isdisjoint", "__len__", "__contains__"},
    tuple: {"index", "count", "__len__", "__getitem__", "__contains__"},
}
# Attributes of Gluon blocks that count calls (RecurrentCell._counter names symbols only):
# not guarded; a replay steps them as the run did.
BLOCK_COUNTERS = {"_counter"}
# Block attributes whose contents are guarded through other entries, or do not influence a call
BLOCK_SKIPPED = {"_params", "_scope", "_cached_op_args", "_flags", "_backend_opts", "_callback"}

# Optimizers whose update reads none of the counters Trainer.step advances (with no lr_scheduler),
# nor any other attribute it changes (a change refuses the capture): their update is a function
# of the arrays and of hyperparameters the guards hold, so a captured step replays exactly, the
# counters stepped as effects. (Adam, Adamax, Nadam, FTML and LAMB read the update count t.)
TRAINER_OPTIMIZERS = (SGD, NAG, Signum, RMSProp, AdaGrad, AdaDelta, Ftrl)
# Plain attributes of the trainer, its optimizer and updater a step changes: the call counters
# (stepped as effects), the gradient rescale it sets from the batch size (set as an effect).
TRAINER_COUNTERS = {"num_update"}
TRAINER_SET_EACH_STEP = {"rescale_grad"}

AUG = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
       "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
       ">>=": operator.irshift, "|=": operator.ior, "^=": operator.ixor, "&=": operator.iand,
       "@=": operator.imatmul}


class Refusal(Exception):
    pass


def is_array(x):
    return isinstance(x, ARRAY_TYPES)


def is_value(x):
    """Immutable values guarded by equality (and returned as constants)."""
    t = type(x)
    if t in SCALAR_TYPES:
        return True
    if isinstance(x, (np.generic, np.dtype, Context)):
        return True
    return False


# op_functions.py's stand-in for a generated mx.nd op function: the function it stands for, to a capture
_OP_FUNCTION = _core.OpFunction


def is_identity_object(x):
    return isinstance(x, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, _OP_FUNCTION,
                          types.MethodDescriptorType, types.WrapperDescriptorType, np.ufunc)) or x is UNBOUND


class Node:
    """A guard tree node (see fragment.h's GuardNode)."""

    __slots__ = ("access", "arg", "kind", "value", "expected", "type", "len", "children", "attrs", "keep", "what",
                 "where", "path")

    def __init__(self, access, arg, kind, value, path, what, expected=None, typ=None, length=0, where=""):
        self.access, self.arg, self.kind, self.value = access, arg, kind, value
        self.path, self.what, self.where = path, what, where
        self.expected, self.type, self.len = expected, typ, length
        self.children = []
        self.attrs = {}
        self.keep = -1

    def emit(self, out):
        out.append((self.access, self.arg, self.kind, self.expected, self.type, self.len, len(self.children),
                    self.keep, self.what, self.where))
        for c in self.children:
            c.emit(out)


def current():
    return getattr(_tls, "cap", None)


class Capture:
    """The checks and guards of one capture run (active on its thread between enter/leave)."""

    def __init__(self, fragment, args, strict=False):
        self.fragment = fragment
        self.strict = strict     # ahead of time: stop at the first refusal, before the operation runs
        self.prov = {}           # id(object) -> Node: objects reached from the inputs
        self.keep_alive = []
        self.refusal = None      # (reason, line)
        self.transient_subject = None  # id of the object a refusal may be a first call of (see refuse)
        self.nodes = 0
        self.nkeep = 0
        self.blocks = {}         # id(block) -> (node, block, snapshot of every block below it)
        self.effects = {}        # (id(node), attr) -> [node, attr, delta]
        self.stepped = False     # a Trainer.step ran (a backward() after it is refused)
        self.roots = [self.node("root", i, value, name, fragment.describe_input(name), where=fragment.input_where(name))
                      for i, (name, value) in enumerate(zip(fragment.inputs, args))]

    # ------------------------------------------------------------ guard tree

    def node(self, access, arg, value, path, what, depth=0, where=""):
        self.nodes += 1
        if self.nodes > MAX_GUARD_NODES:
            raise Refusal("its inputs hold more than %d values to guard" % MAX_GUARD_NODES)
        t = type(value)
        if is_array(value):
            return Node(access, arg, "array", value, path, what, where=where)
        if is_value(value):
            return Node(access, arg, "value", value, path, what, expected=value, typ=t, where=where)
        if (t is tuple or t is list) and depth < 16:
            n = Node(access, arg, "seq", value, path, what, typ=t, length=len(value), where=where)
            for i, item in enumerate(value):
                p = "%s[%d]" % (path, i)
                n.children.append(self.node("index", i, item, p, "`%s`" % p, depth + 1, where))
            if t is list:
                self.register(n, value)
            return n
        if t is dict and depth < 16 and all(is_value(k) for k in value):
            n = Node(access, arg, "dict", value, path, what, typ=t, length=len(value), where=where)
            for k, item in value.items():
                p = "%s[%r]" % (path, k)
                n.children.append(self.node("entry", k, item, p, "`%s`" % p, depth + 1, where))
            self.register(n, value)
            return n
        if is_identity_object(value):
            n = Node(access, arg, "id", value, path, what, expected=value, where=where)
        else:
            n = Node(access, arg, "type", value, path, what, typ=t, where=where)
        self.register(n, value)
        return n

    def register(self, n, obj):
        if id(obj) not in self.prov:
            self.prov[id(obj)] = n
            self.keep_alive.append(obj)

    def attr(self, parent, name, value, access="attr"):
        """A guard for `parent.name` (read now as `value`), added once."""
        key = (access, name)
        child = parent.attrs.get(key)
        if child is None:
            p = "%s.%s" % (parent.path, name)
            child = self.node(access, name, value, p, "`%s`" % p, where=self.where())
            parent.attrs[key] = child
            parent.children.append(child)
        return child

    def keep(self, n):
        if n.keep < 0:
            n.keep = self.nkeep
            self.nkeep += 1
        return n.keep

    # ------------------------------------------------------------ refusals

    def where(self):
        """file:line of the statement running in the capture body."""
        line = self.line()
        return "%s:%s" % (self.fragment.short_file, line if line else "?")

    def line(self):
        code = self.fragment.capture_code
        f = sys._getframe(1)
        while f is not None:
            if f.f_code is code:
                return f.f_lineno
            f = f.f_back
        return None

    def refuse(self, reason, transient=None):
        """The capture cannot be replayed. `transient`: the object (a block, a trainer) whose
        first call or step the reason may be (its initialisation), so the statement is split off
        only if that happens again for the same object -- a second new trainer is no evidence."""
        if self.refusal is None:
            self.refusal = (reason, self.line())
            self.transient_subject = id(transient) if transient is not None else None
        if self.strict:
            raise Refusal(reason)

    # ------------------------------------------------------------ calls

    def check_call(self, fn):
        """None if calling fn is fine; else the refusal reason."""
        if type(fn) is _OP_FUNCTION:
            fn = fn.__wrapped__
        if id(fn) in PURE_BUILTINS and getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
            return None
        if isinstance(fn, types.FunctionType):
            if getattr(fn, "__minpy_jit_function__", False):
                return "calls %s, another @minpy_jit.function" % fn.__qualname__
            mod = fn.__module__ or ""
            if (mod, fn.__name__) in PURE_MXNET_ELSEWHERE:
                return None
            if _is_mxnet_op(fn):
                if fn.__name__ in REFUSED_MXNET:
                    return "calls %s.%s (not an array op)" % (mod, fn.__name__)
                return None
            return "calls %s, a Python function whose effects are unknown" % fn.__qualname__
        if isinstance(fn, types.BuiltinFunctionType):
            if fn.__self__ is None or isinstance(fn.__self__, types.ModuleType):
                mod = getattr(fn, "__module__", None) or getattr(fn.__self__, "__name__", "")
                if mod in PURE_MODULES:
                    return None
            return "calls %s, a built-in function not known to be pure" % getattr(fn, "__qualname__", fn)
        if isinstance(fn, type):
            if fn in (int, float, bool, str, tuple, list, dict, set, frozenset, slice, range, complex, zip,
                      enumerate, reversed) or issubclass(fn, np.generic):
                return None
            return "constructs a %s object" % fn.__name__
        if getattr(fn, "__minpy_jit_function__", False):
            return "calls another @minpy_jit.function"
        return "calls %r, whose effects are unknown" % (fn,)

    def call_block(self, block, args, kwargs):
        n = self.prov.get(id(block))
        if n is None:
            self.refuse("calls a Gluon block the fragment did not get from its inputs")
            return block(*args, **kwargs)
        why = _untrusted_block(block)
        if why:
            self.refuse(why)
            return block(*args, **kwargs)
        if id(block) not in self.blocks:
            self.add_block_guards(n, block)
            self.blocks[id(block)] = (n, block)
        before = _snapshot(block)
        out = block(*args, **kwargs)
        self.block_effects(n, block, before, _snapshot(block))
        return out

    def add_block_guards(self, n, block):
        """Guards on a block's state as its forward reads it: every plain attribute of the
        block and of the blocks below it, its parameters' arrays, hooks, hybridization."""
        for k, v in list(vars(block).items()):
            if k in BLOCK_COUNTERS or k in BLOCK_SKIPPED:
                continue
            if k in ("_forward_hooks", "_forward_pre_hooks"):
                if len(v):
                    self.refuse("block %s has forward hooks (Python this pass cannot see)" % n.path)
                c = Node("item", k, "len", v, "%s.%s" % (n.path, k), "hooks of `%s`" % n.path, length=len(v))
                n.children.append(c)
            elif k == "_reg_params":
                c = Node("item", k, "dict", v, "%s.%s" % (n.path, k), "parameters of `%s`" % n.path,
                         typ=type(v), length=len(v))
                n.children.append(c)
                for name, p in v.items():
                    pc = Node("entry", name, "type", p, "%s.%s" % (n.path, name), "parameter `%s.%s`" % (n.path, name),
                              typ=type(p))
                    c.children.append(pc)
                    self.add_param_guards(pc, p)
            elif k == "_children":
                c = Node("item", k, "dict", v, "%s.%s" % (n.path, k), "children of `%s`" % n.path,
                         typ=type(v), length=len(v))
                n.children.append(c)
                for name, child in v.items():
                    cc = Node("entry", name, "type", child, "%s.%s" % (n.path, name), "block `%s.%s`" % (n.path, name),
                              typ=type(child))
                    c.children.append(cc)
                    self.register(cc, child)
                    self.add_block_guards(cc, child)
            elif is_value(v) or is_array(v) or (type(v) is tuple and all(is_value(x) for x in v)):
                p = "%s.%s" % (n.path, k)
                n.children.append(self.node("item", k, v, p, "`%s`" % p))

    def add_param_guards(self, pn, p):
        self.register(pn, p)
        data = vars(p).get("_data")
        c = self.node("item", "_data", data, "%s._data" % pn.path, "arrays of %s" % pn.what)
        pn.children.append(c)
        pn.attrs[("item", "_data")] = c
        st = vars(p).get("_stype")
        pn.children.append(self.node("item", "_stype", st, "%s._stype" % pn.path, "storage of %s" % pn.what))

    def block_effects(self, n, block, before, after):
        for bid, (blk, attrs) in after.items():
            old = before.get(bid)
            if old is None:
                self.refuse("calling `%s` created a block" % n.path)
                continue
            old_attrs = old[1]
            if set(old_attrs) != set(attrs):
                self.refuse("calling `%s` added or removed attributes of a block" % n.path, transient=blk)
                continue
            for k, v in attrs.items():
                ov = old_attrs[k]
                if ov is v or (is_value(v) and type(v) is type(ov) and v == ov):
                    continue
                if k in BLOCK_COUNTERS and type(v) is int and type(ov) is int:
                    node = n if blk is block else self._block_node(blk)
                    if node is None:
                        self.refuse("calling `%s` changed a counter of a block it cannot find again" % n.path)
                        continue
                    e = self.effects.setdefault(("attr", id(node), k), ["attr", node, k, 0])
                    e[3] += v - ov
                    continue
                self.refuse("calling `%s` changed the block attribute `%s`" % (n.path, k), transient=blk)

    def _block_node(self, blk):
        n = self.prov.get(id(blk))
        return n

    # ------------------------------------------------------------ Trainer.step

    def call_trainer_step(self, trainer, n, args, kwargs):
        """Trainer.step modelled as a known call: guards on everything it reads (its
        parameters' arrays and gradients, their fresh-gradient flags, the optimizer's and
        updater's attributes and states), its update ops recorded, and what else it changes
        -- the update counters and the fresh-gradient flags -- kept as effects of the replay."""
        why = _trainer_unsupported(trainer, args, kwargs) if n is not None else "calls a Trainer not from the inputs"
        if why:
            self.refuse("calls Trainer.step(): %s" % why,
                        transient=trainer if why.startswith("the trainer is initialised") else None)
            return trainer.step(*args, **kwargs)
        if id(trainer) in self.blocks:
            self.refuse("calls Trainer.step() twice")
            return trainer.step(*args, **kwargs)
        fresh = self.add_trainer_guards(n, trainer)
        self.blocks[id(trainer)] = (n, trainer)
        self.stepped = True
        before = _trainer_snapshot(trainer)
        _core.fragment_capture_allow_grad_state(True)
        try:
            out = trainer.step(*args, **kwargs)
        finally:
            _core.fragment_capture_allow_grad_state(False)
        after = _trainer_snapshot(trainer)
        self.trainer_effects(n, trainer, before, after)
        for node, arr in fresh:
            if arr._fresh_grad:
                self.refuse("Trainer.step() left a fresh gradient flag set")
            self.effects[("cleargrad", id(node), None)] = ["cleargrad", node, None, 0]
        return out

    def _items(self, parent, obj, names):
        """Guards on plain attributes of obj (values, arrays, containers of them), by name."""
        out = {}
        d = vars(obj)
        for k in names:
            if k in d:
                c = self.node("item", k, d[k], "%s.%s" % (parent.path, k), "`%s.%s`" % (parent.path, k))
                parent.children.append(c)
                parent.attrs[("item", k)] = c
                out[k] = c
        return out

    def add_trainer_guards(self, n, trainer):
        """The trainer's state as step() reads it; returns [(array node, array)] of the weights
        whose fresh-gradient flag step() checks and clears."""
        d = vars(trainer)
        scalars = [k for k, v in d.items() if is_value(v)]
        self._items(n, trainer, scalars + ["_contexts", "_params_to_init"])
        fresh = []
        params = Node("item", "_params", "seq", d["_params"], n.path + "._params", "parameters of `%s`" % n.path,
                      typ=list, length=len(d["_params"]))
        n.children.append(params)
        for i, p in enumerate(d["_params"]):
            pn = Node("index", i, "type", p, "%s._params[%d]" % (n.path, i), "parameter `%s`" % p.name, typ=type(p))
            params.children.append(pn)
            pd = vars(p)
            items = self._items(pn, p, ["_data", "_grad", "_grad_req", "lr_mult", "wd_mult", "_stype",
                                        "_grad_stype"])
            if pd.get("_grad_req") != "null" and "_data" in items:
                for c, arr in zip(items["_data"].children, pd["_data"]):
                    c.children.append(Node("self", 0, "freshgrad", arr, c.path, "gradient of `%s`" % p.name))
                    fresh.append((c, arr))
        opt = d["_optimizer"]
        on = Node("item", "_optimizer", "type", opt, n.path + "._optimizer", "optimizer of `%s`" % n.path, typ=type(opt))
        n.children.append(on)
        self.register(on, opt)
        od = vars(opt)
        names = [k for k, v in od.items() if k not in TRAINER_COUNTERS and k not in TRAINER_SET_EACH_STEP and (
            is_value(v) or (type(v) is tuple and all(is_value(x) for x in v)))]
        self._items(on, opt, names + ["lr_mult", "wd_mult", "idx2name"])
        pdict = Node("item", "param_dict", "dict", od["param_dict"], on.path + ".param_dict", "`%s.param_dict`" % on.path,
                     typ=dict, length=len(od["param_dict"]))
        on.children.append(pdict)
        for k, p in od["param_dict"].items():
            c = Node("entry", k, "type", p, "%s[%r]" % (pdict.path, k), "`%s[%r]`" % (pdict.path, k), typ=type(p))
            pdict.children.append(c)
            self._items(c, p, ["lr_mult", "wd_mult"])
        counts = Node("item", "_index_update_count", "type", od["_index_update_count"], on.path + "._index_update_count",
                      "update counts of `%s`" % on.path, typ=dict)
        on.children.append(counts)
        on.attrs[("item", "_index_update_count")] = counts
        ups = Node("item", "_updaters", "seq", d["_updaters"], n.path + "._updaters", "updaters of `%s`" % n.path, typ=list,
                   length=len(d["_updaters"]))
        n.children.append(ups)
        for i, u in enumerate(d["_updaters"]):
            un = Node("index", i, "type", u, "%s[%d]" % (ups.path, i), "updater %d of `%s`" % (i, n.path), typ=type(u))
            ups.children.append(un)
            self._items(un, u, ["states", "states_synced", "aggregate_updates"])
        return fresh

    def trainer_effects(self, n, trainer, before, after):
        opt = trainer._optimizer
        on = n.attrs.get(("item", "_optimizer")) or next(c for c in n.children if c.arg == "_optimizer")
        for key in before:
            if key == "counts":
                continue  # below: per-parameter counter steps
            (obj, old), (_, new) = before[key], after[key]
            if set(old) != set(new):
                self.refuse("Trainer.step() added or removed attributes of %s" % type(obj).__name__, transient=trainer)
                continue
            for k, v in new.items():
                ov = old[k]
                if obj is opt and k in TRAINER_SET_EACH_STEP and is_value(v):
                    # set by every step from the batch size and the trainer's scale (both guarded),
                    # whatever it held before (not a guard): the replay sets it the same
                    self.effects[("set", id(on), k)] = ["set", on, k, v]
                    continue
                if ov is v or (is_value(v) and type(v) is type(ov) and v == ov):
                    continue
                if obj is opt and k in TRAINER_COUNTERS and type(v) is int and type(ov) is int:
                    e = self.effects.setdefault(("attr", id(on), k), ["attr", on, k, 0])
                    e[3] += v - ov
                    continue
                self.refuse("Trainer.step() changed `%s` of its %s" % (k, type(obj).__name__), transient=trainer)
        counts = on.attrs[("item", "_index_update_count")]
        old_counts, new_counts = before["counts"][1], after["counts"][1]
        if set(old_counts) != set(new_counts):
            self.refuse("Trainer.step() counted a parameter for the first time", transient=trainer)
            return
        for k, v in new_counts.items():
            if v != old_counts[k]:
                e = self.effects.setdefault(("item", id(counts), k), ["item", counts, k, 0])
                e[3] += v - old_counts[k]

    # ------------------------------------------------------------ the end

    def result_spec(self, value, spec, arrays, depth=0):
        if is_array(value):
            spec.append(("array", len(arrays)))
            arrays.append(value)
            return
        n = self.prov.get(id(value))
        if n is not None and n.value is value:
            spec.append(("kept", self.keep(n)))
            return
        t = type(value)
        if (t is tuple or t is list) and depth < 32:
            spec.append((t.__name__, len(value)))
            for x in value:
                self.result_spec(x, spec, arrays, depth + 1)
            return
        if t is dict and depth < 32:
            spec.append(("dict", 2 * len(value)))
            for k, x in value.items():
                self.result_spec(k, spec, arrays, depth + 1)
                self.result_spec(x, spec, arrays, depth + 1)
            return
        if is_value(value) or is_identity_object(value):
            spec.append(("const", value))
            return
        raise Refusal("it leaves a %s object in `%s` that a replay cannot make anew" % (
            t.__name__, "a variable"))

    def finish(self, result):
        """(guard spec, result arrays, result spec, effects) for fragment_capture_end."""
        spec, arrays = [], []
        self.result_spec(result, spec, arrays)
        effects = [(kind, self.keep(node), key, delta) for kind, node, key, delta in self.effects.values()
                   if delta or kind in ("cleargrad", "set")]
        guards = []
        for r in self.roots:
            r.emit(guards)
        return guards, arrays, spec, effects


def _trainer_unsupported(trainer, args, kwargs):
    """Why a Trainer.step call cannot be replayed as a known call, or None."""
    if type(trainer) is not Trainer:
        return "a Trainer subclass"
    if kwargs.get("ignore_stale_grad", args[1] if len(args) > 1 else False):
        return "ignore_stale_grad=True"
    # the reasons that hold for good first: they split the statement off at once (fragment.py)
    opt = trainer._optimizer
    if type(opt) not in TRAINER_OPTIMIZERS:
        return "its optimizer %s reads its update counts" % type(opt).__name__
    if opt.lr_scheduler is not None:
        return "its learning rate follows a scheduler"
    if not trainer._kv_initialized or trainer._params_to_init:
        return "the trainer is initialised on its first step"
    if trainer._kvstore is not None or trainer._update_on_kvstore:
        return "it updates through a kvstore"
    if getattr(trainer, "_amp_loss_scaler", None) is not None:
        return "it has an AMP loss scaler"
    if len(trainer._updaters) != 1 or type(trainer._updaters[0]) is not Updater:
        return "it updates on several contexts"
    if trainer._contains_sparse_weight or trainer._contains_sparse_grad:
        return "it has sparse parameters"
    return None


def _trainer_snapshot(trainer):
    """The plain attributes of a trainer, its optimizer and updaters, and the update counts."""
    opt = trainer._optimizer
    out = {"trainer": (trainer, dict(vars(trainer))), "optimizer": (opt, dict(vars(opt)))}
    for i, u in enumerate(trainer._updaters):
        out["updater%d" % i] = (u, dict(vars(u)))
        out["states%d" % i] = (u.states, {k: v for k, v in u.states.items()})
    out["counts"] = (opt._index_update_count, dict(opt._index_update_count))
    return out


def _untrusted_block(block):
    """Why a block's forward cannot be trusted to depend only on its guarded state, or None."""
    stack = [block]
    while stack:
        b = stack.pop()
        mod = type(b).__module__ or ""
        if not mod.startswith("mxnet.gluon"):
            return ("calls `%s`, a block defined outside mxnet.gluon (its forward is Python this pass does not "
                    "check; decorate the code calling its layers instead)" % type(b).__name__)
        if b._forward_hooks or b._forward_pre_hooks:
            return "calls a block with forward hooks"
        stack.extend(b._children.values())
    return None


def _snapshot(block):
    """{id(block): (block, its plain attributes)} for the block and every block below it."""
    out = {}
    stack = [block]
    while stack:
        b = stack.pop()
        out[id(b)] = (b, dict(vars(b)))
        stack.extend(b._children.values())
    return out


# ------------------------------------------------------------------ helpers called by capture bodies

def ga(obj, name):
    value = getattr(obj, name)
    cap = current()
    if cap is None or is_array(obj):
        return value
    n = cap.prov.get(id(obj))
    if n is not None and n.value is obj and n.kind in ("type", "id"):
        if n.kind == "type":
            getter = python_getter(obj, name)
            if getter is not None:
                # the guard walk would run it again on every call (twice, with the capture)
                cap.refuse("reads `%s.%s`, computed by %s on every read (its effects are unknown)"
                           % (n.path, name, getter))
        cap.attr(n, name, value)
    return value


def python_getter(obj, name):
    """The Python code (outside mxnet) that reading `obj.name` runs -- a property, another
    descriptor or `__getattr__` -- described, or None for a plain attribute or method."""
    tp = type(obj)
    found = None
    for klass in tp.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    if found is None:
        inst = getattr(obj, "__dict__", None)
        if isinstance(inst, dict) and name in inst:
            return None
        fn = getattr(tp, "__getattr__", None)
        return _outside_mxnet(fn, "%s.__getattr__" % tp.__name__)
    if isinstance(found, property):
        return _outside_mxnet(found.fget, "the property %s.%s" % (tp.__name__, name))
    if isinstance(found, (types.FunctionType, staticmethod, classmethod)):
        return None  # a method: reading it binds, nothing runs
    get = getattr(type(found), "__get__", None)
    if not isinstance(get, types.FunctionType):
        return None  # a plain class attribute, or a descriptor written in C (slots, getsets)
    inst = getattr(obj, "__dict__", None)
    if getattr(type(found), "__set__", None) is None and isinstance(inst, dict) and name in inst:
        return None  # a non-data descriptor shadowed by the instance's own value
    return _outside_mxnet(get, "the descriptor %s.%s" % (tp.__name__, name))


def _outside_mxnet(fn, what):
    if not isinstance(fn, types.FunctionType):
        return None
    module = getattr(fn, "__module__", None) or ""
    return None if module == "mxnet" or module.startswith("mxnet.") else what


def gi(obj, key):
    value = obj[key]
    cap = current()
    if cap is None or is_array(obj):
        return value
    n = cap.prov.get(id(obj))
    if n is not None and n.value is obj and n.kind not in ("seq", "dict"):
        cap.refuse("indexes `%s`, a %s (its items are not guarded)" % (n.path, type(obj).__name__))
    return value


def _whole(key):
    return key == slice(None) or (type(key) is tuple and all(k == slice(None) for k in key))


def si(obj, key, value):
    cap = current()
    if cap is not None and not is_array(obj):
        n = cap.prov.get(id(obj))
        if n is not None:
            cap.refuse("assigns into `%s`, a Python %s the fragment does not own" % (n.path, type(obj).__name__))
    elif cap is not None and _whole(key) and type(value) is type(obj) and (
            len(key) <= obj.ndim if type(key) is tuple else True):
        # `x[:] = y` with y of x's shape: MXNet's __setitem__ takes a reshape *view* of y (a C
        # API call, which the recorder must flush for) and copies it into x; the same copy
        # without the view records as one op.
        if value.shape == obj.shape and value.dtype == obj.dtype and value.context == obj.context:
            if value.handle.value != obj.handle.value:
                value.copyto(obj)
            return
    obj[key] = value


def aug(target, value, op):
    cap = current()
    if cap is not None and not is_array(target) and not is_value(target):
        n = cap.prov.get(id(target))
        if n is not None:
            cap.refuse("updates `%s` (a Python %s it does not own) in place" % (n.path, type(target).__name__))
    return AUG[op](target, value)


def augi(obj, key, value, op):
    cur = gi(obj, key)
    si(obj, key, aug(cur, value, op))


def iterate(obj):
    cap = current()
    if cap is not None and not isinstance(obj, (range, list, tuple, dict, str, zip, enumerate, reversed)) \
            and not is_array(obj):
        cap.refuse("loops over a %s (only ranges, lists, tuples and dicts are known not to change)"
                   % type(obj).__name__)
    return obj


def call(fn, *args, **kwargs):
    cap = current()
    if cap is None:
        return fn(*args, **kwargs)
    if isinstance(fn, Block):
        return cap.call_block(fn, args, kwargs)
    if isinstance(fn, (types.MethodType, types.BuiltinMethodType)) and not isinstance(
            getattr(fn, "__self__", None), types.ModuleType) and getattr(fn, "__self__", None) is not None:
        return method(fn.__self__, fn.__name__, *args, **kwargs)
    if fn is getattr:
        if len(args) == 2 and not kwargs and isinstance(args[1], str):
            return ga(args[0], args[1])
        cap.refuse("calls getattr() with a default")
    elif fn is hasattr:
        n = cap.prov.get(id(args[0])) if args else None
        if n is not None:
            cap.refuse("calls hasattr() on `%s` (not guarded)" % n.path)
    else:
        why = cap.check_call(fn)
        if why:
            cap.refuse(why)
    return fn(*args, **kwargs)


def method(obj, name, *args, **kwargs):
    cap = current()
    if cap is None:
        return getattr(obj, name)(*args, **kwargs)
    if is_array(obj):
        if name in REFUSED_ARRAY_METHODS:
            cap.refuse("calls .%s() on an array" % name)
        elif name == "backward" and cap.stepped:
            # a replay marks backward()'s gradients fresh before the step's effects clear them
            cap.refuse("calls .backward() after Trainer.step()")
        return getattr(obj, name)(*args, **kwargs)
    if isinstance(obj, types.ModuleType):
        return call(ga(obj, name), *args, **kwargs)
    t = type(obj)
    n = cap.prov.get(id(obj))
    if t in PURE_METHODS or t in MUTATORS:
        if name in MUTATORS.get(t, ()):
            if n is not None:
                cap.refuse("calls .%s() on `%s`, a Python %s the fragment does not own" % (name, n.path, t.__name__))
        elif name not in PURE_METHODS.get(t, ()):
            cap.refuse("calls %s.%s()" % (t.__name__, name))
        return getattr(obj, name)(*args, **kwargs)
    if is_value(obj):
        return getattr(obj, name)(*args, **kwargs)  # methods of immutable values
    if isinstance(obj, Parameter) and name in ("data", "list_data") and n is not None:
        c = n.attrs.get(("item", "_data"))
        if c is None:
            c = cap.attr(n, "_data", vars(obj).get("_data"), access="item")
        return getattr(obj, name)(*args, **kwargs)
    if isinstance(obj, Block) and name == "__call__":
        return cap.call_block(obj, args, kwargs)
    if isinstance(obj, Trainer) and name == "step":
        return cap.call_trainer_step(obj, n, args, kwargs)
    bound = getattr(obj, name)
    if isinstance(bound, (types.FunctionType, _OP_FUNCTION)):  # a function stored on an object (not a method)
        if n is not None:
            cap.attr(n, name, bound)
        return call(bound, *args, **kwargs)
    cap.refuse("calls %s.%s(), whose effects are unknown" % (t.__name__, name))
    return bound(*args, **kwargs)


HELPERS = {
    "__mj_ga": ga, "__mj_gi": gi, "__mj_si": si, "__mj_aug": aug, "__mj_augi": augi, "__mj_iter": iterate,
    "__mj_call": call, "__mj_cm": method, "__mj_slice": slice,
}


def enter(cap):
    prev = current()
    _tls.cap = cap
    return prev


def leave(prev):
    _tls.cap = prev
