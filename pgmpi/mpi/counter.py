"""Work handed out without a coordinator: a counter on the root that ranks advance by
one-sided MPI (``MPI_Fetch_and_op``). PrunedGA takes its units of work from it."""

from __future__ import annotations

import atexit
from collections.abc import Iterator

import numpy as np
from mpi4py import MPI

from pgmpi.mpi.comm import _COMM, _arrive, _left


class SharedCounter:
    """A counter on the root that any rank advances alone: work handed out without a coordinator.

    One int64 lives in an MPI window on the root (0 bytes elsewhere). :meth:`take` gives a
    rank the next unfinished item of a list each time it asks, by one-sided fetch-and-add on
    that int (``MPI_Fetch_and_op``); the root's Python code takes no part, so a rank that
    finishes early simply takes more items. Every rank holds one passive-target access epoch
    open (``Lock_all``, flushed after each fetch) from creation to :meth:`free`: with MPICH on
    one node a fetch then takes about 2 us whatever the root is doing, whereas a
    ``Lock``/``Unlock`` per fetch waited until the root's next MPI call (measured: up to the
    whole of the root's episode). Across nodes some MPI builds (MPICH without hardware
    atomics) advance a fetch only when the root enters MPI; ``MPICH_ASYNC_PROGRESS=1`` gives
    them a progress thread.

    The counter is never reset (a reset would need a collective): a round of ``count`` items
    over n ranks always takes exactly ``count + n`` values (every item once, then one value
    past the end per rank), so every rank knows where the next round starts.
    """

    def __init__(self):
        n = 8 if _COMM.Get_rank() == 0 else 0
        self.win = MPI.Win.Allocate(n, disp_unit=8, comm=_COMM)
        if _COMM.Get_rank() == 0:  # freshly allocated memory holds anything: start at 0
            self.win.Lock(0, MPI.LOCK_EXCLUSIVE)
            self.win.Put(np.zeros(1, dtype=np.int64), 0)
            self.win.Unlock(0)
        _COMM.Barrier()  # nobody fetches before the zero is written
        self.win.Lock_all(MPI.MODE_NOCHECK)  # no rank ever locks exclusively from here on
        self.base = 0  # the counter's value where the next round starts
        self._one = np.ones(1, dtype=np.int64)
        self._got = np.zeros(1, dtype=np.int64)

    def _next(self) -> int:
        self.win.Fetch_and_op(self._one, self._got, 0, 0, MPI.SUM)
        self.win.Flush(0)  # the fetch is complete: _got holds the value
        return int(self._got[0])

    def take(self, count: int) -> Iterator[int]:
        """The indices among ``0 .. count - 1`` this rank gets, one at a time, each as the
        rank asks for it: every index goes to exactly one rank.

        Every rank must run each round to its end, the rounds in the same order, and pass a
        collective between two rounds (PrunedGA's Allreduce): a rank that started the next
        round early could take a value another rank still needs to end this one.

        Raises:
            RuntimeError: a value from before this round (a missing collective).
        """
        base = self.base
        self.base += count + _COMM.Get_size()
        while (k := self._next() - base) < count:
            if k < 0:
                raise RuntimeError("shared counter: a round began before the last one ended")
            yield k

    def free(self) -> None:
        """Release the window. Collective."""
        if self.win is not None:
            self.win.Unlock_all()
            self.win.Free()
            self.win = None


_COUNTER: SharedCounter | None = None


class _SerialCounter:
    """What :func:`shared_counter` gives a one-rank run: every index, in order, without MPI."""

    @staticmethod
    def take(count: int) -> Iterator[int]:
        return iter(range(count))


def shared_counter() -> SharedCounter | _SerialCounter:
    """The process's :class:`SharedCounter`, made by the first call (collective then: every
    rank must make that call at the same point) and freed at exit, before MPI_Finalize.
    With one rank, a plain counter that takes no MPI call."""
    global _COUNTER
    if _COMM.Get_size() == 1:
        return _SerialCounter()
    if _COUNTER is None:
        _arrive()
        _COUNTER = SharedCounter()
        _left()
        atexit.register(_COUNTER.free)  # runs before mpi4py's MPI_Finalize (LIFO)
    return _COUNTER
