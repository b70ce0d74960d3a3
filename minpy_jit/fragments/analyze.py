"""AST analysis: a function's body split into fragments and boundaries.

A *fragment* is a maximal run of statements of one block (the function body, or
the body of an `if`, `while`, `with`, ...) that may be compiled: assignments,
augmented assignments, expression statements, `assert`, `pass`, `return`, and
`for` loops whose body is all of these (unrolled when the fragment is captured),
`with autograd.record():` (or `pause`, `train_mode`, `predict_mode`) around such
statements, and `.backward()` calls (a training step can be one fragment: its
gradients are computed inside the graph, backward.cc).
Everything else is a *boundary* and stays Python: `if`/`while` (control flow),
other `with` statements, `try`, `raise`, `del`, `global`, imports, nested `def`/`class`,
statements that assign attributes, call `print`/`exec`/..., read array data
(`.asnumpy()`, `.asscalar()`...) or change a Python container
(`.append()`...), calls of Python functions whose effects are unknown (resolved
from the function's globals at decoration), and statements listed in `breaks`
(graph breaks found when a capture was refused, see fragment.py).

This pass is a first, static cut. What a fragment really does is checked when it
is captured (capture.py); a fragment whose run cannot be replayed is split
further or runs as Python.

For each fragment the analysis gives its inputs (names read before written in
it: arguments, locals, closure variables, globals, builtins -- each becomes an
argument of the fragment call, evaluated by Python at the call as the original
code would) and its outputs (names it assigns that are read elsewhere, plus the
return value).
"""
import ast
import builtins
import inspect
import textwrap
import types

# Calls that are always boundaries, by builtin name.
BOUNDARY_BUILTINS = {
    "print": "prints", "input": "reads input", "open": "opens a file", "exec": "runs exec()",
    "eval": "runs eval()", "breakpoint": "enters the debugger", "setattr": "sets an attribute",
    "delattr": "deletes an attribute", "next": "advances an iterator", "iter": "makes an iterator",
    "id": "reads an object's identity", "hash": "hashes an object", "__import__": "imports",
}
# Builtins that make the whole function unsupported (they see or change the frame).
UNSUPPORTED_BUILTINS = {"locals", "vars", "globals", "exec", "eval"}
# Methods that read array data or drive autograd: boundaries.
DATA_METHODS = {
    "asnumpy": "reads array data (.asnumpy())", "asscalar": "reads array data (.asscalar())",
    "item": "reads array data (.item())", "tolist": "reads array data (.tolist())",
    "wait_to_read": "waits for array data", "wait_to_write": "waits for array data",
    "attach_grad": "attaches a gradient buffer",
    "__bool__": "reads array data", "__float__": "reads array data", "__int__": "reads array data",
}
# Methods that change a Python container in place.
MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem",
                    "add", "discard", "sort", "reverse"}
# autograd functions that change or use its state (calls outside `with`)
AUTOGRAD_EFFECTS = {"set_recording", "set_training", "mark_variables", "backward", "grad", "record", "pause",
                    "train_mode", "predict_mode"}
# autograd's scopes: `with` one of them may join a fragment (they only set autograd's state,
# which the recorder sees and the graph keeps; the state at the call is a guard)
AUTOGRAD_SCOPES = {"record", "pause", "train_mode", "predict_mode"}
# ... and `.backward()`: a boundary only if the capture finds it cannot run inside the graph
FLUSHING_METHODS = set(DATA_METHODS) | {"backward"}

SIMPLE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Return, ast.Assert)


class Unsupported(Exception):
    """The function as a whole cannot be compiled (it then runs under jit() recording)."""


class FragmentSpec:
    """A run of statements compiled as one unit."""

    def __init__(self, index, stmts):
        self.index = index
        self.stmts = stmts
        self.clear_dataflow()
        self.in_loop = False
        self.flush_follows = False  # the function ends, or a statement that flushes comes next
        self.first_line = stmts[0].lineno
        self.last_line = max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in stmts)
        # opens an autograd scope or runs backward(): its ops make an autograd segment of their
        # own, so a capture starts from an empty trace (what is pending runs first)
        self.sets_autograd = any(isinstance(n, ast.With) or (isinstance(n, ast.Call) and isinstance(
            n.func, ast.Attribute) and n.func.attr == "backward") for s in stmts for n in ast.walk(s))

    def clear_dataflow(self):
        """What _finish_fragment computes (it runs again until the plan's carried reads settle)."""
        self.inputs = []          # names, in order of first read
        self.input_lines = {}     # name -> line of its first read
        self.input_nodes = {}     # name -> the Name node of its first read (for positions)
        self.outputs = []         # names assigned here and read elsewhere (or carried round a loop)
        self.maybe_unbound = []   # outputs that may be unbound when the fragment ends
        self.maybe_unbound_inputs = []  # inputs that may be unbound when it starts (passed as UNBOUND)
        self.carried_inputs = []  # inputs only because a loop that may not run assigns them
        self.returns = False      # ends with `return <value>`: the value is the last output
        self.returns_none = False  # ends with a bare `return`

    @property
    def lines(self):
        return "%d" % self.first_line if self.first_line == self.last_line else "%d-%d" % (
            self.first_line, self.last_line)


class Boundary:
    """A statement that stays Python, and why."""

    def __init__(self, stmt, reason):
        # an expression statement reading array data or running backward: it flushes
        value = getattr(stmt, "value", None)
        self.flushes = isinstance(stmt, ast.Expr) and isinstance(value, ast.Call) and isinstance(
            value.func, ast.Attribute) and value.func.attr in FLUSHING_METHODS
        self.stmt = stmt
        self.line = stmt.lineno
        self.last_line = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
        self.kind = type(stmt).__name__.lower()
        self.reason = reason


class Plan:
    """The analysis of one function."""

    def __init__(self, fn, tree, filename):
        self.fn = fn
        self.tree = tree              # the FunctionDef, positions as in the file
        self.filename = filename
        self.fragments = []
        self.boundaries = []
        self.params = []
        self.locals = set()
        self.freevars = set(fn.__code__.co_freevars)
        self.cellvars = set()         # locals read by nested functions
        self.carried_reads = set()    # locals some fragment carries through a loop that may not run
        self.declared_global = set()

    @property
    def single_fragment(self):
        """The body is one fragment: calls need no jit() scope of their own."""
        body = [s for s in self.tree.body if not _is_docstring(s)]
        return (not self.boundaries and len(self.fragments) == 1
                and self.fragments[0].stmts == body)

    def kind_of(self, name):
        if name in self.params:
            return "argument"
        if name in self.locals:
            return "local"
        if name in self.freevars:
            return "closure variable"
        if hasattr(builtins, name) and name not in self.fn.__globals__:
            return "builtin"
        return "global"


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


# ------------------------------------------------------------------ source

def parse_function(fn):
    """The function's FunctionDef with line and column positions as in its file."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise Unsupported("no Python code object")
    if code.co_name == "<lambda>":
        raise Unsupported("a lambda (no statement source)")
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise Unsupported("a generator or coroutine (its body runs after the call returns)")
    try:
        source = inspect.getsource(fn)
        filename = inspect.getsourcefile(fn) or code.co_filename
    except (OSError, TypeError) as e:
        raise Unsupported("no source available (%s)" % e)
    dedented = textwrap.dedent(source)
    indent = 0
    first = source.splitlines()[0] if source else ""
    for a, b in zip(first, dedented.splitlines()[0] if dedented else ""):
        if a != b:
            break
    indent = len(first) - len(dedented.splitlines()[0]) if dedented else 0
    try:
        module = ast.parse(dedented)
    except SyntaxError as e:
        raise Unsupported("its source does not parse on its own (%s)" % e.msg)
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or defs[0].name != fn.__name__:
        raise Unsupported("its source is not a plain `def` statement")
    tree = defs[0]
    if isinstance(tree, ast.AsyncFunctionDef):
        raise Unsupported("an async function")
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    owner = _defining_class(fn)
    if owner:
        _mangle(tree, owner)
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    return tree, filename


def _defining_class(fn):
    """Name of the class whose body defines fn ('' if none): Python mangles `__x` names there."""
    parts = fn.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return ""


def _mangle(tree, classname):
    """Private names as the compiler mangles them inside class `classname` (the rewritten
    function is compiled outside the class body, where no mangling happens)."""
    prefix = "_" + classname.lstrip("_")
    if prefix == "_":
        return

    def m(name):
        return prefix + name if name.startswith("__") and not name.endswith("__") and "." not in name else name

    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            node.id = m(node.id)
        elif isinstance(node, ast.Attribute):
            node.attr = m(node.attr)
        elif isinstance(node, ast.arg):
            node.arg = m(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            node.arg = m(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [m(n) for n in node.names]


# ------------------------------------------------------------------ names

class _Names(ast.NodeVisitor):
    """Names bound and read in a function body, not descending into nested scopes
    (their reads still count as reads of the enclosing function's variables)."""

    def __init__(self):
        self.bound = set()
        self.globals = set()
        self.nonlocals = set()
        self.loads = []            # Name nodes read (in this scope or nested ones)
        self.nested_loads = set()  # names read by nested functions and lambdas
        self.unsupported = None
        self.depth = 0

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.loads.append(node)
            if self.depth:
                self.nested_loads.add(node.id)
        elif not self.depth:
            self.bound.add(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):  # `t += 1` reads t as well as binding it
            self.loads.append(node.target)
            if self.depth:
                self.nested_loads.add(node.target.id)
        self.generic_visit(node)

    def visit_Global(self, node):
        if not self.depth:
            self.globals.update(node.names)

    def visit_Nonlocal(self, node):
        if not self.depth:
            self.nonlocals.update(node.names)

    def _nested(self, node, bind_name=None):
        if bind_name and not self.depth:
            self.bound.add(bind_name)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:
            self.visit(d)
        self._nested(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._nested(node, node.name)

    def visit_Lambda(self, node):
        self._nested(node)

    def _comprehension(self, node):
        # Python 3: comprehension targets are local to it; its reads are reads of ours.
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.bound.add(node.target.id)  # binds in the enclosing function, even from a comprehension

    def visit_Import(self, node):
        if not self.depth:
            for a in node.names:
                self.bound.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        if node.name and not self.depth:
            self.bound.add(node.name)
        self.generic_visit(node)

    def visit_Call(self, node):
        if (isinstance(node.func, ast.Name) and node.func.id in UNSUPPORTED_BUILTINS
                and not (node.func.id == "vars" and node.args)):
            self.unsupported = self.unsupported or "it calls %s() (which sees the frame's variables)" % node.func.id
        self.generic_visit(node)

    def visit_Yield(self, node):
        self.unsupported = self.unsupported or "it yields"

    visit_YieldFrom = visit_Await = visit_Yield


def _loads_in(nodes):
    """Name nodes read in the given statements (including nested scopes)."""
    out = []
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                out.append(sub)
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                out.append(sub.target)  # read as well as written (as _Names counts it)
    return out


class _ReadsWrites(ast.NodeVisitor):
    """In execution order: names read before written, and names written, by statements."""

    def __init__(self, written=()):
        self.written = set(written)
        self.reads = []   # (name, node) read while not yet written
        self.writes = []

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.written:
                self.reads.append((node.id, node))
        else:
            self.written.add(node.id)
            self.writes.append(node.id)

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            if node.target.id not in self.written:
                self.reads.append((node.target.id, node.target))
            self.visit(node.value)
            self.written.add(node.target.id)
            self.writes.append(node.target.id)
        else:
            self.visit(node.target.value)
            self.visit(node.target.slice if isinstance(node.target, ast.Subscript) else node.target)
            self.visit(node.value)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
            self.visit(node.target)

    def visit_For(self, node):
        self.visit(node.iter)
        before = set(self.written)
        self.visit(node.target)
        for s in node.body:
            self.visit(s)
        # the loop may run zero times: a name it writes is not surely written after it, so a
        # later read may still see the value from before the fragment (an input)
        self.written = before

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.visit(node.target)

    def _scope(self, node):
        # comprehensions and lambdas: their own targets are theirs; free reads are ours
        inner = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                inner.add(sub.id)
            elif isinstance(sub, ast.arg):
                inner.add(sub.arg)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id not in inner and sub.id not in self.written:
                    self.reads.append((sub.id, sub))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda = _scope


# ------------------------------------------------------------------ statements

def _attribute_root(expr):
    """`a.b.c` -> ('a', ['b', 'c']); None if it is not a plain attribute chain."""
    attrs = []
    while isinstance(expr, ast.Attribute):
        attrs.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        return expr.id, attrs[::-1]
    return None


def _resolve(plan, name, attrs):
    """The object a global/closure attribute chain names now, or raises LookupError."""
    if name in plan.locals or name in plan.params:
        raise LookupError(name)
    if name in plan.freevars:
        idx = plan.fn.__code__.co_freevars.index(name)
        try:
            obj = plan.fn.__closure__[idx].cell_contents
        except ValueError:
            raise LookupError(name)
    elif name in plan.fn.__globals__:
        obj = plan.fn.__globals__[name]
    elif hasattr(builtins, name):
        obj = getattr(builtins, name)
    else:
        raise LookupError(name)
    for a in attrs:
        obj = getattr(obj, a)
    return obj


def _is_mxnet_op(obj):
    mod = getattr(obj, "__module__", None) or ""
    return mod.startswith(("mxnet.ndarray", "mxnet.numpy", "mxnet.numpy_extension")) or mod in (
        "ndarray", "_internal", "numpy", "_npi", "numpy_extension", "contrib", "random", "linalg", "sparse",
        "image", "op")


def _call_boundary(plan, call):
    """Why a call must stay Python, or None if it may be part of a fragment."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in BOUNDARY_BUILTINS and func.id not in plan.locals:
        return "calls %s(): %s" % (func.id, BOUNDARY_BUILTINS[func.id])
    if isinstance(func, ast.Attribute):
        if func.attr in DATA_METHODS:
            return "calls .%s(): %s" % (func.attr, DATA_METHODS[func.attr])
        if func.attr in MUTATING_METHODS:
            # a list the function itself made (a local that is not an argument) may be
            # changed inside a fragment: the capture checks it is not reachable from the inputs
            if not (isinstance(func.value, ast.Name) and func.value.id in plan.locals
                    and func.value.id not in plan.params):
                return "calls .%s(): changes a Python object" % func.attr
    chain = _attribute_root(func)
    if chain is None:
        return None
    name, attrs = chain
    try:
        obj = _resolve(plan, name, attrs)
    except (LookupError, AttributeError):
        return None  # a local or argument: decided when the fragment is captured
    shown = ".".join([name] + attrs)
    if attrs and attrs[-1] in AUTOGRAD_EFFECTS and getattr(obj, "__module__", "") == "mxnet.autograd":
        return "calls %s(): changes autograd state" % shown
    if getattr(obj, "__minpy_jit_function__", False):
        return "calls %s, another @minpy_jit.function" % shown
    if isinstance(obj, types.FunctionType) and not _is_mxnet_op(obj):
        return "calls %s, a Python function whose effects are unknown" % shown
    if isinstance(obj, type) and not (obj in (int, float, bool, str, tuple, list, dict, set, frozenset, slice,
                                              range, complex, zip, enumerate, reversed)):
        return "calls %s, a class (constructs an object)" % shown
    return None


def _with_boundary(plan, stmt):
    """Why a `with` statement stays Python, or None when it may join a fragment whole: every
    item is a call of one of autograd's scopes (resolved now, guarded at capture) bound to no
    name, and every statement of its body may join a fragment."""
    generic = "with: a context manager runs Python on entry and exit"
    for item in stmt.items:
        call = item.context_expr
        if item.optional_vars is not None or not isinstance(call, ast.Call):
            return generic
        chain = _attribute_root(call.func)
        try:
            obj = _resolve(plan, *chain) if chain else None
        except (LookupError, AttributeError):
            obj = None
        if getattr(obj, "__module__", "") != "mxnet.autograd" or getattr(obj, "__name__", "") not in AUTOGRAD_SCOPES:
            return generic
        for arg in call.args + [k.value for k in call.keywords]:
            for sub in ast.walk(arg):
                why = _call_boundary(plan, sub) if isinstance(sub, ast.Call) else None
                if why:
                    return why
    for sub in stmt.body:
        if isinstance(sub, ast.Return):
            return "with: its body returns"
        why = _static_boundary(plan, sub)
        if why:
            return "with: its body %s (line %d); the block stays Python" % (why, sub.lineno)
    return None


def _static_boundary(plan, stmt):
    """Why a statement must stay Python, or None if it may join a fragment."""
    if isinstance(stmt, ast.With):
        return _with_boundary(plan, stmt)
    if not isinstance(stmt, SIMPLE_STATEMENTS + (ast.For,)):
        return {
            ast.If: "if: control flow stays Python", ast.While: "while: control flow stays Python",
            ast.With: "with: a context manager runs Python on entry and exit",
            ast.Try: "try: exception handling stays Python", ast.Raise: "raise",
            ast.Delete: "del", ast.Global: "global declaration", ast.Nonlocal: "nonlocal declaration",
            ast.Import: "import", ast.ImportFrom: "import", ast.FunctionDef: "defines a function",
            ast.ClassDef: "defines a class", ast.Break: "break", ast.Continue: "continue",
        }.get(type(stmt), "%s statement" % type(stmt).__name__)
    if isinstance(stmt, ast.For):
        if stmt.orelse:
            return "for ... else"
        if not isinstance(stmt.target, (ast.Name, ast.Tuple)) or (
                isinstance(stmt.target, ast.Tuple) and not all(isinstance(e, ast.Name) for e in stmt.target.elts)):
            return "for: its target is not a name or a tuple of names"
        for sub in stmt.body:
            if isinstance(sub, (ast.Return,)):
                return "for: its body returns"
            why = _static_boundary(plan, sub)
            if why:
                return "for: its body %s (line %d); the loop stays Python" % (why, sub.lineno)
    targets = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    for t in targets:
        for sub in ast.walk(t):
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                return "assigns an attribute (%s): a Python side effect" % ast.unparse(sub)
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load) and (
                    sub.id in plan.declared_global or sub.id in plan.nonlocals):
                return "assigns %s `%s`" % ("global" if sub.id in plan.declared_global else "nonlocal", sub.id)
            if isinstance(sub, ast.Starred) and isinstance(sub.ctx, ast.Store):
                continue
        if isinstance(t, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Subscript) for e in t.elts):
            return "assigns into an index inside a tuple target"
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return None
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call):
            why = _call_boundary(plan, sub)
            if why:
                return why
        elif isinstance(sub, (ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await)):
            return "contains a %s" % type(sub).__name__.lower()
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id in plan.nonlocals:
            return "assigns nonlocal `%s`" % sub.id
    return None


def _bound_after(stmt, bound):
    """Locals definitely bound after `stmt` (None: control never falls through it)."""
    if bound is None:
        return None
    if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        out = set(bound)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            return out
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    out.add(sub.id)
        return out
    if isinstance(stmt, ast.If):
        a = _bound_after_block(stmt.body, bound)
        b = _bound_after_block(stmt.orelse, bound)
        if a is None:
            return b
        if b is None:
            return a
        return a & b
    if isinstance(stmt, ast.With):
        out = set(bound)
        for item in stmt.items:
            if item.optional_vars is not None:
                for sub in ast.walk(item.optional_vars):
                    if isinstance(sub, ast.Name):
                        out.add(sub.id)
        return _bound_after_block(stmt.body, out)
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
        return set(bound) | {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return set(bound) | {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.Delete):
        out = set(bound)
        for t in stmt.targets:
            if isinstance(t, ast.Name):
                out.discard(t.id)
        return out
    if isinstance(stmt, ast.Try):
        body = _bound_after_block(stmt.body, bound)
        paths = [_bound_after_block(stmt.orelse, body)] if body is not None else []
        for h in stmt.handlers:
            paths.append(_bound_after_block(h.body, set(bound) | ({h.name} if h.name else set())))
        live = [p for p in paths if p is not None]
        out = set.intersection(*live) if live else None
        if stmt.finalbody:
            out = _bound_after_block(stmt.finalbody, out if out is not None else set(bound))
        return out
    return set(bound)  # loops (may not run), expressions, asserts, pass...


def _bound_after_block(stmts, bound):
    for s in stmts:
        bound = _bound_after(s, bound)
        if bound is None:
            return None
    return bound


# ------------------------------------------------------------------ the pass

def analyze(fn, breaks=None):
    """Plans `fn`: fragments and boundaries. `breaks` maps statement lines forced to stay
    Python to the reason (graph breaks found at capture)."""
    tree, filename = parse_function(fn)
    plan = Plan(fn, tree, filename)
    a = tree.args
    plan.params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg:
        plan.params.append(a.vararg.arg)
    if a.kwarg:
        plan.params.append(a.kwarg.arg)
    names = _Names()
    for stmt in tree.body:
        names.visit(stmt)
    if names.unsupported:
        raise Unsupported(names.unsupported)
    plan.declared_global = names.globals
    plan.nonlocals = names.nonlocals
    plan.locals = (names.bound | set(plan.params)) - names.globals - names.nonlocals
    plan.cellvars = names.nested_loads & plan.locals
    plan.all_loads = names.loads
    plan.breaks = dict(breaks or {})
    _plan_block(plan, tree.body, set(plan.params), in_loop=False)
    # A value a fragment carries through unchanged (an input it adds for a loop that may not
    # run) is read there without a Name node: such reads make earlier writes live too, which
    # may add carried inputs elsewhere -- to a fixed point (each round only adds names).
    while True:
        for frag in plan.fragments:
            _finish_fragment(plan, frag)
        carried = {n for frag in plan.fragments for n in frag.maybe_unbound_inputs + frag.carried_inputs}
        if carried <= plan.carried_reads:
            break
        plan.carried_reads |= carried
    _mark_flush_follows(plan)
    return plan


def _mark_flush_follows(plan):
    """Fragments after which the function's scope flushes at once (see FragmentState)."""
    flushing = {id(b.stmt) for b in plan.boundaries if b.flushes}
    body = plan.tree.body
    for frag in plan.fragments:
        if frag.returns or frag.returns_none:
            frag.flush_follows = True
            continue
        last = frag.stmts[-1]
        for i, s in enumerate(body):
            if s is last:
                frag.flush_follows = i + 1 == len(body) or id(body[i + 1]) in flushing
                break


def _plan_block(plan, stmts, bound, in_loop):
    """Splits one statement list; recurses into the bodies of boundary statements."""
    current = []
    current_bound = bound

    def close():
        nonlocal current
        if current and not all(_trivial(s) for s in current):
            frag = FragmentSpec(len(plan.fragments), current)
            frag.in_loop = in_loop
            frag.bound_at_start = current_bound
            plan.fragments.append(frag)
        current = []

    for stmt in stmts:
        if _is_docstring(stmt) and stmt is plan.tree.body[0]:
            bound = _bound_after(stmt, bound)
            continue
        why = None
        if stmt.lineno in plan.breaks:
            why = "split here after a capture: " + plan.breaks[stmt.lineno]
        if why is None:
            why = _static_boundary(plan, stmt)
        if why is None:
            # every local it reads must be bound when the fragment starts (or written earlier in it)
            rw = _ReadsWrites(_bound_after_block(current, set()) if current else ())
            rw.visit(stmt)
            start_bound = current_bound if current else bound
            for name, node in rw.reads:
                if name in plan.locals and name not in start_bound:
                    why = "reads `%s`, which may be unbound here" % name
                    break
        if why is None:
            if current and isinstance(stmt, ast.With):
                close()  # its autograd segment starts a fragment: a capture begins on an empty trace
            if not current:
                current_bound = bound
            current.append(stmt)
            bound = _bound_after(stmt, bound)
            if isinstance(stmt, ast.Return):
                close()
            if bound is None:
                return None
            continue
        close()
        plan.boundaries.append(Boundary(stmt, why))
        for body, loop in _bodies(stmt):
            _plan_block(plan, body, bound if bound is not None else set(), in_loop or loop)
        bound = _bound_after(stmt, bound)
        if bound is None:
            return None
    close()
    return bound


def _plain_value(e):
    return isinstance(e, (ast.Name, ast.Constant)) or (
        isinstance(e, (ast.Tuple, ast.List)) and all(_plain_value(x) for x in e.elts))


def _trivial(stmt):
    """Statements with nothing to compile (passing names around): left as they are."""
    if isinstance(stmt, ast.Pass) or _is_docstring(stmt):
        return True
    if isinstance(stmt, ast.Return):
        return stmt.value is None or _plain_value(stmt.value)
    if isinstance(stmt, ast.Assign):
        return _plain_value(stmt.value) and all(isinstance(t, (ast.Name, ast.Tuple)) and _plain_value(t)
                                                for t in stmt.targets)
    return False


def _written_names(stmt):
    """Names a statement binds in the function's scope (not in comprehensions or lambdas)."""
    rw = _ReadsWrites()
    rw.visit(stmt)
    return set(rw.writes)


def _bodies(stmt):
    """(statement list, is a loop body) for each block inside a boundary statement."""
    if isinstance(stmt, (ast.While, ast.For, ast.AsyncFor)):
        yield stmt.body, True
        yield stmt.orelse, False
    elif isinstance(stmt, ast.If):
        yield stmt.body, False
        yield stmt.orelse, False
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        yield stmt.body, False
    elif isinstance(stmt, ast.Try):
        yield stmt.body, False
        for h in stmt.handlers:
            yield h.body, False
        yield stmt.orelse, False
        yield stmt.finalbody, False


def _finish_fragment(plan, frag):
    frag.clear_dataflow()
    rw = _ReadsWrites()
    for s in frag.stmts:
        rw.visit(s)
    seen = set()
    for name, node in rw.reads:
        if name not in seen:
            seen.add(name)
            frag.inputs.append(name)
            frag.input_lines[name] = node.lineno
            frag.input_nodes[name] = node
    written = []
    for s in frag.stmts:
        for n in sorted(_written_names(s) - set(written)):
            written.append(n)
    inside = {id(n) for n in _loads_in(frag.stmts)}
    outside = {n.id for n in plan.all_loads if id(n) not in inside}
    outs = []
    for name in written:
        if name not in plan.locals:
            continue
        live = (name in outside or name in plan.cellvars or name in plan.carried_reads
                or (frag.in_loop and name in seen))
        if live:
            outs.append(name)
    last = frag.stmts[-1]
    if isinstance(last, ast.Return):
        if last.value is None:
            frag.returns_none = True
        else:
            frag.returns = True
    frag.outputs = outs
    body = frag.stmts[:-1] if frag.returns or frag.returns_none else frag.stmts
    # An output the fragment may leave unassigned (a loop that runs zero times) keeps the value
    # it had before, so the body function starts from that value: it is an input too. Where
    # it may be unbound before, the call passes UNBOUND and the name stays unbound after.
    assigned = _bound_after_block(body, set())
    for name in outs:
        if name in seen or (assigned is not None and name in assigned):
            continue
        frag.inputs.append(name)
        frag.input_lines[name] = frag.first_line
        if name in frag.bound_at_start:
            frag.carried_inputs.append(name)
        else:
            frag.maybe_unbound_inputs.append(name)
    # outputs that may still be unbound at the end (assigned only inside an unrolled loop)
    end_bound = _bound_after_block(body, set(frag.bound_at_start))
    frag.maybe_unbound = [n for n in outs if end_bound is not None and n not in end_bound]
