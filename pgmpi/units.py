"""How PrunedGA and ParallelES play a generation over ranks: units, a counter, one Allreduce.

A unit is one episode of one individual (138 x 8 = 1,104 in the original's generation), so
ranks stay busy even at 128 ranks. Each rank takes the next unit, longest predicted first,
whenever it is free (:mod:`pgmpi.schedule`). Episode e of individual i in generation g is
seeded from (seed, g, i, e), whichever rank plays it; an unchanged elite's from (seed, g, its
index in generation g - 1, e), known before the generation's ranking is, so that it can be
played ahead (:mod:`pgmpi.ahead`). One Allreduce per generation sums a buffer of named
fields (:class:`Sums`) in which each slot has one non-zero contributor (the rank that played
the unit, or the rank the slot belongs to), so the sum is exact: a seed gives the same
results, bit for bit, on any number of ranks and under any assignment.

ParallelES plays its generations the same way, through :class:`Episodes`: a unit is one
episode that the algorithm names by its index alone, and nothing is played ahead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pgmpi import mpi, rng, schedule


class Sums:
    """Named float64 arrays laid end to end in one buffer, so that one Allreduce sums them all:
    ``Sums(returns=(P, E), busy=(n,))`` has attributes ``returns`` and ``busy``, zeros, views
    into ``buffer``. Each rank writes its share, sums ``buffer`` over ranks, reads the sums."""

    def __init__(self, **shapes: tuple[int, ...]):
        self.buffer = np.zeros(sum(math.prod(shape) for shape in shapes.values()))
        start = 0
        for name, shape in shapes.items():
            end = start + math.prod(shape)
            setattr(self, name, self.buffer[start:end].reshape(shape))
            start = end


@dataclass
class Results:
    """One generation's evaluation: the same on every rank, but for this rank's seconds."""

    returns: np.ndarray  # float64 (P, E): each episode's return
    steps: np.ndarray  # float64 (P, E): each episode's steps
    activity: np.ndarray | None  # float64 (P, W), each one's mean Hebbian terms (signed genome)
    wait_s: float  # the most idle rank's wait for the others (playing ahead counts as waiting)
    played_ahead: int  # how many of the units were played at the generation before's end
    play_s: float  # this rank's seconds playing
    allreduce_s: float  # this rank's seconds in the Allreduce


class UnitEvaluation:
    """A PrunedGA's populations played over all ranks, an episode of an individual at a time.

    Args:
        ga: the :class:`~pgmpi.ga.PrunedGA` whose populations it plays: its ``config``,
            ``net``, ``optimizer``, ``options`` (``trace``) and ``_play``, which plays one
            episode (playing ahead also uses ``fitness`` and ``_episode``).

    Attributes (what a benchmark reads after each generation; units are (P, E): individual
    by episode):
        steps: float64 (P, E), each unit's steps (the next generation's predictions).
        seconds: float64 (P, E), each unit's seconds playing: every rank's with ``trace``
            on (only then do they travel in the Allreduce), else this rank's (0 elsewhere).
        ranks: int64 (P, E), the rank that played each unit.
        costs: float64 (P * E,), the predictions the units (``i * E + e``) were handed out
            by; parents: int64 (P,), the parents they were predicted from.
        units: ``units(costs)``, this rank's units in play order; a benchmark may replace it.
        results: the last generation's :class:`Results` (None before the first).

    Collective: every rank must construct it, at the same point.
    """

    def __init__(self, ga):
        self.ga = ga
        P, E = ga.config["population_size"], ga.config["episodes_per_individual"]
        self.W = ga.net.n_weights if ga.net.hebbian else 0  # activities per unit
        self.steps = np.zeros((P, E))
        self.seconds = np.zeros((P, E))
        self.ranks = np.zeros((P, E), dtype=np.int64)
        self.costs = np.zeros(P * E)
        self.parents = np.full(P, -1, dtype=np.int64)
        self.elite_of = np.full(P, -1, dtype=np.int64)  # an unchanged elite's index in g - 1
        self.results = None
        self.counter = mpi.shared_counter()  # collective the first time in a process

    def run(self, masks: np.ndarray, g: int) -> Results:
        """Play every episode of every individual of generation ``g`` (bool masks (P, W)),
        each once on one rank, and sum the results over ranks. Collective: every rank must
        call this."""
        opt = self.ga.optimizer
        P, E = self.steps.shape
        me, n = mpi.rank(), mpi.size()
        self.parents = opt.parents.copy()
        self.elite_of = np.where(opt.mutated, -1, opt.parents)
        # Episodes end in a fall early or run long, and a long unit handed out last keeps
        # every other rank waiting: predict each unit's steps from last generation's.
        longest = self.steps.max(axis=1)
        self.costs = np.repeat(schedule.predict(longest, opt.parents, opt.mutated), E)
        traced = dict(seconds=(P, E)) if self.ga.options.trace else {}
        # each slot written by one rank only: ranks as player + 1, so that 0 is "not played"
        sums = Sums(returns=(P, E), steps=(P, E), **traced, ranks=(P, E),
                    activity=(P, E, self.W), busy=(n,), ahead=(n,))  # fmt: skip
        self.seconds = np.zeros((P, E))
        t0 = time.perf_counter()
        self.begin(sums, g)
        for u in self.units(self.costs):
            i, e = divmod(int(u), E)
            if not self.claim(g, i, e):
                continue  # played already, by a rank that played ahead
            activity = np.zeros(self.W) if self.W else None
            t = time.perf_counter()
            stream = self.stream(g, i, e)
            weights = self.ga.net.weights(masks[i])
            ret, steps = self.ga._play(weights, stream, activity, training=True)
            self.record(sums, int(u), (ret, steps, time.perf_counter() - t, activity), g)
        t1 = time.perf_counter()
        sums.busy[me] = t1 - t0
        mpi.allreduce_sum_(sums.buffer, meanwhile=self.meanwhile(g, masks))  # all results, once
        t2 = time.perf_counter()
        self.steps = sums.steps.copy()
        if self.ga.options.trace:
            self.seconds = sums.seconds.copy()
        self.ranks = sums.ranks.astype(np.int64) - 1
        activity = None
        if self.W:  # each individual's mean over its episodes, in the same order on every rank
            activity = sums.activity.sum(axis=1) / E
        wait = sums.busy.max() - sums.busy.min()
        ahead = int(sums.ahead.sum())
        self.results = Results(sums.returns, self.steps, activity, wait, ahead, t1 - t0, t2 - t1)
        return self.results

    def units(self, costs: np.ndarray):
        """This rank's units (indices into ``costs``): :func:`pgmpi.schedule.self_scheduled`."""
        return schedule.self_scheduled(costs, self.counter)

    def stream(self, g: int, i: int, e: int) -> np.random.Generator:
        """Episode e of individual i of generation g: keyed on (g, i, e), or, for an
        unchanged elite, on (g, its index in generation g - 1, e)."""
        x = int(self.elite_of[i])
        if x >= 0:
            return self.elite_stream(g, x, e)
        return rng.stream(self.ga.config["seed"], rng.GA_EVALUATION, g, i, e)

    def elite_stream(self, g: int, x: int, e: int) -> np.random.Generator:
        """Episode e of generation g of the unchanged elite that was individual x in g - 1."""
        return rng.stream(self.ga.config["seed"], rng.GA_ELITE_EVALUATION, g, x, e)

    def record(self, sums: Sums, u: int, result: tuple, g: int) -> None:
        """Write unit ``u``'s (return, steps, seconds, activity) into ``sums``."""
        i, e = divmod(u, self.steps.shape[1])
        sums.returns[i, e], sums.steps[i, e], self.seconds[i, e], activity = result
        sums.ranks[i, e] = mpi.rank() + 1
        if self.ga.options.trace:
            sums.seconds[i, e] = self.seconds[i, e]
        if self.W:
            sums.activity[i, e] = activity

    # What playing ahead (pgmpi.ahead.PlayingAhead) changes; here, nothing is played ahead.
    def begin(self, sums: Sums, g: int) -> None:
        """Before this rank plays generation g's units. Collective."""

    def claim(self, g: int, i: int, e: int) -> bool:
        """Whether this rank is to play episode e of individual i, handed to it."""
        return True

    def meanwhile(self, g: int, masks: np.ndarray) -> Callable[[], bool] | None:
        """Work for this rank while it waits for the others at generation g's end."""
        return None


class Episodes:
    """ParallelES's generations played over all ranks: ``count`` units, each one episode,
    taken from the shared counter by whichever rank is free, results summed by one Allreduce.

    Args:
        count: units per generation.
        stats: the shape (k, m) of the observation sums that units 0 to k - 1 gather.
        trace: whether each unit's seconds travel in the Allreduce (a traced run's).

    Attributes (the last generation's, what benchmarks read after each one, e.g. from
    ``train``'s callback):
        sums: the summed :class:`Sums`: float64 ``returns``, ``steps`` and ``ranks`` (the
            rank that played each unit + 1), (count,); ``stats`` (k, m); ``busy`` (ranks,),
            each rank's seconds playing; with ``trace``, ``seconds`` (count,), each unit's.
        play_s, allreduce_s: this rank's seconds playing and in the Allreduce.

    Collective: every rank must construct it, at the same point.
    """

    def __init__(self, count: int, stats: tuple[int, int], trace: bool):
        self.count, self.stats, self.trace = count, stats, trace
        self.sums, self.play_s, self.allreduce_s = None, 0.0, 0.0
        self.counter = mpi.shared_counter()  # collective the first time in a process

    def run(self, play: Callable[[int, np.ndarray | None], tuple[float, int]]) -> Sums:
        """Play every unit once, on one rank: ``play(u, stats)`` gives unit u's return and
        steps, adding its observations' sums to ``stats`` (its row of ``sums.stats``, or
        None past them). Returns :attr:`sums`, the same on every rank. Collective."""
        U, me = self.count, mpi.rank()
        traced = dict(seconds=(U,)) if self.trace else {}
        sums = Sums(returns=(U,), steps=(U,), ranks=(U,), **traced, stats=self.stats,
                    busy=(mpi.size(),))  # fmt: skip
        t0 = time.perf_counter()
        for u in schedule.self_scheduled(np.ones(U), self.counter):  # any order: equal costs
            stats = sums.stats[u] if u < len(sums.stats) else None  # the first units' only
            t = time.perf_counter()
            sums.returns[u], sums.steps[u] = play(u, stats)
            sums.ranks[u] = me + 1  # 0: not played
            if self.trace:
                sums.seconds[u] = time.perf_counter() - t
        t1 = time.perf_counter()
        sums.busy[me] = t1 - t0
        mpi.allreduce_sum_(sums.buffer)  # every unit's results, each from the rank that played it
        self.sums, self.play_s, self.allreduce_s = sums, t1 - t0, time.perf_counter() - t1
        return sums
