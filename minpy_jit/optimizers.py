"""AdaGrad's update as one recorded kernel call per weight, in a thread with a jit() scope open.

MXNet 1.9.1 has no AdaGrad operator for dense arrays: `mxnet.optimizer.AdaGrad.update`
runs eleven elementwise ops per weight in Python (`grad * rescale_grad`, `clip`,
`history[:] += square(grad)`, `history + eps`, `sqrt`, `/`, `weight * wd`, `+`, `* -lr`,
`weight[:] += ...`). While a scope is open, the dense float32 CPU case records one
`_minpy_multi_adagrad_update` instead, which does the same eleven roundings in the same
order (cpp/kernels/update_rules.h, bit-identical); the runtime then runs the updates of a
step as one multi-tensor call, like the other optimizers' (cpp/src/updates.h).

The kernel computes with the float32 values MXNet would parse from each op's attribute
(`_core.mx_float`); everything else (sparse gradients, other dtypes, GPU, fusion off, a
negative clip bound) runs MXNet's own update.
"""
import numpy as np
from mxnet.optimizer import optimizer as _opt

from . import _core

_REAL_UPDATE = _opt.AdaGrad.update
_depth = _core.depth
_FLOAT32 = np.dtype(np.float32)
_exact = {}  # (value as MXNet's ctypes layer writes it, parse kind) -> exact float32 literal


def _mx_float(value, scalar_op):
    """The float32 an MXNet op computes with for a Python value passed as attribute:
    scalar_op=True for the scalar of `x * s` (a double field), else a float field."""
    key = (str(float(value)) if scalar_op else str(value), scalar_op)
    lit = _exact.get(key)
    if lit is None:
        lit = _exact[key] = _core.mx_float(key[0], scalar_op)
    return lit


def _neg(literal):
    return literal[1:] if literal.startswith("-") else "-" + literal


def _kernel_fits(weight, grad, history, clip):
    return (_core.fusing() and grad.stype == "default" and weight.stype == "default"
            and history.stype == "default" and weight.dtype == _FLOAT32 and grad.dtype == _FLOAT32
            and history.dtype == _FLOAT32 and weight.shape == grad.shape == history.shape
            and weight.context.device_type == "cpu" and (clip is None or clip >= 0))


def _adagrad_update(self, index, weight, grad, state):
    if not _depth() or not _kernel_fits(weight, grad, state, self.clip_gradient):  # no scope here: MXNet's
        return _REAL_UPDATE(self, index, weight, grad, state)
    self._update_count(index)
    lr = self._get_lr(index)
    wd = self._get_wd(index)
    clip = self.clip_gradient
    _core_update(weight, grad, state, out=weight, num_weights=1,
                 lrs="(%s,)" % _neg(_mx_float(-lr, True)),  # the op multiplies by float(-lr)
                 wds="(%s,)" % _mx_float(wd, True),
                 rescale_grad=_mx_float(self.rescale_grad, True),
                 clip_gradient="-1" if clip is None else _mx_float(clip, False),
                 epsilon=_mx_float(self.float_stable_eps, True))
    return None


_core_update = None


def install():
    global _core_update
    if _core_update is None:
        import mxnet.ndarray._internal as nd_internal
        _core_update = getattr(nd_internal, "_minpy_multi_adagrad_update", None)
        if _core_update is None:  # the kernel library is not loaded: nothing to stand in with
            return
    _opt.AdaGrad.update = _adagrad_update


def uninstall():
    _opt.AdaGrad.update = _REAL_UPDATE
