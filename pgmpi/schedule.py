"""Who plays which unit of work: PrunedGA's self-scheduling.

A generation's units (one episode of one individual) are put in order longest predicted
first (:func:`predict`). With :func:`self_scheduled`, each rank takes the next unit in that
order whenever it is free, from a counter shared by all ranks
(:func:`pgmpi.mpi.shared_counter`), so a rank that draws short episodes, or runs on a faster
core, just plays more units (benchmarks/ga_simulate.py compares it with the static
longest-first split of pgmpi before it). Which rank plays a unit never changes its result,
so the order changes no number. :func:`sure_elites` says which
individuals a rank that has run out of units may already play the next generation's
episodes of (PrunedGA plays ahead while it waits).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

UNCERTAIN_QUANTILE = 90  # a mutated child is costed at least at this percentile (see predict)


def predict(longest: np.ndarray, parents: np.ndarray, mutated: np.ndarray) -> np.ndarray:
    """float64 (P,): the predicted steps of each individual's episodes, from ``longest``
    (each individual's longest episode in the previous generation), ``parents`` (each one's
    parent there, -1 if unknown) and ``mutated`` (bool: a mutated child, not an unchanged
    elite).

    An unchanged elite replays its own network: its longest episode predicts it well. A
    mutated child may fall at once where its parent walked, or walk for the whole episode
    where its parent fell, so it is costed at least at the 90th percentile of the previous
    generation's longest episodes. The uncertain units then start before the predictable
    ones, and the last units handed out, which decide how long the other ranks wait, are
    the best predicted (benchmarks/ga_scaling.py measured the choice; docs/benchmarks.md).
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


def sure_elites(fitness: np.ndarray, k: int) -> np.ndarray:
    """int64: the individuals certain to be among the top ``k`` of ``fitness`` (float64
    (P,), NaN for those still being played), best first; ranked as
    :meth:`pgmpi.optimizers.PruningOptimizer.tell` ranks (higher first, ties: lower index).

    A finished individual with ``a`` finished ones above it ends at rank ``a`` plus at most
    the number still being played, so the first ``k`` minus that number are sure.
    """
    done = np.flatnonzero(~np.isnan(fitness))
    unsure = len(fitness) - len(done)
    ranked = done[np.lexsort((done, -fitness[done]))]
    return ranked[: max(k - unsure, 0)]
