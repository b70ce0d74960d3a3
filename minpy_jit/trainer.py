"""Gluon's Trainer._update as one C call, in a thread with a jit() scope open (else MXNet's own).

MXNet's `Trainer._update` walks the parameters in Python: fresh-gradient flags, the Updater's
state lookups, the optimizer's update counts, learning rates and weight decays, and one op
wrapper per weight (Adam) or per 4 weights (SGD) -- most of a step's time once the updates
themselves run as one kernel call. For the optimizers our multi-tensor kernels know (SGD with
and without momentum, NAG, Adam, RMSProp, AdaGrad; SGD's and NAG's multi_precision form) the
extension does that walk (cpp/src/trainer_update.cc), with the same effects on the Python
objects, and records each context's updates as one kernel call. Anything it does not model
(another optimizer or a subclass of one, a kvstore that updates, AMP, a stale gradient, sparse
or float64 arrays, ...) runs MXNet's own `_update`, counted in
`stats()['trainer_updates']['python']` by reason.
"""
import math

from mxnet import lr_scheduler as _lr_scheduler
from mxnet.gluon.parameter import Parameter
from mxnet.gluon.trainer import Trainer
from mxnet.optimizer import optimizer as _opt

from . import _core

_REAL_UPDATE = Trainer._update

_core.set_trainer_classes(
    _opt.Updater,
    Parameter,  # its grad_req property returns _grad_req
    {_opt.SGD: "sgd", _opt.NAG: "nag", _opt.Adam: "adam", _opt.RMSProp: "rmsprop", _opt.AdaGrad: "adagrad"},
    # called again at the same update count, these return the same rate and change nothing
    [_lr_scheduler.FactorScheduler, _lr_scheduler.MultiFactorScheduler, _lr_scheduler.PolyScheduler,
     _lr_scheduler.CosineScheduler],
    math.sqrt)

_trainer_update = _core.trainer_update


def _update(self, ignore_stale_grad=False):
    if not _trainer_update(self, ignore_stale_grad):
        _REAL_UPDATE(self, ignore_stale_grad)


def install():
    Trainer._update = _update


def uninstall():
    Trainer._update = _REAL_UPDATE
