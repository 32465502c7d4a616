"""Evaluation: episodes shared out over ranks, and their mean with its confidence interval.

Both algorithms evaluate the same way: episode e of an evaluation is played by rank e % n from
its own stream, keyed on (seed, evaluation, e), so the returns do not depend on the rank
count (:func:`evaluation_returns`); :class:`Evaluation` is their mean, a float, with the 95%
confidence interval and every return beside it, as papers report them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pgmpi import mpi, rng


class Evaluation(float):
    """An evaluation's mean return, usable as a float, with what the papers report beside it.

    Attributes:
        ci95: (low, high), the mean's 95% confidence interval: mean +- 1.96 standard errors
            (sample standard deviation, ddof 1, over the square root of the episodes; NaN
            for one episode).
        returns: float64 (episodes,), every episode's return, in episode order.
        protocol: how the episodes were played, e.g. "sticky, sampled".
    """

    def __new__(cls, returns: np.ndarray, protocol: str):
        r = np.asarray(returns, dtype=np.float64)
        self = super().__new__(cls, float(r.mean()))
        n = len(r)
        half = 1.96 * float(r.std(ddof=1)) / float(np.sqrt(n)) if n > 1 else float("nan")
        self.ci95 = (float(self) - half, float(self) + half)
        self.returns = r
        self.protocol = protocol
        return self

    def __str__(self) -> str:
        half = (self.ci95[1] - self.ci95[0]) / 2
        n = len(self.returns)
        if n == 1:  # no interval from one episode
            return f"{float(self):+.2f} (1 episode, {self.protocol})"
        return f"{float(self):+.2f} \u00b1 {half:.2f} (95% CI, {n} episodes, {self.protocol})"

    __repr__ = __str__

    def __reduce__(self):  # pickled (mpi4py's object collectives) from what it is made of
        return Evaluation, (self.returns, self.protocol)


def evaluation_returns(
    episodes: int, seed: int, evaluation: int, play: Callable[[list], list[float]]
) -> np.ndarray:
    """float64 (episodes,): the return of each of ``episodes`` new episodes, shared out over
    ranks (episode e on rank e % n), each seeded from its own stream keyed on (seed,
    ``evaluation``, e), so the numbers do not depend on the rank count. ``play(streams)``
    gives this rank's returns, one per stream. Collective: every rank must call this."""
    mine = list(range(mpi.rank(), episodes, mpi.size()))
    returns = np.zeros(episodes)
    returns[mine] = play([rng.stream(seed, rng.EVALUATE, evaluation, e) for e in mine])
    return mpi.allreduce_sum_(returns)  # each return lives on one rank
