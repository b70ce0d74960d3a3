"""Problems the stress campaigns (tests/stress/: soak, threads, shapes, interrupt) found, kept as
fast regressions. Each names the campaign that found it."""
import numpy as np
from mxnet import nd

import minpy_jit


def test_memory_bounded_when_every_step_has_a_new_shape(isolated_runtime):
    """tests/stress/shapes.py: with a new input shape at every step (recompile limit lifted), RSS
    grew by ~6 KB a step with the LRU full: recycled lazy arrays were kept per shape for ever
    (pool buckets of shapes never seen again), and so were op signatures. Idle pool buckets are
    now dropped."""
    minpy_jit.config(recompile_limit=10 ** 9)
    rng = np.random.RandomState(0)
    steps = 1200
    for step in range(steps):
        x = nd.array(rng.uniform(-1, 1, (1 + step % 40, 1 + step // 40)).astype(np.float32))
        with minpy_jit.jit():
            y = nd.relu(x * 2 - 1)
            z = nd.sum(y * y, axis=1)  # y * y and 2x - 1 are dead intermediates: pooled
        z.wait_to_read()
    st = minpy_jit.stats()
    assert st["cache_misses"] >= steps, st  # every step compiled: the pool saw every shape
    # At most the buckets of the last LazyPool::kIdleReleases (256) trace releases survive, about
    # 5 arrays each here (~1300); a bucket per shape for ever held 5 a step (~6000).
    assert st["pooled_arrays"] < 2000, st["pooled_arrays"]
