"""Work handed out without a coordinator, by one-sided MPI on windows on the root: a counter
that ranks advance (``MPI_Fetch_and_op``), from which PrunedGA takes its units of work, and
a board where ranks post each unit's result as it ends and claim units of the next round
(:class:`UnitBoard`), so that a rank with nothing left can play ahead."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from mpi4py import MPI

from pgmpi.mpi import comm as _comm
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


class UnitBoard:
    """Results posted as units end, and claims on units, in one window on the root.

    Four float64 arrays of ``size`` slots live on the root: the round each unit's value was
    posted in (its stamp), the value, and two arrays of claims, one per parity of the round
    they are for. Ranks write and read them alone (atomic accumulate operations in one
    passive-target epoch, as :class:`SharedCounter`), so a rank with no unit left can see
    which units have ended on other ranks, and take a unit of the next round that no other
    rank then plays. Stamps and claims are the round's number (PrunedGA adds one unique to
    the agent), so nothing is ever reset: a slot stamped in another round reads as empty.
    Claims for round h are made in rounds h - 1 (ahead) and h, so during a round two rounds
    are claimed at once, each in its own array (``h % 2``); that array's claims for round
    h - 2 all ended before the collective that closed round h - 2.
    """

    def __init__(self, size: int):
        self.size = size
        n = 4 * size if _COMM.Get_rank() == 0 else 0
        self.win = MPI.Win.Allocate(8 * n, disp_unit=8, comm=_COMM)
        if _COMM.Get_rank() == 0:  # -1: never posted, never claimed
            self.win.Lock(0, MPI.LOCK_EXCLUSIVE)
            self.win.Put(np.full(n, -1.0), 0)
            self.win.Unlock(0)
        _COMM.Barrier()
        self.win.Lock_all(MPI.MODE_NOCHECK)
        self._one = np.zeros(1)
        self._got = np.zeros(1)

    def _write(self, value: float, slot: int) -> None:
        self._one[0] = value
        self.win.Accumulate(self._one, 0, target=slot, op=MPI.REPLACE)
        self.win.Flush(0)

    def post(self, unit: int, value: float, stamp: float) -> None:
        """Post ``value`` as ``unit``'s result in round ``stamp``: the value first, then the
        stamp, each complete on the root before the next, so a reader that sees the stamp
        sees the value."""
        self._write(value, self.size + unit)
        self._write(stamp, unit)

    def read(self, count: int, stamp: float) -> np.ndarray:
        """float64 (count,): the values posted in round ``stamp`` by units ``0 .. count - 1``,
        NaN for those not posted yet."""
        stamps, values, ignored = np.empty(count), np.empty(count), np.empty(count)
        self.win.Get_accumulate(ignored, stamps, 0, target=(0, count, MPI.DOUBLE), op=MPI.NO_OP)
        self.win.Flush(0)
        target = (self.size, count, MPI.DOUBLE)
        self.win.Get_accumulate(ignored, values, 0, target=target, op=MPI.NO_OP)
        self.win.Flush(0)
        return np.where(stamps == stamp, values, np.nan)

    def claim(self, unit: int, stamp: int) -> bool:
        """Whether this rank is the first to claim ``unit`` for round ``stamp`` (an int: its
        parity picks the array)."""
        self._one[0] = stamp
        slot = (2 + stamp % 2) * self.size + unit
        self.win.Fetch_and_op(self._one, self._got, 0, slot, MPI.REPLACE)
        self.win.Flush(0)
        return self._got[0] != stamp

    def free(self) -> None:
        """Release the window. Collective."""
        if self.win is not None:
            self.win.Unlock_all()
            self.win.Free()
            self.win = None


_COUNTER: SharedCounter | None = None
_BOARD: UnitBoard | None = None


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
        _comm.exit_hooks.append(_COUNTER.free)  # at exit, after the watchdog's last word
    return _COUNTER


def unit_board(size: int) -> UnitBoard | None:
    """The process's :class:`UnitBoard`, with at least ``size`` slots, or None with one rank
    (nothing to play ahead). Collective: every rank must call it at the same point; a
    larger ``size`` than the board's replaces it."""
    global _BOARD
    if _COMM.Get_size() == 1:
        return None
    if _BOARD is None or _BOARD.size < size:
        _arrive()
        if _BOARD is not None:
            _BOARD.free()
        else:
            _comm.exit_hooks.append(lambda: _BOARD.free())  # likewise
        _BOARD = UnitBoard(size)
        _left()
    return _BOARD
