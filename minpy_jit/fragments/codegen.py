"""Python code from a plan: the rewritten function and each fragment's bodies.

The rewritten function is the original with each fragment's statements replaced
by one call, Python to Python (the #5566 reply's design):

    def step(x, w, b, scale):                  def step(x, w, b, scale):
        h = nd.relu(nd.dot(x, w) + b)              h = __mj_f0(x, nd, w, b, range, scale)
        for _ in range(3):              ->         if h.shape[0] > 16:
            h = h * scale + 0.5                        h = __mj_f1(nd, h)
        if h.shape[0] > 16:                        return h
            h = nd.tanh(h)
        return h

Control flow and boundaries are the original statements, compiled with the
original function's globals and closure cells (so rebinding a global or a
closure variable is seen). A function with boundaries runs inside a jit()
scope of its own (`__mj_enter`/`__mj_exit`), so boundaries are still recorded
and fragments append to the same trace.

Each fragment has two bodies, functions of its inputs returning its outputs:
`plain` (the statements as written) and `capture` (the same statements with
every call, attribute read, index and in-place store routed through capture.py's
checks, which record what the run depends on). Positions are the original
file's, so errors point at the user's lines.
"""
import ast
import builtins
import copy
import types

HELPERS = ("__mj_ga", "__mj_gi", "__mj_call", "__mj_cm", "__mj_si", "__mj_aug", "__mj_augi", "__mj_iter",
           "__mj_slice")
UNBOUND_NAME = "__mj_UNBOUND"


class _Unbound:
    """Stands for an output name a fragment left unbound (e.g. the target of a loop run 0 times)."""

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()


def _name(id_, node, ctx=None):
    return ast.copy_location(ast.Name(id=id_, ctx=ctx or ast.Load()), node)


def _call(func_name, args, node, keywords=()):
    return ast.copy_location(ast.Call(func=_name(func_name, node), args=list(args), keywords=list(keywords)), node)


# ------------------------------------------------------------------ capture instrumentation

_AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=", ast.Mod: "%=",
            ast.Pow: "**=", ast.LShift: "<<=", ast.RShift: ">>=", ast.BitOr: "|=", ast.BitXor: "^=",
            ast.BitAnd: "&=", ast.MatMult: "@="}


class _Instrument(ast.NodeTransformer):
    """Routes every call, attribute read, subscript and in-place store through capture.py."""

    def _slice(self, s):
        if isinstance(s, ast.Slice):
            parts = [self.visit(p) if p is not None else ast.copy_location(ast.Constant(None), s)
                     for p in (s.lower, s.upper, s.step)]
            return _call("__mj_slice", parts, s)
        if isinstance(s, ast.Tuple):
            return ast.copy_location(ast.Tuple(elts=[self._slice(e) for e in s.elts], ctx=ast.Load()), s)
        return self.visit(s)

    def visit_Call(self, node):
        args = [self.visit(a) for a in node.args]
        keywords = [ast.copy_location(ast.keyword(arg=k.arg, value=self.visit(k.value)), k) for k in node.keywords]
        if isinstance(node.func, ast.Attribute):
            obj = self.visit(node.func.value)
            return _call("__mj_cm", [obj, ast.copy_location(ast.Constant(node.func.attr), node.func)] + args,
                         node, keywords)
        return _call("__mj_call", [self.visit(node.func)] + args, node, keywords)

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            return self.generic_visit(node)
        return _call("__mj_ga", [self.visit(node.value), ast.copy_location(ast.Constant(node.attr), node)], node)

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            return self.generic_visit(node)
        return _call("__mj_gi", [self.visit(node.value), self._slice(node.slice)], node)

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            t = node.targets[0]
            call = _call("__mj_si", [self.visit(t.value), self._slice(t.slice), self.visit(node.value)], node)
            return ast.copy_location(ast.Expr(value=call), node)
        node.value = self.visit(node.value)
        return node

    def visit_AugAssign(self, node):
        op = ast.copy_location(ast.Constant(_AUG_OPS[type(node.op)]), node)
        if isinstance(node.target, ast.Name):
            value = _call("__mj_aug", [_name(node.target.id, node.target), self.visit(node.value), op], node)
            return ast.copy_location(ast.Assign(targets=[_name(node.target.id, node.target, ast.Store())],
                                                value=value), node)
        t = node.target
        call = _call("__mj_augi", [self.visit(t.value), self._slice(t.slice), self.visit(node.value), op], node)
        return ast.copy_location(ast.Expr(value=call), node)

    def visit_For(self, node):
        node.iter = _call("__mj_iter", [self.visit(node.iter)], node.iter)
        node.body = [self.visit(s) for s in node.body]
        return node

    def visit_comprehension(self, node):
        node.iter = _call("__mj_iter", [self.visit(node.iter)], node.iter)
        node.ifs = [self.visit(i) for i in node.ifs]
        return node


# ------------------------------------------------------------------ fragment bodies

def _read_or_unbound(tmp, name, at):
    """`try: tmp = name` / `except NameError: tmp = UNBOUND` (UnboundLocalError is a NameError)."""
    def assign(value):
        return ast.copy_location(ast.Assign(targets=[_name(tmp, at, ast.Store())], value=value), at)
    handler = ast.copy_location(ast.ExceptHandler(type=_name("NameError", at), name=None,
                                                  body=[assign(_name(UNBOUND_NAME, at))]), at)
    return ast.copy_location(ast.Try(body=[assign(_name(name, at))], handlers=[handler], orelse=[], finalbody=[]),
                             at)


def outer_inputs(plan, frag):
    """Positions of the fragment's inputs that are globals or closure variables: they may not
    exist at a call (a global never assigned, a closure cell not filled yet)."""
    return [i for i, name in enumerate(frag.inputs)
            if plan.kind_of(name) in ("global", "closure variable") and name not in frag.maybe_unbound_inputs]


def _body_function(plan, frag, instrument, reads_outer_names=False):
    """FunctionDef `name(inputs) -> tuple(outputs)` holding the fragment's statements.
    `reads_outer_names`: the global and closure inputs are not arguments but read as written."""
    stmts = [copy.deepcopy(s) for s in frag.stmts]
    first = frag.stmts[0]
    ret_value = None
    if frag.returns:
        ret = stmts.pop()
        ret_value = ret.value
        stmts.append(ast.copy_location(ast.Assign(targets=[_name("__mj_ret", ret, ast.Store())], value=ret.value),
                                       ret))
    elif frag.returns_none:
        stmts.pop()
    if instrument:
        stmts = [_Instrument().visit(s) for s in stmts]
    names = []
    for out in frag.outputs:
        if out in frag.maybe_unbound:
            tmp = "__mj_o_" + out
            stmts.append(_read_or_unbound(tmp, out, first))
            names.append(tmp)
        else:
            names.append(out)
    if ret_value is not None:
        names.append("__mj_ret")
    last = frag.stmts[-1]
    stmts.append(ast.copy_location(ast.Return(value=ast.copy_location(
        ast.Tuple(elts=[_name(n, last) for n in names], ctx=ast.Load()), last)), last))
    skipped = {frag.inputs[i] for i in outer_inputs(plan, frag)} if reads_outer_names else set()
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in frag.inputs if n not in skipped], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fdef = ast.FunctionDef(name=plan.tree.name, args=args, body=stmts, decorator_list=[], returns=None,
                           type_comment=None)
    return ast.copy_location(fdef, first)


def fragment_bodies(plan, frag, helpers):
    """(plain, capture) functions of one fragment. `helpers` maps capture.py's names."""
    out = []
    for instrument in (False, True):
        fdef = _body_function(plan, frag, instrument)
        module = ast.Module(body=[fdef], type_ignores=[])
        ast.fix_missing_locations(module)
        code = compile(module, plan.filename, "exec")
        namespace = {"__builtins__": builtins, UNBOUND_NAME: UNBOUND}
        if instrument:
            namespace.update(helpers)
        exec(code, namespace)  # noqa: S102 - our own generated module
        out.append(namespace[plan.tree.name])
    return tuple(out)


def plain_body_reading_outer_names(plan, frag):
    """The fragment's statements as written, its global and closure inputs read from the
    function's module and cells: run when one of them is missing at a call, so that the
    NameError comes from the statement reading it, after the statements before it ran (as in
    the plain function). Its arguments are the other inputs, in order."""
    freevars = list(plan.fn.__code__.co_freevars)
    inner = _code_in_factory(_body_function(plan, frag, False, reads_outer_names=True), freevars, plan.filename)
    cells = tuple(plan.fn.__closure__[freevars.index(n)] for n in inner.co_freevars)  # the original's cells
    return types.FunctionType(inner, plan.fn.__globals__, plan.tree.name, None, cells)


def _code_in_factory(fdef, names, filename):
    """The code of function `fdef` compiled inside a factory whose parameters are `names`: the
    ones it reads are its free variables, their cells given when the function is made."""
    factory = ast.FunctionDef(name="__mj_factory", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[], kw_defaults=[],
        kwarg=None, defaults=[]), body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)


def body_source(plan, frag, instrument=False):
    """The fragment's body as readable Python (for explain)."""
    return ast.unparse(ast.fix_missing_locations(_body_function(plan, frag, instrument)))


# ------------------------------------------------------------------ the rewritten function

def _fragment_call(plan, frag):
    """The statements that stand in for a fragment in the rewritten function."""
    first = frag.stmts[0]
    args = []
    before = []  # an input that may be unbound is read as UNBOUND (try: tmp = x except NameError: ...)
    missing_ok = set(outer_inputs(plan, frag))
    for index, name in enumerate(frag.inputs):
        at = frag.input_nodes.get(name, first)
        if name in frag.maybe_unbound_inputs or index in missing_ok:
            # a global missing at the call is passed as UNBOUND (Fragment.on_miss: the statements
            # run as written, the NameError raised where the plain function raises it)
            tmp = "__mj_i_" + name
            before.append(_read_or_unbound(tmp, name, first))
            args.append(_name(tmp, at))
        else:
            args.append(_name(name, at))
    call = _call("__mj_f%d" % frag.index, args, first)
    targets = list(frag.outputs)
    if frag.returns:
        if not targets:
            return before + [ast.copy_location(ast.Return(value=call), first)]
        targets.append("__mj_ret")
    stmts = before
    last = frag.stmts[-1]  # the outputs are bound when the fragment's statements are done
    if not targets:
        stmts.append(ast.copy_location(ast.Expr(value=call), first))
    elif len(targets) == 1:
        stmts.append(ast.copy_location(ast.Assign(targets=[_name(targets[0], last, ast.Store())], value=call), first))
    else:
        tup = ast.copy_location(ast.Tuple(elts=[_name(t, last, ast.Store()) for t in targets], ctx=ast.Store()),
                                last)
        stmts.append(ast.copy_location(ast.Assign(targets=[tup], value=call), first))
    for name in frag.maybe_unbound:
        test = ast.copy_location(ast.Compare(left=_name(name, first), ops=[ast.Is()],
                                             comparators=[_name(UNBOUND_NAME, first)]), first)
        delete = ast.copy_location(ast.Delete(targets=[_name(name, first, ast.Del())]), first)
        stmts.append(ast.copy_location(ast.If(test=test, body=[delete], orelse=[]), first))
    if frag.returns:
        stmts.append(ast.copy_location(ast.Return(value=_name("__mj_ret", first)), first))
    elif frag.returns_none:
        stmts.append(ast.copy_location(ast.Return(value=None), first))
    return stmts


def _replace_fragments(tree, plan, memo):
    """In the copied tree, each fragment's statements become its call."""
    first_copy = {id(memo[id(f.stmts[0])]): f for f in plan.fragments}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            out = []
            i = 0
            while i < len(stmts):
                frag = first_copy.get(id(stmts[i]))
                if frag is None:
                    out.append(stmts[i])
                    i += 1
                    continue
                out.extend(_fragment_call(plan, frag))
                i += len(frag.stmts)
            setattr(node, field, out)


def rewritten_function(plan, fragment_calls, enter, exit_):
    """The function object: the original's signature, globals and closure cells; fragments replaced.

    `fragment_calls[k]` is fragment k's call; `enter`/`exit_` open and close the function's own
    jit() scope (None when the whole body is one fragment and needs none).
    """
    memo = {}
    tree = copy.deepcopy(plan.tree, memo)
    tree.decorator_list = []
    _replace_fragments(tree, plan, memo)
    if enter is not None:
        body = tree.body
        doc = [body.pop(0)] if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str) else []
        anchor = plan.tree
        enter_stmt = ast.copy_location(ast.Expr(value=_call("__mj_enter", [], anchor)), anchor)
        exit_stmt = ast.copy_location(ast.Expr(value=_call("__mj_exit", [], anchor)), anchor)
        tree.body = doc + [enter_stmt, ast.copy_location(ast.Try(body=body or [ast.Pass()], handlers=[], orelse=[],
                                                                 finalbody=[exit_stmt]), anchor)]
    fn = plan.fn
    freevars = list(fn.__code__.co_freevars)
    helpers = ["__mj_f%d" % i for i in range(len(plan.fragments))] + ["__mj_enter", "__mj_exit", UNBOUND_NAME]
    inner = _code_in_factory(tree, freevars + helpers, plan.filename)
    values = {UNBOUND_NAME: UNBOUND, "__mj_enter": enter, "__mj_exit": exit_}
    for i, call in enumerate(fragment_calls):
        values["__mj_f%d" % i] = call
    cells = []
    for name in inner.co_freevars:
        if name in freevars:
            cells.append(fn.__closure__[freevars.index(name)])
        else:
            cells.append(types.CellType(values[name]))
    out = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells))
    out.__kwdefaults__ = fn.__kwdefaults__  # the same dict: changed in place, seen by both
    out.__qualname__ = fn.__qualname__
    out.__module__ = fn.__module__
    out.__doc__ = fn.__doc__
    out.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    return out


def rewritten_source(plan):
    """The rewritten function as text (for explain)."""
    memo = {}
    tree = copy.deepcopy(plan.tree, memo)
    tree.decorator_list = []
    _replace_fragments(tree, plan, memo)
    return ast.unparse(ast.fix_missing_locations(tree))
