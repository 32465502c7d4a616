"""Who plays which unit of work (one episode of one individual): self-scheduling, as PrunedGA
and ParallelES share their episodes out. The units are put in order longest predicted first
(:func:`predict`), and each rank takes the next one whenever it is free, from a counter shared
by all ranks (:func:`pgmpi.mpi.shared_counter`): a rank that draws short episodes, or runs on a
faster core, just plays more. Which rank plays a unit never changes its result.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

UNCERTAIN_QUANTILE = 90  # a mutated child is costed at least at this percentile (see predict)


def predict(longest: np.ndarray, parents: np.ndarray, mutated: np.ndarray) -> np.ndarray:
    """float64 (P,): each individual's predicted steps per episode, from ``longest`` (each
    one's longest episode last generation), ``parents`` (each one's parent there, -1 if
    unknown) and ``mutated`` (bool: a mutated child, not an unchanged elite). An unchanged
    elite replays its own network, so its longest episode predicts it; a mutated child may
    fall at once or walk the whole episode, so it is costed at least at the 90th percentile.
    The uncertain units then start first, and the last ones handed out, which decide how long
    the others wait, are the best predicted (measured: benchmarks/ga_scaling.py,
    docs/benchmarks.md).
    """
    longest = np.asarray(longest, dtype=np.float64)
    known = np.where(parents >= 0, longest[np.maximum(parents, 0)], longest.mean())
    floor = np.percentile(longest, UNCERTAIN_QUANTILE)
    return np.where(mutated, np.maximum(known, floor), known) + 1.0


def longest_first(costs: np.ndarray) -> np.ndarray:
    """int64 (N,): the indices of ``costs`` by decreasing cost, ties lower index first."""
    return np.lexsort((np.arange(len(costs)), -np.asarray(costs, dtype=np.float64)))


def self_scheduled(costs: np.ndarray, counter) -> Iterator[int]:
    """This rank's units (indices into ``costs``), longest predicted first, each taken from
    ``counter`` (shared by all ranks) when this rank asks for the next one."""
    order = longest_first(costs)
    return (int(order[k]) for k in counter.take(len(order)))
