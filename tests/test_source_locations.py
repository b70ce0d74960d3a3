"""Source locations for code that is not in a .py file: `python -c`, exec, the interactive
prompt, a notebook cell. Logs, flush events and graph printouts name the user's line there too
("<string>:3", "<stdin>:2", "In[4]:2"), also when the user's string calls library code (Gluon).
MXNet's own op functions are compiled from strings as well; they stay hidden (they run in an
mxnet module).
"""
import os
import subprocess
import sys
import textwrap

import mxnet as mx
from mxnet import gluon, nd

import minpy_jit

_PROGRAM = textwrap.dedent("""\
    import mxnet as mx, minpy_jit
    from mxnet import nd, gluon
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize()
    x = nd.ones((2, 4))
    with minpy_jit.jit():
        y = nd.relu(x * 2)
        z = net(y) + 1
    z.asnumpy()
    print(minpy_jit.last_graph())
    print([e["where"] for e in minpy_jit.events()])
""")


def _run(args, stdin=None):
    env = dict(os.environ, MINPY_JIT_LOG="recompiles")
    proc = subprocess.run([sys.executable] + args, input=stdin, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, proc.stderr


def _compile_lines(err):
    return [ln[ln.index("minpy_jit: compile"):] for ln in err.splitlines() if "minpy_jit: compile" in ln]


def test_python_dash_c_locations_in_log_events_and_graph():
    out, err = _run(["-c", _PROGRAM])
    lines = _compile_lines(err)
    assert lines and all(" at <string>:6 (scope exit)" in ln for ln in lines), err
    assert "# <string>:7" in out and "# <string>:8" in out, out  # relu, then the Dense layer's ops
    assert "['<string>:6']" in out, out


def test_exec_of_user_code_that_calls_library_code():
    program = "exec(compile(%r, '<string>', 'exec'))" % _PROGRAM.replace("import mxnet as mx, minpy_jit\n", "")
    out, err = _run(["-c", "import mxnet as mx, minpy_jit\n" + program])
    assert all(" at <string>:5 (scope exit)" in ln for ln in _compile_lines(err)), err
    assert "# <string>:6" in out and "# <string>:7" in out, out


def test_interactive_prompt_location():
    out, err = _run(["-i", "-q"], stdin=_PROGRAM.replace("+ 1\n", "+ 1\n\n"))  # the prompt ends a block on an empty line
    lines = _compile_lines(err)  # (after the prompts); each statement is compiled on its own: line 1
    assert lines and all(" at <stdin>:1 (scope exit)" in ln for ln in lines), err
    assert "# <stdin>:" in out, out


def test_exec_in_process_names_the_string_line():
    src = "a = nd.ones((2, 2))\nwith minpy_jit.jit():\n    b = nd.tanh(a) * 3\nb.asnumpy()\n"
    exec(compile(src, "<string>", "exec"), {"nd": nd, "minpy_jit": minpy_jit})
    assert minpy_jit.events()[-1]["where"] == "<string>:2"
    assert "# <string>:3" in minpy_jit.last_graph()


def test_notebook_cell_name(monkeypatch):
    """IPython compiles a cell under a file name like /tmp/ipykernel_<pid>/<hash>.py and maps it
    to the cell's number; locations show that name."""
    cell_file = "/tmp/ipykernel_4242/3141592653.py"

    class Compiler:
        _filename_map = {cell_file: 4}

    class Shell:
        compile = Compiler()

    fake = type(sys)("IPython")
    fake.get_ipython = lambda: Shell()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    src = "a = nd.ones((2, 2))\nwith minpy_jit.jit():\n    b = nd.sigmoid(a) + 5\nb.asnumpy()\n"
    exec(compile(src, cell_file, "exec"), {"nd": nd, "minpy_jit": minpy_jit, "__name__": "__main__"})
    assert minpy_jit.events()[-1]["where"] == "In[4]:2"
    assert "# In[4]:3" in minpy_jit.last_graph()
