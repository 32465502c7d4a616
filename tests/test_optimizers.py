"""Tier 1: the optimizers (pgmpi/optimizers.py): RMSProp and Adam steps against the
textbook formulas, whole and a chunk at a time."""

import math

import numpy as np

from pgmpi import optimizers
from pgmpi.optimizers import Adam, RMSProp


def test_rmsprop_step_by_hand():
    opt = RMSProp(3, learning_rate=0.1, decay_rate=0.9, eps=1e-5)
    params = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    g = np.array([2.0, -0.5, 0.0], dtype=np.float32)
    opt.step(params, g)
    cache = 0.1 * g.astype(np.float64) ** 2
    expected = np.array([1.0, -1.0, 0.0]) + 0.1 * g / (np.sqrt(cache) + 1e-5)
    np.testing.assert_allclose(params, expected, rtol=1e-6)
    np.testing.assert_allclose(opt.cache, cache, rtol=1e-6)


def test_adam_step_by_hand():
    opt = Adam(2, learning_rate=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    params = np.array([1.0, -1.0], dtype=np.float32)
    g1, g2 = np.array([2.0, -0.5], np.float32), np.array([1.0, 0.5], np.float32)
    opt.step(params, g1), opt.step(params, g2)
    m, v, expected = np.zeros(2), np.zeros(2), np.array([1.0, -1.0])
    for t, g in ((1, g1), (2, g2)):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g.astype(np.float64) ** 2
        expected += 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(params, expected, rtol=1e-5)
    assert opt.t == 2


def test_optimizer_steps_taken_a_chunk_at_a_time_equal_whole_vector_steps():
    """Pong's 1.28 M parameters span many chunks: each element gets the textbook step once,
    with the same float32 bits as the step on the whole vector at once."""
    n = 2 * optimizers.CHUNK + 7  # two whole chunks and a short one
    covered = np.concatenate([np.arange(n)[part] for part in optimizers.chunks(n)])
    assert np.array_equal(covered, np.arange(n))
    rng = np.random.default_rng(0)
    start = rng.standard_normal(n).astype(np.float32)
    adam, rms = Adam(n, learning_rate=2e-3), RMSProp(n, learning_rate=1e-4, decay_rate=0.99)
    p_adam, p_rms, want_adam, want_rms = (start.copy() for _ in range(4))
    m, v, cache = (np.zeros(n, np.float32) for _ in range(3))
    for t in (1, 2):
        g = rng.standard_normal(n).astype(np.float32) * 1e-3
        adam.step(p_adam, g)
        rms.step(p_rms, g)
        # The same steps on whole vectors.
        m *= 0.9
        m += (1.0 - 0.9) * g
        v *= 0.999
        v += (1.0 - 0.999) * np.square(g)
        lr = 2e-3 * math.sqrt(1.0 - 0.999**t) / (1.0 - 0.9**t)
        want_adam += np.float32(lr) * m / (np.sqrt(v) + np.float32(1e-8))
        cache *= 0.99
        cache += (1.0 - 0.99) * np.square(g)
        want_rms += 1e-4 * g / (np.sqrt(cache) + 1e-5)
    pairs = [(p_adam, want_adam), (adam.m, m), (adam.v, v), (p_rms, want_rms), (rms.cache, cache)]
    for got, want in pairs:
        assert np.array_equal(got.view(np.int32), want.view(np.int32))
