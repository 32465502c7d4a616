"""Tier 1: the RNG streams (pgmpi/rng.py) are keyed by purpose, not by the order drawn."""

import numpy as np

from pgmpi import rng


def test_streams_are_keyed_by_purpose_not_by_order():
    a = rng.stream(7, rng.EPISODE, 3, 4).random(5)
    assert np.array_equal(a, rng.stream(7, rng.EPISODE, 3, 4).random(5))
    others = [
        rng.stream(7, rng.EPISODE, 4, 3),
        rng.stream(7, rng.EPISODE, 3, 5),
        rng.stream(8, rng.EPISODE, 3, 4),
        rng.stream(7, rng.EVALUATE, 3, 4),
    ]
    assert all(not np.array_equal(a, g.random(5)) for g in others)
    assert 0 <= rng.env_seed(rng.stream(0, 0)) < 2**31
