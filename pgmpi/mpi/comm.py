"""The MPI verbs: rank and size, the collectives, exact sums, and agreement on settings.

Everything that crosses between ranks goes through the few verbs below. Each works with a
single process, with or without ``mpirun``, so the algorithms read like their
single-process textbook versions with a handful of one-line collective calls (the layout of
OpenAI Spinning Up's ``mpi_tools``).

Hot paths use the upper-case buffer methods (``Bcast``, ``Allreduce``) on one flat,
contiguous numpy array; the lower-case, pickling methods are used only for small objects at
start-up, at load time and for log statistics.

:class:`CollectiveError` and its subclasses are raised on every rank at the same point
(after a collective that told every rank the same thing); :mod:`pgmpi.mpi.failure` says what
the job does with them and with every other error.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from mpi4py import MPI

from pgmpi.mpi import sites

_COMM = MPI.COMM_WORLD
ABORT_PAUSE_S = 0.5  # what abort() waits after flushing, for the launcher to forward it
watch = None  # the watchdog on collectives, set by pgmpi.mpi.init
on_first_collective = None  # pgmpi.mpi.init, handed down by the package (no upward import)
# What is freed collectively at exit (the shared counter's windows), after the watchdog has
# told the root that this rank reached the end of its script: freed before that, a rank at
# exit would wait in MPI_Win_free unnamed while the root waits in a save it alone called.
exit_hooks: list = []
# Whether this rank is between a collective's barrier and its end, or in the collective MPI
# calls of the exit: the other ranks may then be inside an MPI call that waits for this one,
# where no Python runs, so only MPI_Abort ends them if this rank is stopped
# (pgmpi.mpi.failure). A launcher does not always end the others when one rank exits: srun
# without --kill-on-bad-exit never does, and MPICH's mpirun now and then does not.
inside = False


class CollectiveError(Exception):
    """An error raised on every rank at the same point; the job ends without MPI_Abort."""


class ConfigError(CollectiveError, ValueError):
    """A bad argument, environment, checkpoint or a setting that differs between ranks."""


class NonFiniteError(CollectiveError, FloatingPointError):
    """NaN or inf reached the gradients, parameters, returns or fitness; training stops
    before anything non-finite is saved."""


class WriteError(CollectiveError, OSError):
    """A checkpoint or log could not be written (a full disk, say); what was saved before
    is intact."""


def rank() -> int:
    """This process's rank in the world communicator (0 without ``mpirun``)."""
    return _COMM.Get_rank()


def size() -> int:
    """Number of ranks in the job (1 without ``mpirun``)."""
    return _COMM.Get_size()


def is_root() -> bool:
    """True on rank 0, the rank that prints, logs and writes checkpoints."""
    return _COMM.Get_rank() == 0


def ranks_on_node() -> int:
    """Number of ranks sharing this node's memory (``MPI.COMM_TYPE_SHARED``). Collective."""
    node = _COMM.Split_type(MPI.COMM_TYPE_SHARED)
    count = node.Get_size()
    node.Free()
    return count


def library_version() -> str:
    """First line of the MPI library's version string, e.g. ``MPICH Version: 5.0.2``."""
    # Open MPI's string ends in a NUL byte, which would otherwise reach the run header.
    text = MPI.Get_library_version().replace("\0", "")
    return " ".join(text.split("\n", 1)[0].split())


# Where launchers write how many processes they started, most specific first. Slurm's
# SLURM_NTASKS is left out: it is the allocation's count, also seen by a batch script that
# rightly runs one process (and by mpirun's ranks inside an allocation).
LAUNCHER_SIZES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")


def launcher_problem(environ=None, ranks: int | None = None) -> str | None:
    """Why this job's launcher and MPI disagree on the rank count, or None if they agree.

    ``srun`` without the PMI plugin that mpi4py's MPI speaks (plain ``srun`` or
    ``--mpi=none`` for MPICH; anything but ``--mpi=pmix`` for Open MPI) starts N processes
    that each initialise MPI alone: N one-rank runs writing the same log and checkpoint.

    Args:
        environ: the environment to read (default ``os.environ``).
        ranks: the rank count MPI reports (default :func:`size`).
    """
    environ = os.environ if environ is None else environ
    ranks = size() if ranks is None else ranks
    for name in LAUNCHER_SIZES:
        value = environ.get(name, "")
        if value.isdigit():
            started = int(value)
            break
    else:
        return None
    if ranks != 1 or started <= 1:
        return None
    hint = (
        "`srun --mpi=pmix` (Open MPI"
        if library_version().startswith("Open MPI")
        else "`srun --mpi=pmi2` (MPICH, as in the mpich pip wheel"
    )
    return (
        f"the launcher started {started} processes ({name}={started}), but MPI gives each 1 "
        f"rank: they would run as {started} separate trainings writing the same files. "
        f"Start them with {hint}; `srun --mpi=list` shows what this Slurm offers) or with "
        f"`mpirun -n {started}` inside the allocation (the mpirun of the MPI that mpi4py was "
        "built with)"
    )


def broadcast_(buffer: np.ndarray) -> np.ndarray:
    """Overwrite ``buffer`` on every rank with the root's copy, in place. Collective."""
    _arrive()
    _COMM.Bcast(buffer, root=0)
    _left()
    return buffer


def broadcast_object(obj):
    """The root's ``obj`` on every rank (small objects only: pickled). Collective."""
    _arrive()
    obj = _COMM.bcast(obj, root=0)
    _left()
    return obj


def _arrive(meanwhile=None) -> None:
    """Wait until every rank has reached this point, in Python rather than inside MPI.

    A rank blocked in a C-level MPI call cannot act on Ctrl-C (Python runs signal handlers
    between bytecodes), so a rank that finished its share early and waits for the others
    would never report the interrupt. Polling a non-blocking barrier keeps every waiting
    rank interruptible; the collective that follows then finds every rank present.

    This is also where the watchdog (:mod:`pgmpi.mpi.watchdog`), once :func:`pgmpi.mpi.init`
    has started it, starts the clock: the rank tells the root which collective it reached
    and from where (:func:`pgmpi.mpi.sites.call_site`), and stays "inside" until
    :func:`_left` at the end of the collective. After the barrier the root checks that
    every rank came from the same place, before the collective runs.

    ``meanwhile()``, if given, is called instead of sleeping while the others are not all
    here, and says whether it did anything (else the rank sleeps as without it): work to do
    while waiting, in small pieces, for the barrier is tested between them.
    """
    global inside
    if _COMM.Get_size() == 1:
        return
    if watch is None:  # the first collective of a script that made no agent
        on_first_collective()
    watch.enter(sites.call_site())
    inside = True  # from here a rank that has seen the barrier complete may be in MPI
    request = _COMM.Ibarrier()
    polls = 0
    while not request.Test():
        if meanwhile is None or not meanwhile():
            time.sleep(2e-4)
        polls += 1
        if polls % 2000 == 0:
            watch.poll()
    watch.confirm()


def _left() -> None:
    """The collective that followed :func:`_arrive` has returned: stop its clock."""
    global inside
    inside = False
    if _COMM.Get_size() > 1:
        watch.leave()


def allreduce_sum_(buffer: np.ndarray, meanwhile=None) -> np.ndarray:
    """Sum ``buffer`` element-wise over ranks, in place. Exact for integer buffers.
    ``meanwhile``: work to do while waiting for the other ranks (see :func:`_arrive`).
    Collective."""
    if size() > 1:
        _arrive(meanwhile)
        _COMM.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
        _left()
    return buffer


def allreduce_mean_(buffer: np.ndarray) -> np.ndarray:
    """Average a floating-point ``buffer`` element-wise over ranks, in place. Collective."""
    allreduce_sum_(buffer)
    buffer /= size()
    return buffer


# Fixed-point scale of ExactSum: values are summed as round(x * 2**32) in int64.
FIXED_POINT_BITS = 32


class ExactSum:
    """A sum of float arrays over every rank whose bits do not depend on the rank count.

    Float addition is not associative, so a float Allreduce gives bits that depend on how
    the terms were split over ranks. Here each term is rounded once to int64 fixed point
    (``round(x * 2**32)``) and integers are summed, which is exact in any order. A term that
    is not finite, or so large that the sum could overflow, is counted instead of added.

    Args:
        n: length of every term.
        terms: how many terms all ranks add together at most (bounds each term's size).
        exact: False sums float32 instead (faster, rank-count dependent bits).
    """

    def __init__(self, n: int, terms: int, exact: bool = True):
        self.exact = exact
        self.limit = 2.0 ** (62 - FIXED_POINT_BITS) / max(terms, 1)
        # One flat buffer, so the reduction is one call: the sum, then the count of bad terms.
        self.buffer = np.zeros(n + 1, dtype=np.int64 if exact else np.float32)

    def add(self, x: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Add one term on this rank: a float array of length n; or, given ``rows``, a
        term that is zero but at those (distinct) rows of the sum seen as (n // w, w)
        rows, with x (len(rows), w) their values."""
        if not np.all(np.isfinite(x)) or np.abs(x).max(initial=0.0) >= self.limit:
            self.buffer[-1] += 1
            return
        total = self.buffer[:-1]
        if rows is None:
            rows = np.flatnonzero(x)  # a game's gradient is mostly zero: skip the zeros
            x = x[rows]
        else:
            total = total.reshape(-1, x.shape[1])
        total[rows] += np.rint(x * 2.0**FIXED_POINT_BITS).astype(np.int64) if self.exact else x

    def allreduce(self, divide_by: float = 1.0) -> tuple[np.ndarray, int]:
        """(the sum of every rank's terms over ``divide_by``, as float32, rounded once from
        the exact sum; the number of terms left out as bad). Collective."""
        allreduce_sum_(self.buffer)
        scale = 2.0**FIXED_POINT_BITS if self.exact else 1.0
        out = np.empty(len(self.buffer) - 1, dtype=np.float32)
        np.divide(self.buffer[:-1], scale * divide_by, out=out)  # one pass, in float64 if exact
        return out, int(self.buffer[-1])


def gather_object(obj) -> list | None:
    """Every rank's small ``obj``, as a list indexed by rank on the root (None elsewhere).
    Collective."""
    _arrive()
    gathered = _COMM.gather(obj, root=0)
    _left()
    return gathered


def allgather_object(obj) -> list:
    """Every rank's small ``obj``, as a list indexed by rank, on every rank. Collective."""
    _arrive()
    gathered = _COMM.allgather(obj)
    _left()
    return gathered


def global_stats(x: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, standard deviation, min and max of ``x`` pooled over all ranks. Collective."""
    x = np.asarray(x, dtype=np.float64).ravel()
    sums = allreduce_sum_(np.array([x.size, x.sum(), np.square(x).sum()]))
    n = max(sums[0], 1.0)
    mean = sums[1] / n
    lo = np.array([x.min() if x.size else np.inf, -(x.max() if x.size else -np.inf)])
    if size() > 1:
        _arrive()
        _COMM.Allreduce(MPI.IN_PLACE, lo, op=MPI.MIN)
        _left()
    std = float(np.sqrt(max(sums[2] / n - mean**2, 0.0)))
    return float(mean), std, float(lo[0]), float(-lo[1])


def agree(settings: dict, problem: str | None = None, error: type = ConfigError) -> None:
    """Check, in one small collective, that every rank is fine and has the same settings.

    Args:
        settings: JSON-like values that must be equal on every rank (hyperparameters, seed,
            environment id, library version).
        problem: this rank's error message, or None if this rank found nothing wrong.
        error: the exception to raise for a problem (a :class:`CollectiveError`).

    Raises:
        ConfigError (or ``error`` for a problem): on every rank, naming the first problem
            found (and the ranks that found it) or the first setting that differs (and the
            ranks that hold each value).

    Collective: every rank must call this.
    """
    reports = allgather_object((problem, settings))
    problems = [(r, p) for r, (p, _) in enumerate(reports) if p is not None]
    if problems:
        message = problems[0][1]
        ranks = [r for r, p in problems if p == message]
        where = "" if len(ranks) == len(reports) or size() == 1 else f" (on ranks {ranks})"
        raise error(message + where)
    for key in settings:
        values = [s.get(key) for _, s in reports]
        if any(v != values[0] for v in values):
            by_value: dict[str, list[int]] = {}
            for r, v in enumerate(values):
                by_value.setdefault(repr(v), []).append(r)
            held = "; ".join(f"{v} on ranks {rs}" for v, rs in by_value.items())
            raise ConfigError(f"setting {key!r} differs between ranks: {held}")


def barrier() -> None:
    """Return once every rank has called this (waits interruptibly). Collective."""
    _arrive()
    _left()


def abort(code: int) -> None:
    """End every rank of the job with exit status ``code`` (``MPI_Abort``), half a second
    after flushing what this rank wrote: the launcher forwards a rank's output on its own
    schedule, and the abort can tear the job down first (seen on a loaded machine: the job
    ended, the message lost)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or broken: nothing more to save
            pass
    time.sleep(ABORT_PAUSE_S)
    try:
        _COMM.Abort(code)
    finally:
        os._exit(code)  # if Abort ever returns (the launcher already tearing down), still exit
