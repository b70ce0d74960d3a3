"""Random MXNet programs for the differential fuzzer (tests/stress/fuzz.py), one per seed.

A program is a tree of statements (`Stmt`): Python source lines, some of them compound
(`with autograd.record():`, `for it in range(3):`, `with J():`, `try:`) with children. The
generator knows every array's shape and dtype when it writes a statement, so each program is
fixed text: the eager and the jitted run execute the same ops, and the same seed always gives
the same program. Shrinking (fuzz.py) deletes statements and unwraps compounds; it never
regenerates text.

Families (each statement is tagged with one, so a mismatch names what it involved):
elementwise, scalar, broadcast, reduce, matmul, conv, shape, view, index, concat, split, random,
optimizer, gluon, trainer, inplace, autograd, chain, read, meta, flush, nested, loop, raise,
runtime_fail, shape_error, custom, kvstore, allclose, sparse, cast, create, pinned, del, and from
seed NP_SEEDS on np (MXNet's NumPy interface: mx.np ops on `as_np_ndarray()` views, NumPy-style
indexing, writes through a view into the NDArray it shares memory with).
"""
import random

UNARY = ["relu", "sigmoid", "tanh", "abs", "negative", "square", "sin", "cos", "floor", "ceil", "sign",
         "softsign", "round", "rint", "trunc", "fix", "exp", "expm1", "arctan", "erf", "cbrt", "log_sigmoid",
         "mish"]
UNARY_POS = ["sqrt", "log", "log1p", "rsqrt", "reciprocal", "log2", "gamma", "gammaln"]  # on abs(x) + 0.5
METHOD_UNARY = ["relu", "sigmoid", "tanh", "abs", "exp", "square", "sign", "floor"]
BINARY_OPS = ["+", "-", "*", "/"]
BINARY_FN = ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_maximum",
             "broadcast_minimum", "broadcast_greater", "broadcast_lesser_equal", "broadcast_equal",
             "broadcast_power", "broadcast_hypot"]
SAME_FN = ["elemwise_add", "elemwise_sub", "elemwise_mul", "maximum", "minimum"]
CONSTS = ["0.5", "2.0", "-1.5", "0.25", "3.0", "1.0", "0.0", "-0.75", "1e-3", "7.5"]
# From seed DECIMAL_SEEDS on, programs also use decimals that are not binary fractions. MXNet
# reads op attributes with dmlc-core's own parser, which is not correctly rounded: "0.3" or a
# 17-digit repr may become another number than Python's float, and jit() must compute with
# MXNet's reading wherever it reads or writes an attribute itself (fusion, lifted scalars,
# optimizer expansions). Seeds below keep generating exactly the programs of earlier runs.
DECIMAL_SEEDS = 1000000
DECIMAL_CONSTS = ["0.1", "0.3", "-2.7", "1.1", "0.37", "1e-7", "0.9", "3.3333333333333335", "-0.6866924795488460",
                  "0.10000002384185791"]
LOOP_SCALARS = "[0.5, 0.25, 2.0, -1.0, 0.125]"
DECIMAL_LOOP_SCALARS = "[0.1, 0.3, 2.7, -1.1, 0.7000000000000001]"
FLOAT = ("float32", "float64", "float16")
# From seed NP_SEEDS on, programs also use the np family. Seeds below draw the same statements
# as before (the family is not in their weights).
NP_SEEDS = 8000000
# From seed NP_OPERATOR_SEEDS on, the np family's operators also take Python scalars and divide.
NP_OPERATOR_SEEDS = 9000000
# From seed PROJECTION_SEEDS on, programs also use the projections family (batched projections).
PROJECTION_SEEDS = 10440000
NP_UNARY = ["tanh", "exp", "sin", "cos", "abs", "square", "negative", "sign", "floor", "ceil", "trunc",
            "arctan", "sinh", "expm1", "rint"]
NP_UNARY_POS = ["sqrt", "log", "log1p", "log2", "cbrt", "reciprocal"]  # on abs(x) + 0.5
NP_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "hypot", "fmod", "copysign"]


class Stmt:
    """One statement: `text` (one or more lines); compounds have `children` and an optional
    `tail` rendered after them at the statement's own indentation (an `except` clause)."""

    def __init__(self, text, family, children=None, tail=None):
        self.text, self.family, self.children, self.tail = text, family, children, tail

    def copy(self):
        kids = None if self.children is None else [c.copy() for c in self.children]
        return Stmt(self.text, self.family, kids, self.tail)

    def render(self, indent):
        lines = [indent + ln for ln in self.text.split("\n")]
        if self.children is not None:
            inner = render_block(self.children, indent + "    ")
            lines += inner or [indent + "    pass"]
        if self.tail:
            lines += [indent + ln for ln in self.tail.split("\n")]
        return lines

    def count(self):
        return 1 + sum(c.count() for c in (self.children or []))

    def families(self):
        out = {self.family}
        for c in self.children or []:
            out |= c.families()
        return out


def render_block(stmts, indent):
    lines = []
    for s in stmts:
        lines += s.render(indent)
    return lines


class Program:
    """A generated program: prelude and body statements, the jit() configuration of its run,
    whose results must equal eager's bit for bit."""

    def __init__(self, seed, prelude, body, config):
        self.seed, self.prelude, self.body, self.config = seed, prelude, body, config

    # Every program's floats must be eager's bits, fused or not, gradients and optimizer
    # updates included. Until 2026-11-29 only programs without gradients, Adam/RMSProp or
    # lifted learning rates run with fuse=False were held to that, the rest to conftest.py's
    # tolerances; 52,000 programs held to bits then found three ways gradient sums differed
    # from eager's by an ulp (fixed in flush.cc, backward.cc, fuse.cc) and nothing else new.
    exact = True

    def copy(self):
        return Program(self.seed, [s.copy() for s in self.prelude], [s.copy() for s in self.body],
                       dict(self.config))

    def source(self):
        """The program as the text of a function `program(J, FLUSH, OBS)`."""
        lines = ["def program(J, FLUSH, OBS):",
                 "    RNG = np.random.RandomState(%d)" % self.seed,
                 "    S = %s  # scalars that change from one iteration to the next"
                 % (DECIMAL_LOOP_SCALARS if self.seed >= DECIMAL_SEEDS else LOOP_SCALARS)]
        lines += render_block(self.prelude, "    ")
        lines += ["    try:", "        with J():"]
        lines += render_block(self.body, "            ") or ["            pass"]
        lines += ["    except Exception as e:",
                  "        OBS.append(('left the scope',) + X(e))",
                  "    return locals()"]
        return "\n".join(lines) + "\n"

    def size(self):
        return sum(s.count() for s in self.prelude + self.body)

    def families(self):
        out = set()
        for s in self.prelude + self.body:
            out |= s.families()
        return out


class Var:
    def __init__(self, name, shape, dtype, grad=False, deps=(), kind="arr"):
        self.name, self.shape, self.dtype, self.kind = name, tuple(shape), dtype, kind
        self.grad = grad          # a leaf with a gradient buffer
        self.deps = set(deps)     # leaves (arrays with grads, nets) it was computed from under record
        self.rec_block = None     # the record block that produced it
        self.failed = False       # the result of an op that fails at run time
        self.adds = False         # its gradient is added to (grad_req='add')

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def fmt_shape(shape):
    return "(%s)" % "".join("%d, " % d for d in shape).rstrip(" ") if len(shape) != 1 else "(%d,)" % shape[0]


class Gen:
    """Builds one program from a seed. Each family method appends statements to self.out."""

    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.prelude = []
        self.vars = {}            # name -> Var (arrays and lists of arrays)
        self.nets = {}            # name -> dict(kind, in_shape, out_shape, params)
        self.trainers = {}        # trainer name -> net name
        self.kvs = {}             # kv name -> (key, shape)
        self.n = 0
        self.in_record = 0        # depth of autograd.record() blocks being generated
        self.record_id = 0
        self.in_loop = False
        self.budget = 0
        self.fams = self._families()
        self.decimals = seed >= DECIMAL_SEEDS
        self.consts = CONSTS + DECIMAL_CONSTS if self.decimals else CONSTS

    # ------------------------------------------------------------ helpers

    def name(self, prefix="a"):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def rand_shape(self, ndim=None, lo=1, hi=5):
        ndim = ndim or self.r.choice([1, 2, 2, 2, 3, 3, 4])
        return tuple(self.r.randint(lo, hi) for _ in range(ndim))

    def scalar(self):
        if self.in_loop and self.r.random() < 0.4:
            return "S[it]"
        return self.r.choice(self.consts)

    def new_input(self, shape, dtype="float32", grad=None, lo=-2.0, hi=2.0, ints=None):
        """An input array made in the prelude (eagerly, before the scope)."""
        v = Var(self.name(), shape, dtype)
        if ints is not None:
            text = "%s = nd.array(RNG.randint(0, %d, %s), dtype='%s')" % (v.name, ints, fmt_shape(shape), dtype)
        else:
            text = "%s = nd.array(RNG.uniform(%s, %s, %s), dtype='%s')" % (v.name, lo, hi, fmt_shape(shape), dtype)
        if grad is None:
            grad = dtype in FLOAT and ints is None and self.r.random() < 0.3
        if grad:
            req = self.r.choice(["", "", "", "grad_req='add'"])
            text += "\n%s.attach_grad(%s)" % (v.name, req)
            v.grad, v.deps, v.adds = True, {v.name}, bool(req)
        self.prelude.append(Stmt(text, "input"))
        self.vars[v.name] = v
        return v

    def arrays(self, pred=lambda v: True):
        return [v for v in self.vars.values() if v.kind == "arr" and not v.failed and pred(v)]

    def pick(self, pred=lambda v: True, make=None):
        """An existing array satisfying pred (most often a recent one), else make()."""
        c = self.arrays(pred)
        if c and (make is None or self.r.random() < 0.85):
            if self.r.random() < 0.5:
                return c[-1 - min(len(c) - 1, int(self.r.expovariate(0.7)))]
            return self.r.choice(c)
        return make() if make else None

    def pick_float(self, pred=lambda v: True, shape=None, dtype=None):
        want = dtype or ("float32" if self.r.random() < 0.9 else self.r.choice(["float64", "float16"]))
        return self.pick(lambda v: v.dtype == want and (shape is None or v.shape == shape) and pred(v),
                         lambda: self.new_input(shape or self.rand_shape(), want))

    def result(self, shape, dtype, inputs=(), name=None, extra_deps=()):
        """Registers the array a statement makes."""
        v = Var(name or self.name(), shape, dtype)
        if self.in_record:
            for i in inputs:
                v.deps |= i.deps
            v.deps |= set(extra_deps)
            v.rec_block = self.record_id
        self.vars[v.name] = v
        return v

    def emit(self, text, family, risky=False):
        if risky:
            text = "try:\n    %s\nexcept Exception as e:\n    OBS.append(X(e))" % text.replace("\n", "\n    ")
        self.out.append(Stmt(text, family))

    # ------------------------------------------------------------ generation

    def _families(self):
        f = [
            (10, self.f_elementwise), (8, self.f_scalar), (8, self.f_broadcast), (5, self.f_reduce),
            (4, self.f_matmul), (2, self.f_conv), (5, self.f_shape), (5, self.f_view), (3, self.f_index),
            (3, self.f_concat), (3, self.f_split), (3, self.f_random), (3, self.f_optimizer), (3, self.f_gluon),
            (2, self.f_trainer), (8, self.f_inplace), (5, self.f_autograd), (5, self.f_chain), (6, self.f_read),
            (2, self.f_meta), (3, self.f_flush), (2, self.f_nested), (3, self.f_loop), (2, self.f_raise),
            (1, self.f_shape_error), (2, self.f_cast), (3, self.f_create), (2, self.f_del),
            # the areas of issue 10's items 1-4 (run-time failures, callbacks, late-typed results,
            # sparse storage): about one program in ten uses one of them
            (0.15, self.f_runtime_fail), (0.15, self.f_custom), (0.15, self.f_kvstore), (0.15, self.f_allclose),
            (0.15, self.f_sparse), (0.15, self.f_pinned),
        ]
        if self.seed >= NP_SEEDS:
            f.append((4, self.f_np))
        if self.seed >= PROJECTION_SEEDS:
            f.append((2, self.f_projections))
        return f

    def statement(self):
        total = sum(w for w, _ in self.fams)
        x = self.r.uniform(0, total)
        for w, fn in self.fams:
            x -= w
            if x <= 0:
                return fn()
        return self.fams[0][1]()

    def block(self, n):
        """Generates about n statements into a new list; returns it."""
        saved, self.out = getattr(self, "out", None), []
        for _ in range(n):
            if self.budget <= 0:
                break
            self.budget -= 1
            self.statement()
        block, self.out = self.out, saved
        return block

    def compound(self, header, family, n, tail=None):
        kids = self.block(n)
        self.out.append(Stmt(header, family, kids, tail))

    def generate(self):
        r = self.r
        for _ in range(r.randint(1, 3)):
            self.new_input(self.rand_shape())
        self.budget = r.randint(4, 28)
        body = []
        self.out = body
        while self.budget > 0:
            self.budget -= 1
            self.statement()
        if r.random() < 0.05:  # an exception that leaves the scope, somewhere in the body
            body.insert(r.randint(0, len(body)), Stmt("raise Boom('left mid-block')", "raise"))
        fuse = r.random() < 0.6
        config = {"fuse": fuse, "segment_ops": r.choice([64, 64, 64, 0, 4, 16]),
                  "async_launch": r.random() < 0.8, "max_ops": r.choice([10000, 10000, 10000, 7])}
        return Program(self.seed, self.prelude, body, config)

    # ------------------------------------------------------------ families

    def f_elementwise(self):
        x = self.pick_float()
        r = self.r
        v = self.result(x.shape, x.dtype, [x])
        k = r.random()
        if k < 0.55:
            self.emit("%s = nd.%s(%s)" % (v.name, r.choice(UNARY), x.name), "elementwise")
        elif k < 0.7:
            self.emit("%s = nd.%s(nd.abs(%s) + 0.5)" % (v.name, r.choice(UNARY_POS), x.name), "elementwise")
        elif k < 0.8:
            self.emit("%s = %s.%s()" % (v.name, x.name, r.choice(METHOD_UNARY)), "elementwise")
        elif k < 0.9:
            act = r.choice(["relu", "sigmoid", "tanh", "softrelu", "softsign"])
            self.emit("%s = nd.Activation(%s, act_type='%s')" % (v.name, x.name, act), "elementwise")
        else:
            axis = r.randrange(len(x.shape))
            fn = r.choice(["softmax", "log_softmax"])
            self.emit("%s = nd.%s(%s, axis=%d)" % (v.name, fn, x.name, axis), "elementwise")

    def f_scalar(self):
        x = self.pick_float()
        c = self.scalar()
        forms = ["{x} * {c}", "{x} + {c}", "{c} - {x}", "{x} / ({c} + 4.0)", "{x} ** 2", "nd.maximum({x}, {c})",
                 "nd.minimum({x}, {c})", "nd.clip({x}, -1.0, 1.0)", "({x} > {c})", "({x} <= {c})", "{x} - {c}",
                 "{c} * {x}", "({x} == {c})", "nd.LeakyReLU({x}, slope=0.1)", "{x} % 1.5", "-{x}"]
        if self.decimals:  # clip's bounds are float fields: dmlc's reading in float
            forms += ["nd.clip({x}, -abs({c}), abs({c}) + 0.3)", "nd.clip({x} * 0.7, {c}, 2.9)"]
        v = self.result(x.shape, x.dtype, [x])
        self.emit("%s = %s" % (v.name, self.r.choice(forms).format(x=x.name, c=c)), "scalar")

    def _broadcast_partner(self, x):
        """A shape broadcastable against x: x's, or x's with some dims set to 1."""
        shape = tuple(1 if self.r.random() < 0.4 else d for d in x.shape)
        return self.pick_float(shape=shape, dtype=x.dtype)

    def f_broadcast(self):
        x = self.pick_float()
        y = self._broadcast_partner(x)
        a, b = (x, y) if self.r.random() < 0.7 else (y, x)
        v = self.result(x.shape, x.dtype, [x, y])
        k = self.r.random()
        if k < 0.4:
            self.emit("%s = %s %s %s" % (v.name, a.name, self.r.choice(BINARY_OPS), b.name), "broadcast")
        elif k < 0.85:
            self.emit("%s = nd.%s(%s, %s)" % (v.name, self.r.choice(BINARY_FN), a.name, b.name), "broadcast")
        else:
            if y.shape != x.shape:
                y = self.pick_float(shape=x.shape, dtype=x.dtype)
                v.deps |= y.deps if self.in_record else set()
            self.emit("%s = nd.%s(%s, %s)" % (v.name, self.r.choice(SAME_FN), x.name, y.name), "broadcast")

    def f_reduce(self):
        x = self.pick_float()
        r = self.r
        fn = r.choice(["sum", "mean", "max", "min", "prod", "nansum", "norm", "argmax", "argmin"])
        if r.random() < 0.25:
            v = self.result((1,), x.dtype, [x])
            self.emit("%s = nd.%s(%s)" % (v.name, fn if fn not in ("argmax", "argmin") else "sum", x.name),
                      "reduce")
            return
        axis = r.randrange(len(x.shape))
        keep = r.random() < 0.3 and fn not in ("argmax", "argmin")
        shape = tuple(d if i != axis else 1 for i, d in enumerate(x.shape)) if keep else \
            tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)
        v = self.result(shape, x.dtype, [x])
        if fn in ("argmax", "argmin"):
            self.emit("%s = nd.%s(%s, axis=%d)" % (v.name, fn, x.name, axis), "reduce")
        elif r.random() < 0.3 and fn in ("sum", "mean", "max", "min", "prod"):
            self.emit("%s = %s.%s(axis=%d, keepdims=%s)" % (v.name, x.name, fn, axis, keep), "reduce")
        else:
            self.emit("%s = nd.%s(%s, axis=%d, keepdims=%s)" % (v.name, fn, x.name, axis, keep), "reduce")

    def f_matmul(self):
        r = self.r
        dt = "float32" if r.random() < 0.85 else "float64"
        x = self.pick_float(lambda v: len(v.shape) == 2, dtype=dt) if r.random() < 0.8 else \
            self.new_input(self.rand_shape(2), dt)
        if len(x.shape) != 2:
            x = self.new_input(self.rand_shape(2), dt)
        n, k = x.shape
        m = r.randint(1, 5)
        k2 = r.random()
        if k2 < 0.35:
            w = self.pick_float(shape=(k, m), dtype=dt)
            v = self.result((n, m), dt, [x, w])
            self.emit("%s = nd.dot(%s, %s)" % (v.name, x.name, w.name), "matmul")
        elif k2 < 0.5:
            w = self.pick_float(shape=(m, k), dtype=dt)
            v = self.result((n, m), dt, [x, w])
            self.emit("%s = nd.dot(%s, %s, transpose_b=True)" % (v.name, x.name, w.name), "matmul")
        elif k2 < 0.75:
            w = self.pick_float(shape=(m, k), dtype=dt)
            b = self.pick_float(shape=(m,), dtype=dt)
            v = self.result((n, m), dt, [x, w, b])
            nb = r.random() < 0.2
            if nb:
                fc = "nd.FullyConnected(%s, %s, num_hidden=%d, no_bias=True)" % (x.name, w.name, m)
            else:
                fc = "nd.FullyConnected(%s, %s, %s, num_hidden=%d)" % (x.name, w.name, b.name, m)
            if r.random() < 0.4:  # a dense layer: the relu is the product's only reader (_minpy_fc's act=relu)
                fc = "nd.Activation(%s, act_type='relu')" % fc
            self.emit("%s = %s" % (v.name, fc), "matmul")
        elif k2 < 0.9:
            bsz = r.randint(1, 3)
            a = self.pick_float(shape=(bsz, n, k), dtype=dt)
            b = self.pick_float(shape=(bsz, k, m), dtype=dt)
            v = self.result((bsz, n, m), dt, [a, b])
            self.emit("%s = nd.batch_dot(%s, %s)" % (v.name, a.name, b.name), "matmul")
        else:
            w = self.pick_float(shape=(k, m), dtype=dt)
            v = self.result((n, m), dt, [x, w])
            # MXNet's linalg backward into a grad_req='add' gradient adds unwritten temp memory
            # (repros/mxnet_linalg_grad_add_reads_temp_space.py): its own family, a known area
            self.emit("%s = nd.linalg.gemm2(%s, %s, alpha=%s)" % (v.name, x.name, w.name, r.choice(CONSTS[:5])),
                      "linalg_add" if x.adds or w.adds else "matmul")

    def f_projections(self):
        """FullyConnected calls of one weight (and bias) on several arrays of one shape, none
        reading another's result: a graph runs them as one call over all their rows where
        MXNet's kernel gives the same bits (cpp/src/projections.h)."""
        r = self.r
        if r.random() < 0.5:  # blocks of 16 rows: the ones batched (projections.cc, kRowMultiple)
            x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) == 2 and v.shape[0] == 16,
                          lambda: self.new_input((16, r.randint(1, 5)), "float32"))
        else:
            x = self.pick(lambda v: v.dtype == "float32" and len(v.shape) == 2,
                          lambda: self.new_input(self.rand_shape(2), "float32"))
        n, k = x.shape
        m = r.randint(1, 6)
        w = self.pick_float(shape=(m, k), dtype="float32")
        b = self.pick_float(shape=(m,), dtype="float32") if r.random() < 0.8 else None
        xs = [x] + [self.pick_float(shape=(n, k), dtype="float32") if r.random() < 0.5 else
                    self.new_input((n, k), "float32") for _ in range(r.randint(1, 4))]
        for xi in xs:
            v = self.result((n, m), "float32", [xi, w] + ([b] if b else []))
            if b is None:
                self.emit("%s = nd.FullyConnected(%s, %s, num_hidden=%d, no_bias=True)" % (v.name, xi.name, w.name, m),
                          "projections")
            else:
                self.emit("%s = nd.FullyConnected(%s, %s, %s, num_hidden=%d)" % (v.name, xi.name, w.name, b.name, m),
                          "projections")
            if r.random() < 0.5:  # read by a fusible op (in place, as a row block)
                u = self.result((n, m), "float32", [v])
                self.emit("%s = nd.tanh(%s) * %s" % (u.name, v.name, self.scalar()), "projections")

    def f_conv(self):
        r = self.r
        x = self.pick(lambda v: len(v.shape) == 4 and v.dtype == "float32" and v.shape[2] >= 2 and v.shape[3] >= 2,
                      lambda: self.new_input((r.randint(1, 2), r.randint(1, 3), r.randint(3, 6), r.randint(3, 6))))
        nb, c, h, w = x.shape
        if r.random() < 0.75:
            kk = r.randint(1, min(3, h, w))
            pad = r.randint(0, 1)
            f = r.randint(1, 4)
            wt = self.pick_float(shape=(f, c, kk, kk), dtype="float32")
            b = self.pick_float(shape=(f,), dtype="float32")
            oh, ow = h + 2 * pad - kk + 1, w + 2 * pad - kk + 1
            v = self.result((nb, f, oh, ow), "float32", [x, wt, b])
            self.emit("%s = nd.Convolution(%s, %s, %s, kernel=(%d, %d), pad=(%d, %d), num_filter=%d)"
                      % (v.name, x.name, wt.name, b.name, kk, kk, pad, pad, f), "conv")
        else:
            pt = r.choice(["max", "avg", "sum"])
            v = self.result((nb, c, h // 2, w // 2), "float32", [x])
            self.emit("%s = nd.Pooling(%s, kernel=(2, 2), stride=(2, 2), pool_type='%s')" % (v.name, x.name, pt),
                      "conv")

    def f_shape(self):
        x = self.pick_float()
        r = self.r
        s = x.shape
        k = r.randrange(11)
        if k == 0:
            v = self.result((x.size,), x.dtype, [x])
            self.emit("%s = nd.reshape(%s, shape=(-1,))" % (v.name, x.name), "shape")
        elif k == 1:
            v = self.result(tuple(reversed(s)), x.dtype, [x])
            self.emit("%s = nd.transpose(%s)" % (v.name, x.name), "shape")
        elif k == 2:
            ax = r.randint(0, len(s))
            v = self.result(s[:ax] + (1,) + s[ax:], x.dtype, [x])
            self.emit("%s = nd.expand_dims(%s, axis=%d)" % (v.name, x.name, ax), "shape")
        elif k == 3:
            rest = 1
            for d in s[1:]:
                rest *= d
            v = self.result((s[0], rest), x.dtype, [x])
            self.emit("%s = nd.flatten(%s)" % (v.name, x.name), "shape")
        elif k == 4:
            ax = r.randrange(len(s))
            b = r.randint(0, s[ax] - 1)
            e = r.randint(b + 1, s[ax])
            v = self.result(s[:ax] + (e - b,) + s[ax + 1:], x.dtype, [x])
            self.emit("%s = nd.slice_axis(%s, axis=%d, begin=%d, end=%d)" % (v.name, x.name, ax, b, e), "shape")
        elif k == 5:
            reps = tuple(r.randint(1, 2) for _ in s)
            v = self.result(tuple(a * b for a, b in zip(s, reps)), x.dtype, [x])
            self.emit("%s = nd.tile(%s, reps=%s)" % (v.name, x.name, fmt_shape(reps)), "shape")
        elif k == 6:
            ax = r.randrange(len(s))
            v = self.result(s[:ax] + (2 * s[ax],) + s[ax + 1:], x.dtype, [x])
            self.emit("%s = nd.repeat(%s, repeats=2, axis=%d)" % (v.name, x.name, ax), "shape")
        elif k == 7:
            v = self.result(s, x.dtype, [x])
            self.emit("%s = nd.flip(%s, axis=%d)" % (v.name, x.name, r.randrange(len(s))), "shape")
        elif k == 8 and len(s) >= 2:
            a, b = r.sample(range(len(s)), 2)
            t = list(s)
            t[a], t[b] = t[b], t[a]
            v = self.result(tuple(t), x.dtype, [x])
            self.emit("%s = nd.swapaxes(%s, dim1=%d, dim2=%d)" % (v.name, x.name, a, b), "shape")
        elif k == 9:
            ones = [i for i, d in enumerate(s) if d == 1]
            if ones:
                t = tuple(d if i != ones[0] else r.randint(2, 3) for i, d in enumerate(s))
                v = self.result(t, x.dtype, [x])
                self.emit("%s = nd.broadcast_to(%s, shape=%s)" % (v.name, x.name, fmt_shape(t)), "shape")
            else:
                v = self.result(s + (1,), x.dtype, [x])
                self.emit("%s = %s.reshape(%s)" % (v.name, x.name, fmt_shape(s + (1,))), "shape")
        else:
            begin = tuple(r.randint(0, d - 1) for d in s)
            end = tuple(r.randint(b + 1, d) for b, d in zip(begin, s))
            v = self.result(tuple(e - b for b, e in zip(begin, end)), x.dtype, [x])
            self.emit("%s = nd.slice(%s, begin=%s, end=%s)" % (v.name, x.name, fmt_shape(begin), fmt_shape(end)),
                      "shape")

    def f_view(self):
        """Views sharing memory with their base (C API reshape/slice/at), and basic indexing."""
        x = self.pick(lambda v: v.dtype != "int32") or self.pick_float()
        r = self.r
        s = x.shape
        k = r.randrange(6)
        if k == 0:
            v = self.result((x.size,), x.dtype, [x])
            self.emit("%s = %s.reshape((-1,))" % (v.name, x.name), "view")
        elif k == 1 or len(s) == 1:
            b = r.randint(0, s[0] - 1)
            e = r.randint(b + 1, s[0])
            v = self.result((e - b,) + s[1:], x.dtype, [x])
            self.emit("%s = %s[%d:%d]" % (v.name, x.name, b, e), "view")
        elif k == 2:
            i = r.randrange(s[0])
            v = self.result(s[1:] or (1,), x.dtype, [x])
            self.emit("%s = %s[%d]" % (v.name, x.name, i), "view")
        elif k == 3:
            b = r.randint(0, s[1] - 1)
            e = r.randint(b + 1, s[1])
            v = self.result((s[0], e - b) + s[2:], x.dtype, [x])
            self.emit("%s = %s[:, %d:%d]" % (v.name, x.name, b, e), "view")
        elif k == 4:
            v = self.result(tuple(reversed(s)), x.dtype, [x])
            self.emit("%s = %s.T" % (v.name, x.name), "view")
        else:
            t = (s[0], -1)
            rest = x.size // s[0]
            v = self.result((s[0], rest), x.dtype, [x])
            self.emit("%s = %s.reshape(%s)" % (v.name, x.name, fmt_shape(t)), "view")

    def f_index(self):
        r = self.r
        x = self.pick_float()
        s = x.shape
        k = r.randrange(6)
        if k == 0:
            n = r.randint(1, 4)
            idx = self.new_input((n,), "float32", ints=s[0])
            v = self.result((n,) + s[1:], x.dtype, [x])
            self.emit("%s = nd.take(%s, %s)" % (v.name, x.name, idx.name), "index")
        elif k == 1:
            ax = len(s) - 1
            idx = self.new_input(s[:-1] or (1,), "float32", ints=s[-1])
            if len(s) == 1:
                return self.f_reduce()
            v = self.result(s[:-1], x.dtype, [x])
            self.emit("%s = nd.pick(%s, %s, axis=%d)" % (v.name, x.name, idx.name, ax), "index")
        elif k == 2:
            n = r.randint(1, 4)
            idx = self.new_input((n,), "float32", ints=5)
            v = self.result((n, 5), "float32")
            self.emit("%s = nd.one_hot(%s, depth=5)" % (v.name, idx.name), "index")
        elif k == 3:
            y = self.pick_float(shape=s, dtype=x.dtype)
            v = self.result(s, x.dtype, [x, y])
            self.emit("%s = nd.where(%s > 0, %s, %s)" % (v.name, x.name, x.name, y.name), "index")
        elif k == 4:
            ax = r.randrange(len(s))
            kk = r.randint(1, s[ax])
            v = self.result(s[:ax] + (kk,) + s[ax + 1:], x.dtype, [x])
            self.emit("%s = nd.topk(%s, axis=%d, k=%d, ret_typ='value')" % (v.name, x.name, ax, kk), "index")
        else:
            ax = r.randrange(len(s))
            fn = r.choice(["sort", "argsort"])
            v = self.result(s, x.dtype, [x])
            self.emit("%s = nd.%s(%s, axis=%d)" % (v.name, fn, x.name, ax), "index")

    def f_concat(self):
        r = self.r
        x = self.pick_float()
        ax = r.randrange(len(x.shape))
        others = [x]
        for _ in range(r.randint(1, 2)):
            shape = tuple(d if i != ax else r.randint(1, 3) for i, d in enumerate(x.shape))
            others.append(self.pick_float(shape=shape, dtype=x.dtype))
        if r.random() < 0.6:
            total = sum(o.shape[ax] for o in others)
            v = self.result(tuple(d if i != ax else total for i, d in enumerate(x.shape)), x.dtype, others)
            self.emit("%s = nd.concat(%s, dim=%d)" % (v.name, ", ".join(o.name for o in others), ax), "concat")
        else:
            same = [x] + [self.pick_float(shape=x.shape, dtype=x.dtype) for _ in range(r.randint(1, 2))]
            sax = r.randint(0, len(x.shape))
            v = self.result(x.shape[:sax] + (len(same),) + x.shape[sax:], x.dtype, same)
            self.emit("%s = nd.stack(%s, axis=%d)" % (v.name, ", ".join(o.name for o in same), sax), "concat")

    def f_split(self):
        r = self.r
        x = self.pick_float()
        cands = [(i, d) for i, d in enumerate(x.shape) if d > 1]
        if not cands:
            return self.f_concat()
        ax, d = r.choice(cands)
        k = r.choice([n for n in range(2, d + 1) if d % n == 0])
        squeeze = d == k and r.random() < 0.3
        part = x.shape[:ax] + (() if squeeze else (d // k,)) + x.shape[ax + 1:]
        lst = Var(self.name("l"), part, x.dtype, kind="list")
        self.vars[lst.name] = lst
        self.emit("%s = nd.split(%s, num_outputs=%d, axis=%d%s)" % (lst.name, x.name, k, ax,
                                                                    ", squeeze_axis=True" if squeeze else ""), "split")
        # one of its parts, as an array the program goes on with
        if part:
            v = self.result(part, x.dtype, [x])
            self.emit("%s = %s[%d]" % (v.name, lst.name, r.randrange(k)), "split")

    def f_random(self):
        r = self.r
        k = r.randrange(9)
        shape = self.rand_shape()
        if k == 0:
            self.emit("mx.random.seed(%d)" % r.randint(0, 99), "random")
            return
        if k == 1:
            v = self.result(shape, "float32")
            self.emit("%s = nd.random.uniform(-1, 1, shape=%s)" % (v.name, fmt_shape(shape)), "random")
        elif k == 2:
            v = self.result(shape, "float32")
            self.emit("%s = nd.random.normal(0, 2, shape=%s)" % (v.name, fmt_shape(shape)), "random")
        elif k == 3:
            v = self.result(shape, "float32")
            fn = r.choice(["gamma(2.0, 1.5, shape=%s)", "exponential(2.0, shape=%s)", "poisson(3.0, shape=%s)"])
            self.emit("%s = nd.random.%s" % (v.name, fn % fmt_shape(shape)), "random")
        elif k == 4:
            v = self.result(shape, "int32")
            self.emit("%s = nd.random.randint(0, 10, shape=%s)" % (v.name, fmt_shape(shape)), "random")
        elif k == 5:
            x = self.pick_float(dtype="float32")
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = nd.random.shuffle(%s)" % (v.name, x.name), "random")
        elif k == 6:
            x = self.pick_float(dtype="float32")
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = nd.Dropout(%s, p=0.5)" % (v.name, x.name), "random")
        elif k == 7:
            x = self.pick_float(lambda v: len(v.shape) == 2, dtype="float32")
            if len(x.shape) != 2:
                x = self.new_input(self.rand_shape(2))
            v = self.result(x.shape[:1], "int32", [x])
            self.emit("%s = nd.random.multinomial(nd.softmax(%s))" % (v.name, x.name), "random")
        else:
            x = self.pick_float(dtype="float32")
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = nd.random.uniform_like(%s, low=0, high=%s)" % (v.name, x.name, r.choice(["1", "2.5"])),
                      "random")

    def f_optimizer(self):
        r = self.r
        dt = "float32" if r.random() < 0.85 else "float64"
        w = self.pick(lambda v: v.dtype == dt and not v.grad, lambda: self.new_input(self.rand_shape(), dt, grad=False))
        # a gradient that is not the weight itself: MXNet's kernels read their inputs after writing
        # the output (nag_mom_update), so eager's result for an aliased call is the kernel's accident
        g = self.pick(lambda v: v is not w and v.dtype == dt and v.shape == w.shape,
                      lambda: self.new_input(w.shape, dt, grad=False))
        lr = "abs(%s)" % self.scalar() if r.random() < 0.7 else "0.1"
        state = lambda: self.new_input(w.shape, dt, grad=False, lo=0.0, hi=0.5).name  # noqa: E731
        k = r.randrange(8)
        wd = r.choice(["0.0", "0.01"] + (["3e-4", "0.07"] if self.decimals else []))
        if k == 0:
            self.emit("nd.sgd_update(%s, %s, lr=%s, wd=%s, out=%s)" % (w.name, g.name, lr, wd, w.name), "optimizer")
        elif k == 1:
            self.emit("nd.sgd_mom_update(%s, %s, %s, lr=%s, momentum=0.9, wd=%s, out=%s)"
                      % (w.name, g.name, state(), lr, wd, w.name), "optimizer")
        elif k == 2:
            self.emit("nd.adam_update(%s, %s, %s, %s, lr=%s, wd=%s, out=%s)"
                      % (w.name, g.name, state(), state(), lr, wd, w.name), "optimizer")
        elif k == 3:
            self.emit("nd.rmsprop_update(%s, %s, %s, lr=%s, out=%s)" % (w.name, g.name, state(), lr, w.name),
                      "optimizer")
        elif k in (4, 5):
            n = r.randint(1, 3)
            ws = [w] + [self.new_input(self.rand_shape(), dt, grad=False) for _ in range(n - 1)]
            gs = [g] + [self.pick(lambda v, x=x: v.dtype == dt and v.shape == x.shape and v not in ws,
                                  lambda x=x: self.new_input(x.shape, dt, grad=False)) for x in ws[1:]]
            lrs = "(%s)" % "".join("%s, " % lr for _ in ws)
            wds = "(%s)" % "".join("%s, " % wd for _ in ws)
            if k == 4:
                args = ", ".join("%s, %s" % (a.name, b.name) for a, b in zip(ws, gs))
                self.emit("nd.multi_sgd_update(%s, out=[%s], lrs=%s, wds=%s, num_weights=%d)"
                          % (args, ", ".join(a.name for a in ws), lrs, wds, n), "optimizer")
            else:
                args = ", ".join("%s, %s, %s" % (a.name, b.name, state_for(self, a, dt)) for a, b in zip(ws, gs))
                self.emit("nd.multi_sgd_mom_update(%s, out=[%s], lrs=%s, wds=%s, momentum=0.9, num_weights=%d)"
                          % (args, ", ".join(a.name for a in ws), lrs, wds, n), "optimizer")
        elif k == 6:
            self.emit("nd.nag_mom_update(%s, %s, %s, lr=%s, momentum=0.9, out=%s)"
                      % (w.name, g.name, state(), lr, w.name), "optimizer")
        else:
            self.emit("nd.signsgd_update(%s, %s, lr=%s, wd=%s, out=%s)" % (w.name, g.name, lr, wd, w.name),
                      "optimizer")

    def _net(self, x):
        """A Gluon block (made in the prelude) that takes arrays shaped like x; (name, out_shape)."""
        r = self.r
        for name, info in self.nets.items():
            if info["in_shape"] == x.shape and r.random() < 0.6:
                return name, info["out_shape"]
        name = self.name("net")
        s = x.shape
        k = r.randrange(7)
        hyb = r.random() < 0.3
        if len(s) == 4 and k < 3:
            out = r.randint(1, 3)
            make = "gluon.nn.Conv2D(%d, kernel_size=1, in_channels=%d)" % (out, s[1])
            out_shape = (s[0], out) + s[2:]
        elif k == 0 and len(s) >= 2:
            make = "gluon.nn.BatchNorm(in_channels=%d)" % s[1]
            out_shape = s
        elif k == 1:
            make = "gluon.nn.LayerNorm(in_channels=%d)" % s[-1]
            out_shape = s
        elif k == 2 and len(s) >= 2:
            units = r.randint(1, 4)
            make = ("gluon.nn.HybridSequential()\n%s.add(gluon.nn.Dense(%d, activation='tanh'), gluon.nn.Dense(%d))"
                    % (name, r.randint(1, 5), units))
            out_shape = (s[0], units)
        else:
            units = r.randint(1, 5)
            rest = x.size // s[0]
            act = r.choice(["None", "'relu'", "'sigmoid'"])
            make = "gluon.nn.Dense(%d, in_units=%d, activation=%s)" % (units, rest, act)
            out_shape = (s[0], units)
        text = "%s = %s\n%s.initialize(mx.init.Uniform(0.5))" % (name, make, name)
        text += "\n%s(nd.zeros(%s))  # deferred shapes resolved eagerly" % (name, fmt_shape(s))
        if hyb:
            text += "\n%s.hybridize()" % name
        self.prelude.append(Stmt(text, "gluon"))
        self.nets[name] = {"in_shape": s, "out_shape": out_shape}
        return name, out_shape

    def f_gluon(self):
        r = self.r
        x = self.pick_float(lambda v: len(v.shape) >= 2, dtype="float32")
        if len(x.shape) < 2:
            x = self.new_input(self.rand_shape(2))
        name, out_shape = self._net(x)
        v = self.result(out_shape, "float32", [x], extra_deps=[name])
        self.emit("%s = %s(%s)" % (v.name, name, x.name), "gluon")

    def f_trainer(self):
        """One training step of a Gluon block: forward under record, backward, Trainer.step."""
        r = self.r
        x = self.pick_float(lambda v: len(v.shape) >= 2, dtype="float32")
        if len(x.shape) < 2:
            x = self.new_input(self.rand_shape(2))
        net, out_shape = self._net(x)
        tr = [t for t, n in self.trainers.items() if n == net]
        if tr:
            tr = tr[0]
        else:
            tr = self.name("tr")
            opt = r.choice(["'sgd', {'learning_rate': 0.1}", "'sgd', {'learning_rate': 0.1, 'momentum': 0.9}",
                            "'adam', {'learning_rate': 0.01}", "'sgd', {'learning_rate': 0.05, 'wd': 0.01}",
                            "'rmsprop', {'learning_rate': 0.01}", "'nag', {'learning_rate': 0.1, 'momentum': 0.5}"])
            self.prelude.append(Stmt("%s = gluon.Trainer(%s.collect_params(), %s)" % (tr, net, opt), "trainer"))
            self.trainers[tr] = net
        y = self.result(out_shape, "float32", [x])
        loss = self.result((1,), "float32", [y])
        rec = Stmt("with autograd.record():", "trainer", [
            Stmt("%s = %s(%s)" % (y.name, net, x.name), "trainer"),
            Stmt("%s = (%s * %s).mean()" % (loss.name, y.name, y.name), "trainer")])
        self.out.append(rec)
        if self.in_loop and r.random() < 0.4:
            self.emit("%s.set_learning_rate(abs(S[it]) / 10)" % tr, "trainer")
        self.emit("%s.backward()\n%s.step(%d)" % (loss.name, tr, x.shape[0]), "trainer", risky=True)

    def f_inplace(self):
        r = self.r
        x = self.pick(lambda v: v.dtype in FLOAT) or self.pick_float()
        s = x.shape
        k = r.randrange(13)
        risky = self.in_record > 0 or x.grad
        fam = "inplace"
        if k == 0:
            y = self._broadcast_partner(x)
            self.emit("%s += %s" % (x.name, y.name), fam, risky)
        elif k == 1:
            self.emit("%s *= %s" % (x.name, self.scalar()), fam, risky)
        elif k == 2:
            y = self.pick_float(shape=s, dtype=x.dtype)
            self.emit("%s -= %s" % (x.name, y.name), fam, risky)
        elif k == 3:
            self.emit("%s[:] = %s" % (x.name, self.scalar()), fam, risky)
        elif k == 4:
            y = self.pick_float(shape=s, dtype=x.dtype)
            self.emit("%s[:] = %s" % (x.name, y.name), fam, risky)
        elif k == 5:
            b = r.randint(0, s[0] - 1)
            e = r.randint(b + 1, s[0])
            self.emit("%s[%d:%d] = %s" % (x.name, b, e, self.scalar()), fam, risky)
        elif k == 6:
            b = r.randint(0, s[0] - 1)
            e = r.randint(b + 1, s[0])
            y = self.pick_float(shape=(e - b,) + s[1:], dtype=x.dtype)
            self.emit("%s[%d:%d] = %s" % (x.name, b, e, y.name), fam, risky)
        elif k == 7 and len(s) >= 2:
            b = r.randint(0, s[1] - 1)
            self.emit("%s[:, %d:%d] = %s" % (x.name, b, s[1], self.scalar()), fam, risky)
        elif k == 8:
            y = self.pick_float(shape=s, dtype=x.dtype)
            self.emit("nd.%s(%s, out=%s)" % (r.choice(["relu", "tanh", "sigmoid", "negative"]), y.name, x.name), fam,
                      risky)
        elif k == 9:
            y = self.pick_float(shape=s, dtype=x.dtype)
            self.emit("nd.elemwise_add(%s, %s, out=%s)" % (x.name, y.name, x.name), fam, risky)
        elif k == 10:
            y = self.pick_float(shape=s, dtype=x.dtype)
            self.emit("%s.copyto(%s)" % (y.name, x.name), fam, risky)
        elif k == 11:
            self.emit("%s[:] = %s * 2 + 1" % (x.name, x.name), fam, risky)
        else:
            self.emit("%s /= %s" % (x.name, r.choice(["2.0", "3.0", "0.5"])), fam, risky)

    def f_autograd(self):
        """A record block (children generated inside it), then maybe a backward and grad reads."""
        r = self.r
        if self.in_record:
            k = r.randrange(3)
            if k == 0:
                self.compound("with autograd.pause():", "autograd", r.randint(1, 3))
                return
            if k == 1:
                x = self.pick_float()
                v = self.result(x.shape, x.dtype)
                v.deps = set()
                self.emit("%s = %s(%s)" % (v.name, r.choice(["nd.BlockGrad", "nd.stop_gradient"]), x.name),
                          "autograd")
                return
            x = self.pick(lambda v: v.grad) or self.new_input(self.rand_shape(), grad=True)
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = %s * %s" % (v.name, x.name, self.scalar()), "autograd")
            return
        if not self.arrays(lambda v: v.grad) or r.random() < 0.3:
            self.new_input(self.rand_shape(), grad=True)
        self.record_id += 1
        rid = self.record_id
        self.in_record += 1
        # start from a leaf with a gradient so that something is differentiable
        leaf = self.pick(lambda v: v.grad and v.dtype == "float32") or self.new_input(self.rand_shape(), grad=True)
        first = self.result(leaf.shape, leaf.dtype, [leaf])
        head = "with autograd.record(%s):" % r.choice(["", "", "train_mode=False"])
        kids = [Stmt("%s = nd.%s(%s)" % (first.name, r.choice(["tanh", "sigmoid", "relu", "exp", "sin"]), leaf.name),
                     "autograd")]
        kids += self.block(r.randint(1, 6))
        self.in_record -= 1
        self.out.append(Stmt(head, "autograd", kids))
        outs = [v for v in self.arrays(lambda v: v.rec_block == rid and v.deps and v.dtype in FLOAT)]
        if not outs or r.random() < 0.15:
            return
        y = r.choice(outs[-3:])
        k = r.randrange(5)
        if k == 0:
            self.emit("%s.backward(retain_graph=True)" % y.name, "autograd", risky=True)
        elif k == 1 and len(outs) >= 2:
            z = r.choice(outs)
            self.emit("autograd.backward([%s, %s])" % (y.name, z.name), "autograd", risky=True)
        elif k == 2:
            leaves = sorted(l for l in y.deps if l in self.vars)
            if leaves:
                g = Var(self.name("l"), (), "float32", kind="list")
                self.vars[g.name] = g
                self.emit("%s = autograd.grad(%s, [%s])" % (g.name, y.name, leaves[0]), "autograd", risky=True)
            else:
                self.emit("%s.backward()" % y.name, "autograd", risky=True)
        else:
            self.emit("%s.backward()" % y.name, "autograd", risky=True)
        for leaf in sorted(y.deps):
            if leaf in self.vars and r.random() < 0.5:
                self.emit("OBS.append(G(%s))" % leaf, "autograd")

    def f_chain(self):
        """A long elementwise chain outside autograd: what fusion turns into one kernel."""
        r = self.r
        x = self.pick_float(dtype="float32")
        expr = x.name
        for _ in range(r.randint(3, 9)):
            k = r.random()
            if k < 0.35:
                expr = "nd.%s(%s)" % (r.choice(["relu", "tanh", "sigmoid", "exp", "abs", "negative", "square",
                                                  "softsign"]), expr)
            elif k < 0.7:
                op = r.choice(["*", "+", "-"])
                expr = "(%s %s %s)" % (expr, op, self.scalar())
            elif k < 0.85:
                expr = "nd.clip(%s, -3.0, 3.0)" % expr
            else:
                y = self.pick_float(shape=x.shape, dtype="float32")
                expr = "(%s %s %s)" % (expr, r.choice(["*", "+", "-"]), y.name)
        v = self.result(x.shape, "float32", [x])
        self.emit("%s = %s" % (v.name, expr), "chain")

    def f_read(self):
        r = self.r
        k = r.randrange(6)
        x = self.pick()
        if x is None:
            return self.f_elementwise()
        if k <= 2:
            self.emit("OBS.append(R(%s))" % x.name, "read")
        elif k == 3:
            self.emit("OBS.append(R(%s.sum().asscalar()))" % x.name, "read")
        elif k == 4:
            lst = [v for v in self.vars.values() if v.kind == "list" and v.shape]
            if lst:
                self.emit("OBS.append(R(%s))" % r.choice(lst).name, "read")
            else:
                self.emit("OBS.append(R(%s.asnumpy()))" % x.name, "read")
        else:
            if x.size == 1:
                self.emit("OBS.append(R(%s.asscalar()))" % x.name, "read")
            else:
                self.emit("%s.wait_to_read()" % x.name, "read")

    def f_meta(self):
        x = self.pick()
        if x is not None:
            self.emit("OBS.append(P(%s))" % x.name, "meta")

    def f_flush(self):
        self.emit(self.r.choice(["FLUSH()", "nd.waitall()", "FLUSH()"]), "flush")

    def f_nested(self):
        self.compound("with J():", "nested", self.r.randint(1, 5))

    def f_loop(self):
        if self.in_loop:
            return self.f_chain()
        self.in_loop = True
        n = self.r.choice([2, 2, 3, 5, 12])
        self.compound("for it in range(%d):" % n, "loop", self.r.randint(1, 6))
        self.in_loop = False

    def f_raise(self):
        kids = self.block(self.r.randint(1, 4))
        kids.append(Stmt("raise Boom('mid-block')", "raise"))
        self.out.append(Stmt("try:", "raise", kids, "except Boom as e:\n    OBS.append(X(e))"))

    def f_runtime_fail(self):
        n = self.r.randint(2, 4)
        bad = self.r.random() < 0.6
        m = Var(self.name(), (n, n), "float32")
        if bad:
            text = "%s = nd.array(-np.eye(%d) + 0.1 * RNG.uniform(-1, 1, (%d, %d)), dtype='float32')" % (m.name, n, n, n)
        else:
            text = ("%s = nd.array(RNG.uniform(-1, 1, (%d, %d)), dtype='float32')\n"
                    "%s = nd.dot(%s, %s, transpose_b=True) + %d * nd.array(np.eye(%d))" % (m.name, n, n, m.name, m.name,
                                                                                              m.name, n, n))
        self.prelude.append(Stmt(text, "runtime_fail"))
        self.vars[m.name] = m
        v = self.result((n, n), "float32", [m])
        v.failed = bad
        self.emit("%s = nd.linalg.potrf(%s)" % (v.name, m.name), "runtime_fail", risky=True)
        if self.r.random() < 0.5:
            self.emit("OBS.append(R(%s))" % v.name, "runtime_fail")

    def f_shape_error(self):
        x = self.pick_float(lambda v: len(v.shape) == 2)
        if len(x.shape) != 2:
            x = self.new_input(self.rand_shape(2))
        y = self.new_input((x.shape[1] + 1, 2), x.dtype, grad=False)
        self.emit("%s = nd.dot(%s, %s)" % (self.name(), x.name, y.name), "shape_error", risky=True)

    def f_custom(self):
        x = self.pick_float(dtype="float32")
        v = self.result(x.shape, "float32", [x])
        self.emit("%s = nd.Custom(%s, op_type='fuzz_affine')" % (v.name, x.name), "custom", risky=True)

    def f_kvstore(self):
        r = self.r
        if r.random() < 0.5 or not self.kvs:
            kv = self.name("kv")
            w = self.new_input(self.rand_shape(), grad=False)
            key = r.randint(0, 9)
            upd = r.random() < 0.7
            self.prelude.append(Stmt("%s = mx.kv.create('local')%s\n%s.init(%d, %s)" % (
                kv, ("\n%s.set_updater(UPD)" % kv) if upd else "", kv, key, w.name), "kvstore"))
            self.kvs[kv] = (key, w)
        kv = r.choice(sorted(self.kvs))
        key, w = self.kvs[kv]
        g = self.pick_float(shape=w.shape, dtype="float32")
        self.emit("%s.push(%d, %s)\n%s.pull(%d, out=%s)" % (kv, key, g.name, kv, key, w.name), "kvstore", risky=True)

    def f_allclose(self):
        x = self.pick_float(dtype="float32")
        y = self.pick_float(shape=x.shape, dtype="float32")
        v = self.name()
        self.emit("%s = nd.contrib.allclose(%s, %s)\nOBS.append(R(%s))" % (v, x.name, y.name, v), "allclose",
                  risky=True)

    def f_sparse(self):
        x = self.pick_float(lambda v: len(v.shape) == 2, dtype="float32")
        if len(x.shape) != 2:
            x = self.new_input(self.rand_shape(2))
        v = self.result(x.shape, "float32", [x])
        st = self.r.choice(["row_sparse", "csr"])
        self.emit("%s = %s.tostype('%s').tostype('default') * 2" % (v.name, x.name, st), "sparse", risky=True)

    def f_cast(self):
        x = self.pick()
        if x is None:
            return self.f_elementwise()
        to = self.r.choice(["float64", "float32", "float16", "int32"])
        v = self.result(x.shape, to, [x] if to in FLOAT else [])
        form = self.r.choice(["%s = %s.astype('%s')", "%s = nd.cast(%s, dtype='%s')"])
        self.emit(form % (v.name, x.name, to), "cast")

    def f_create(self):
        r = self.r
        k = r.randrange(7)
        shape = self.rand_shape()
        if k == 0:
            v = self.result(shape, "float32")
            self.emit("%s = nd.zeros(%s)" % (v.name, fmt_shape(shape)), "create")
        elif k == 1:
            v = self.result(shape, "float32")
            self.emit("%s = nd.full(%s, %s)" % (v.name, fmt_shape(shape), self.scalar()), "create")
        elif k == 2:
            v = self.result(shape, "float32")
            self.emit("%s = nd.array(RNG.uniform(-1, 1, %s))" % (v.name, fmt_shape(shape)), "create")
        elif k == 3:
            n = r.randint(1, 6)
            v = self.result((n,), "float32")
            self.emit("%s = nd.arange(0, %d)" % (v.name, n), "create")
        elif k == 4:
            x = self.pick_float()
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = %s.copy()" % (v.name, x.name), "create")
        elif k == 5:
            x = self.pick_float()
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = %s(%s)" % (v.name, r.choice(["nd.ones_like", "nd.zeros_like"]), x.name), "create")
        else:
            x = self.pick_float()
            v = self.result(x.shape, x.dtype, [x])
            self.emit("%s = %s.as_in_context(mx.cpu(0))" % (v.name, x.name), "create")

    def f_pinned(self):
        x = self.pick_float(dtype="float32")
        v = self.result(x.shape, "float32")
        self.emit("%s = %s.copyto(mx.cpu_pinned(0))\n%s += 1" % (v.name, x.name, v.name), "pinned", risky=True)

    def f_del(self):
        c = [v for v in self.arrays() if not v.grad and v.name.startswith("a")]
        if not c:
            return self.f_scalar()
        v = self.r.choice(c)
        self.emit("del %s" % v.name, "del", risky=True)
        del self.vars[v.name]


    def f_np(self):
        """MXNet's NumPy interface on NDArrays: an `as_np_ndarray()` view (same memory), mx.np ops
        (their own operators, _npi_*), results turned back with `as_nd_ndarray()`; sometimes a
        write through the view, which changes the NDArray it was made from."""
        r = self.r
        x = self.pick_float(dtype="float32" if r.random() < 0.85 else "float64")
        X = "%s.as_np_ndarray()" % x.name
        k = r.randrange(11)
        fam = "np"
        if k == 0:
            v = self.result(x.shape, x.dtype, [x])
            if r.random() < 0.7:
                self.emit("%s = mx.np.%s(%s).as_nd_ndarray()" % (v.name, r.choice(NP_UNARY), X), fam)
            else:
                self.emit("%s = mx.np.%s(mx.np.abs(%s) + 0.5).as_nd_ndarray()" % (v.name, r.choice(NP_UNARY_POS), X),
                          fam)
        elif k == 1:
            y = self._broadcast_partner(x)
            a, b = (X, "%s.as_np_ndarray()" % y.name)
            if r.random() < 0.3:
                a, b = b, a
            v = self.result(x.shape, x.dtype, [x, y])
            if r.random() < 0.5:
                self.emit("%s = mx.np.%s(%s, %s).as_nd_ndarray()" % (v.name, r.choice(NP_BINARY), a, b), fam)
            elif self.seed >= NP_OPERATOR_SEEDS and r.random() < 0.5:
                # an operator with a Python scalar on either side (np_arithmetic.py's scalar forms)
                c, op = self.scalar(), r.choice(["+", "-", "*", "/"])
                expr = "%s %s %s" % ((X, op, c) if r.random() < 0.5 else (c, op, X))
                self.emit("%s = (%s).as_nd_ndarray()" % (v.name, expr), fam)
            else:
                ops = ["+", "-", "*"] + (["/"] if self.seed >= NP_OPERATOR_SEEDS else [])
                self.emit("%s = (%s %s %s).as_nd_ndarray()" % (v.name, a, r.choice(ops), b), fam)
        elif k == 2:
            fn = r.choice(["sum", "mean", "max", "min", "prod", "std", "var"])
            axis = r.randrange(len(x.shape))
            keep = len(x.shape) == 1 or r.random() < 0.4
            shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)) if keep else \
                tuple(d for i, d in enumerate(x.shape) if i != axis)
            v = self.result(shape, x.dtype, [x])
            self.emit("%s = mx.np.%s(%s, axis=%d, keepdims=%s).as_nd_ndarray()" % (v.name, fn, X, axis, keep), fam)
        elif k == 3:
            y = self.pick_float(shape=x.shape, dtype=x.dtype)
            v = self.result(x.shape, x.dtype, [x, y])
            c = self.scalar()
            if r.random() < 0.5:
                self.emit("%s = mx.np.where(%s > %s, %s, %s.as_np_ndarray()).as_nd_ndarray()" % (v.name, X, c, X, y.name),
                          fam)
            else:
                self.emit("%s = mx.np.clip(%s, -abs(%s), abs(%s) + 0.5).as_nd_ndarray()" % (v.name, X, c, c), fam)
        elif k == 4 and len(x.shape) == 2:
            n, kk = x.shape
            m = r.randint(1, 5)
            w = self.pick_float(shape=(kk, m), dtype=x.dtype)
            v = self.result((n, m), x.dtype, [x, w])
            fn = r.choice(["dot", "matmul"])
            self.emit("%s = mx.np.%s(%s, %s.as_np_ndarray()).as_nd_ndarray()" % (v.name, fn, X, w.name), fam)
        elif k == 5:
            axis = r.randrange(len(x.shape))
            forms = [("mx.np.flip(%s, %d)" % (X, axis), x.shape),
                     ("mx.np.cumsum(%s, axis=%d)" % (X, axis), x.shape),
                     ("mx.np.sort(%s, axis=%d)" % (X, axis), x.shape),
                     ("mx.np.transpose(%s)" % X, tuple(reversed(x.shape))),
                     ("mx.np.expand_dims(%s, %d)" % (X, axis), x.shape[:axis] + (1,) + x.shape[axis:]),
                     ("mx.np.repeat(%s, 2, axis=%d)" % (X, axis),
                      tuple(d * 2 if i == axis else d for i, d in enumerate(x.shape))),
                     ("mx.np.concatenate([%s, %s], axis=%d)" % (X, X, axis),
                      tuple(d * 2 if i == axis else d for i, d in enumerate(x.shape))),
                     ("mx.np.stack([%s, %s], axis=%d)" % (X, X, axis), x.shape[:axis] + (2,) + x.shape[axis:])]
            if x.shape[axis] >= 2:
                forms.append(("mx.np.diff(%s, axis=%d)" % (X, axis),
                              tuple(d - 1 if i == axis else d for i, d in enumerate(x.shape))))
            if len(x.shape) == 2:
                forms.append(("mx.np.tril(%s)" % X, x.shape))
            text, shape = r.choice(forms)
            v = self.result(shape, x.dtype, [x])
            self.emit("%s = %s.as_nd_ndarray()" % (v.name, text), fam)
        elif k == 6:
            idx = [r.randrange(x.shape[0]) for _ in range(r.randint(1, 3))]
            v = self.result((len(idx),) + x.shape[1:], x.dtype, [x])
            self.emit("%s = %s[mx.np.array(%s, dtype='int32')].as_nd_ndarray()" % (v.name, X, idx), fam)
        elif k == 7:
            b = r.randrange(x.shape[0])
            v = self.result((x.shape[0] - b,) + x.shape[1:], x.dtype, [x])
            self.emit("%s = %s[%d:].as_nd_ndarray()" % (v.name, X, b), fam)
        elif k == 8:  # a data-dependent shape: observed, not used later
            self.emit("OBS.append(R(%s[%s > %s]))" % (X, X, self.scalar()), fam, risky=True)
        elif k == 9 and not x.grad:  # writes through the view into x
            view = self.name("n")
            c = self.scalar()
            forms = ["{v}[{i}] = {c}", "{v} += {c}", "{v} *= {c}", "{v}[:] = mx.np.tanh({v})",
                     "{v}[{i}] = {v}[{i}] * 2"]
            text = r.choice(forms).format(v=view, i=r.randrange(x.shape[0]), c=c)
            self.emit("%s = %s\n%s" % (view, X, text), fam, risky=self.in_record > 0)
        else:
            v = self.result(x.shape, "float64" if x.dtype == "float32" else "float32", [x])
            self.emit("%s = %s.astype('%s').as_nd_ndarray()" % (v.name, X, v.dtype), fam)


def state_for(gen, w, dt):
    return gen.new_input(w.shape, dt, grad=False, lo=0.0, hi=0.5).name


def generate(seed):
    return Gen(seed).generate()
