"""`@minpy_jit.function`: a function's tensor code compiled from its source.

Stages, one module each:

    analyze.py   the AST split into fragments (straight-line tensor code, `for` over
                 `range` unrolled) and boundaries (control flow and the rest: Python)
    codegen.py   the rewritten function (fragments become calls) and the fragments'
                 bodies (plain, and instrumented for capture)
    capture.py   a fragment's run checked for replay: guards on what it read, refusal
                 of what a replay would not repeat
    fragment.py  a fragment's C++ state (cpp/src/fragment.cc: guard check + replay in
                 one call) and what happens on a miss
    function.py  the decorator; graph breaks; dual mode
    hints.py     ahead-of-time compilation from `minpy_jit.Tensor[...]` annotations
    explain.py   `f.explain(*args)`
"""
from .function import BlockFunction, Function, function
from .hints import Tensor

__all__ = ["function", "Function", "BlockFunction", "Tensor"]
