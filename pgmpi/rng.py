"""Random streams from numpy's SeedSequence: one root seed per run, a child per purpose.

A stream is keyed on what it is for (the run seed, a purpose, then e.g. the update and the
episode number), never on the rank that happens to use it. So episode e of update u draws
the same numbers on whichever rank plays it, and a run gives the same result on any number of
ranks. ``seed + rank`` would give overlapping, rank-dependent streams instead.
"""

from __future__ import annotations

import numpy as np

# Purposes: the first element of every spawn key, so streams for different jobs never meet.
INIT = 0  # initial network parameters
EPISODE = 1  # a policy-gradient episode: (EPISODE, update, episode)
GA_SELECTION = 2  # the GA's selection and mutation: (GA_SELECTION, generation)
GA_EVALUATION = 3  # one GA episode: (GA_EVALUATION, generation, individual, episode)
EVALUATE = 4  # evaluation episodes after training: (EVALUATE, call, episode)
GA_VALUES = 5  # the signed GA genome's weight values, drawn once: (INIT, GA_VALUES)
GA_ELITE_EVALUATION = 6  # an unchanged elite's GA episode: (.., generation, last index, episode)
ES_NOISE = 7  # ParallelES's shared noise table, drawn once on every rank: (ES_NOISE,)
ES_PERTURBATION = 8  # where pair p of ES generation g starts in the table: (.., g, p)
ES_EPISODE = 9  # one ES episode: (ES_EPISODE, generation, pair, sign: 0 +, 1 -, 2 unperturbed)
# 10: GA episodes every individual of a generation played (a retired screen's); not reused


def stream(seed: int, *key: int) -> np.random.Generator:
    """A generator for the child of ``SeedSequence(seed)`` at spawn key ``key``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(key)))


def env_seed(rng: np.random.Generator) -> int:
    """A 31-bit environment seed drawn from ``rng``."""
    return int(rng.integers(2**31 - 1))
