"""Playing ahead: what a PrunedGA rank does while it waits for the others at a generation's end.

The next generation depends on this one's whole ranking, but not all of it: its elites are
kept unchanged, and an elite's next episodes are keyed on its index in this generation
(``rng.GA_ELITE_EVALUATION``), so they are the same whoever plays them and whenever. So a
rank that has run out of units reads the results the ranks post to a board on rank 0 as
each unit ends (:func:`pgmpi.mpi.unit_board`), and once an individual is sure to be an
elite whatever the units still running give (:func:`sure_elites`), it plays
that individual's next episodes, a step at a time between tests of the barrier, each
claimed on the board first so that no two ranks play it. When the ranks meet, it finishes
the one it was playing, and the next generation takes the results instead of playing those
units again: the run's results are those of a run that waited (docs/benchmarks.md,
"Playing ahead"). :class:`PlayingAhead` is PrunedGA's evaluation with it: a
:class:`pgmpi.units.UnitEvaluation` whose waiting ranks play ahead through an :class:`Ahead`.

A board's stamps are an agent's number (``_AGENTS``, the same on every rank) shifted left
by 24 bits, plus a generation: nothing on the board is ever reset, and the stamps of two
agents of one process never meet.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import numpy as np

from pgmpi import mpi
from pgmpi.rollout import Episode
from pgmpi.units import Sums, UnitEvaluation

_AGENTS = itertools.count(1)  # numbers the agents of a process alike on every rank
LOOK_S = 0.002  # how often a rank with nothing to play reads which units have ended


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


class Ahead:
    """One agent's units played ahead, and the board it shares with the other ranks.

    A unit of generation g is (individual, episode) as ``individual * E + episode``; an
    unchanged elite's is counted by its index in generation g - 1. Collective: every rank
    must construct it, at the same point.
    """

    def __init__(self, units: int):
        self.board = mpi.unit_board(units)  # collective; None with 1 rank: nothing to play
        self.epoch = next(_AGENTS) << 24
        self.played: dict[tuple[int, int], tuple] = {}  # (index, episode) -> result
        self.playing: Episode | None = None
        self.look_at = 0.0

    def collect(self, units: int) -> list[tuple[tuple[int, int], tuple]]:
        """At a generation's start: the units of it this rank played ahead, the one it was
        playing when the ranks met finished first, as ((index in the generation before,
        episode), (return, steps, seconds, activity)), sorted. If another agent of this
        process has since replaced the board with a larger one (``units`` slots), what was
        claimed on the old one is dropped, to be played again. Collective."""
        board = mpi.unit_board(units)  # collective
        if board is not self.board:
            self.board, self.played, self.playing = board, {}, None
        if self.playing is not None:
            self._keep_playing(to_the_end=True)
        played, self.played = sorted(self.played.items()), {}
        return played

    def post(self, unit: int, value: float, g: int) -> None:
        """Tell the other ranks that ``unit`` of generation g returned ``value``."""
        if self.board is not None:
            self.board.post(unit, value, self.epoch + g)

    def claim(self, unit: int, g: int) -> bool:
        """Whether this rank is the first to take ``unit`` (index in generation g - 1 x E +
        episode) of an unchanged elite of generation g (always, alone)."""
        return self.board is None or self.board.claim(unit, self.epoch + g)

    def play(
        self,
        g: int,
        E: int,
        sure: Callable[[np.ndarray], np.ndarray],
        episode: Callable[[int, int], Episode],
        units: int,
    ) -> bool:
        """Work for a rank waiting at generation g's end: a step of the unit it is playing
        ahead, or else, every ``LOOK_S``, a new one, claimed first: the next episode of the
        first individual in ``sure(returns)`` (the individuals sure to be elites, best first,
        given the returns posted so far, float64 (units / E, E), NaN for those not posted)
        that nobody has taken, made by ``episode(individual, episode)``. Whether it did
        anything."""
        if self.playing is not None:
            self._keep_playing(to_the_end=False)
            return True
        if self.board is None or time.perf_counter() < self.look_at:
            return False
        self.look_at = time.perf_counter() + LOOK_S
        returns = self.board.read(units, self.epoch + g).reshape(-1, E)
        for x in sure(returns):
            for e in range(E):
                if (int(x), e) not in self.played and self.claim(int(x) * E + e, g + 1):
                    self.playing = episode(int(x), e)
                    self.playing.key = (int(x), e)
                    return True
        return False

    def _keep_playing(self, to_the_end: bool) -> None:
        """A step (or all the rest) of the unit being played ahead; kept when it ends."""
        while not self.playing.advance():
            if not to_the_end:
                return
        self.played[self.playing.key] = self.playing.result()
        self.playing = None


class PlayingAhead(UnitEvaluation):
    """A :class:`~pgmpi.units.UnitEvaluation` whose ranks, while they wait for the others at
    a generation's end, play the next generation's episodes of the individuals already sure
    to be elites (:class:`Ahead`); the next generation takes their results instead of
    playing them again. The same results as a UnitEvaluation. Collective: every rank must
    construct it, at the same point."""

    def __init__(self, ga):
        super().__init__(ga)
        self.ahead = Ahead(self.steps.size)  # collective: the next units, played early

    def begin(self, sums: Sums, g: int) -> None:
        """Record the units of generation g this rank played ahead. Collective."""
        E = self.steps.shape[1]
        for (x, e), result in self.ahead.collect(self.steps.size):  # collective
            for i in np.flatnonzero(self.elite_of == x):
                self.record(sums, int(i) * E + e, result, g)
                sums.ahead[mpi.rank()] += 1

    def record(self, sums: Sums, u: int, result: tuple, g: int) -> None:
        super().record(sums, u, result, g)
        self.ahead.post(u, result[0], g)

    def claim(self, g: int, i: int, e: int) -> bool:
        x = int(self.elite_of[i])
        return x < 0 or self.ahead.claim(x * self.steps.shape[1] + e, g)

    def meanwhile(self, g: int, masks: np.ndarray) -> Callable[[], bool]:
        """A step of :meth:`Ahead.play`: the next generation's episodes of the individuals
        sure to be elites, given the returns posted so far."""
        ga, E = self.ga, self.steps.shape[1]
        kept = masks.sum(axis=1) / ga.net.n_weights
        n_elites = ga.optimizer.n_elites
        ranked = lambda returns: ga.optimizer.ranked(ga.fitness(returns, kept))  # noqa: E731
        sure = lambda returns: sure_elites(ranked(returns), n_elites)  # noqa: E731

        def episode(x: int, e: int) -> Episode:
            activity = np.zeros(ga.net.n_weights) if ga.net.hebbian else None
            stream = self.elite_stream(g + 1, x, e)
            return ga._episode(ga.net.weights(masks[x]), stream, activity, training=True)

        return lambda: self.ahead.play(g, E, sure, episode, self.steps.size)
