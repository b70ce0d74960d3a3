"""The kvstore updater in C that dist servers run for MXNet's SGD, NAG and Adam
(minpy_jit/server_updates.py), against MXNet's own Python Updater, bit for bit.

A local kvstore calls its updater from push exactly as a dist server calls it (key, summed
gradient, stored weight), so the C function is checked here in one process; the 2-worker
dist_sync job in test_distributed.py checks it on a real server.
"""
import copy

import mxnet as mx
import numpy as np
import pytest
from mxnet import nd

import minpy_jit  # noqa: F401  (loads the kernel library)
from minpy_jit import server_updates

SHAPES = [(7, 5), (5,), (3, 4, 2), (1,)]


def _kvstores(make_optimizer, shapes=SHAPES, dtype="float32"):
    """Two local kvstores with the same keys and weights: MXNet's Updater, and ours."""
    rs = np.random.RandomState(0)
    init = [rs.uniform(-1, 1, s).astype(dtype) for s in shapes]
    stores = []
    for _ in range(2):
        kv = mx.kv.create("local")
        kv.set_optimizer(make_optimizer())
        for k, v in enumerate(init):
            kv.init(k, nd.array(v, dtype=dtype))
        stores.append(kv)
    return stores


def _train(kv, shapes, steps, dtype="float32", seed=1):
    rs = np.random.RandomState(seed)
    for _ in range(steps):
        grads = [nd.array(rs.uniform(-3, 3, s).astype(dtype), dtype=dtype) for s in shapes]
        kv.push(list(range(len(shapes))), grads)
    out = [nd.zeros(s, dtype=dtype) for s in shapes]
    kv.pull(list(range(len(shapes))), out=out)
    return [o.asnumpy() for o in out]


def _optimizer(cls, **kw):
    def make():  # each its own copy of kw: a scheduler keeps state
        o = cls(**copy.deepcopy(kw))
        o.set_lr_mult({1: 0.5})
        o.set_wd_mult({2: 3.0})
        return o
    return make


def _sgd(**kw):
    return _optimizer(mx.optimizer.SGD, **kw)


def _factor(step=2):
    return mx.lr_scheduler.FactorScheduler(step, 0.5, base_lr=0.3)


CASES = [
    (mx.optimizer.SGD, dict(learning_rate=0.1)),
    (mx.optimizer.SGD, dict(learning_rate=0.05, momentum=0.9, wd=1e-3)),
    (mx.optimizer.SGD, dict(learning_rate=0.3, momentum=0.5, wd=0.01, clip_gradient=1.5, rescale_grad=1.0 / 48)),
    (mx.optimizer.SGD, dict(learning_rate=0.7, wd=0.02, clip_gradient=0.25, rescale_grad=0.37)),
    (mx.optimizer.SGD, dict(momentum=0.9, wd=1e-3, lr_scheduler=_factor())),
    (mx.optimizer.SGD, dict(lr_scheduler=mx.lr_scheduler.MultiFactorScheduler([3, 7], 0.3, base_lr=0.2))),
    (mx.optimizer.NAG, dict(learning_rate=0.1, momentum=0.9, wd=1e-3)),
    (mx.optimizer.NAG, dict(learning_rate=0.2, wd=0.01, clip_gradient=0.5, rescale_grad=0.25)),
    (mx.optimizer.NAG, dict(momentum=0.7, lr_scheduler=_factor(3))),
    (mx.optimizer.Adam, dict(learning_rate=0.01)),
    (mx.optimizer.Adam, dict(learning_rate=0.003, beta1=0.8, beta2=0.99, epsilon=1e-6, wd=0.01, clip_gradient=0.7,
                             rescale_grad=1.0 / 48)),
    (mx.optimizer.Adam, dict(lr_scheduler=mx.lr_scheduler.PolyScheduler(20, base_lr=0.05, pwr=2))),
]


@pytest.mark.parametrize("cls,kw", CASES, ids=["%s-%d" % (c.__name__, i) for i, (c, _) in enumerate(CASES)])
def test_c_updater_equals_mxnet_updater(cls, kw):
    theirs, ours = _kvstores(_optimizer(cls, **kw))
    handle = server_updates.set_c_updater(ours)
    assert handle is not None
    want = _train(theirs, SHAPES, steps=9)
    got = _train(ours, SHAPES, steps=9)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert server_updates.counts(handle) == (9 * len(SHAPES), 0)
    if "lr_scheduler" in kw or cls is mx.optimizer.Adam:  # rates asked at every call
        # the optimizer's own bookkeeping stepped as MXNet's (what a scheduler reads)
        assert ours._updater.optimizer.num_update == theirs._updater.optimizer.num_update == 9


@pytest.mark.filterwarnings("ignore:Accumulating with float16")
def test_calls_it_does_not_model_go_to_mxnets_updater():
    """float16 keys are MXNet's Updater's from their first call on (its state lives there)."""
    theirs, ours = _kvstores(_sgd(learning_rate=0.1, momentum=0.9), dtype="float16")
    handle = server_updates.set_c_updater(ours)
    want = _train(theirs, SHAPES, steps=3, dtype="float16")
    got = _train(ours, SHAPES, steps=3, dtype="float16")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert server_updates.counts(handle) == (0, 3 * len(SHAPES))


@pytest.mark.parametrize("make", [
    lambda: mx.optimizer.RMSProp(learning_rate=0.1),
    lambda: mx.optimizer.AdaGrad(learning_rate=0.1),
    lambda: type("MySGD", (mx.optimizer.SGD,), {})(learning_rate=0.1),  # a subclass: its own update
])
def test_other_optimizers_keep_mxnets_updater(make):
    kv = mx.kv.create("local")
    kv.set_optimizer(make())
    before = kv._updater_func
    assert server_updates.set_c_updater(kv) is None
    assert kv._updater_func is before


def test_a_custom_updater_is_left_alone():
    kv = mx.kv.create("local")
    kv._set_updater(lambda key, grad, weight: None)
    assert server_updates.set_c_updater(kv) is None
