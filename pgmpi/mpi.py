"""The MPI boundary: the only module in pgmpi that imports mpi4py.

Everything that crosses between ranks goes through the few verbs below. Each works with a
single process, with or without ``mpirun``, so the algorithms read like their
single-process textbook versions with a handful of one-line collective calls (the layout of
OpenAI Spinning Up's ``mpi_tools``).

Hot paths use the upper-case buffer methods (``Bcast``, ``Allreduce``) on one flat,
contiguous numpy array; the lower-case, pickling methods are used only for small objects at
start-up, at load time and for log statistics.

Failure semantics (see README "Guarantees"):

* :class:`CollectiveError` and its subclasses are raised on every rank at the same point
  (after a collective that told every rank the same thing). With more than one rank, an
  uncaught one is printed once, by the root, and every rank exits with status 1.
* Any other uncaught exception on any rank prints its traceback labelled with the rank and
  calls ``MPI_Abort``, so the job ends promptly instead of hanging in the next collective.
* Inside :func:`deferred_interrupts` (the training loops), Ctrl-C only sets a flag; the
  ranks agree on it with :func:`interrupt_requested` at an update boundary, save, and raise
  KeyboardInterrupt together, which ends the job with status 130.
* A rank that stays in one collective past its deadline (:func:`set_deadline`; a rank or
  host stopped or cut off) ends the job with ``MPI_Abort``; the root names the ranks that
  did not arrive or fell silent.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from contextlib import contextmanager

import numpy as np
from mpi4py import MPI

_COMM = MPI.COMM_WORLD


class CollectiveError(Exception):
    """An error raised on every rank at the same point; the job ends without MPI_Abort."""


class ConfigError(CollectiveError, ValueError):
    """A bad argument, environment, checkpoint or a setting that differs between ranks."""


class NonFiniteError(CollectiveError, FloatingPointError):
    """NaN or inf reached the gradients, returns or fitness; training stops before saving."""


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


def _arrive() -> None:
    """Wait until every rank has reached this point, in Python rather than inside MPI.

    A rank blocked in a C-level MPI call cannot act on Ctrl-C (Python runs signal handlers
    between bytecodes), so a rank that finished its share early and waits for the others
    would never report the interrupt. Polling a non-blocking barrier keeps every waiting
    rank interruptible; the collective that follows then finds every rank present.

    This is also where the watchdog (see :func:`set_deadline`) starts the clock: each rank
    tells the root which collective it reached (one small non-blocking send), and stays
    "inside" until :func:`_left` at the end of the collective.
    """
    if _COMM.Get_size() == 1:
        return
    _WATCH.enter()
    request, polls = _COMM.Ibarrier(), 0
    while not request.Test():
        time.sleep(2e-4)
        polls += 1
        if not _WATCH.threads and polls % 2000 == 0:
            _WATCH.check()


def _left() -> None:
    """The collective that followed :func:`_arrive` has returned: stop its clock."""
    if _COMM.Get_size() > 1:
        _WATCH.leave()


class _Watchdog:
    """The deadline on collectives, kept by a daemon thread.

    The thread, not the waiting loop, keeps the deadline, because a rank can also hang
    inside the C call after the barrier (a host stopped or cut off between the two), where
    no Python runs on the main thread; mpi4py releases the GIL there, and MPI was started
    with ``MPI_THREAD_MULTIPLE``, so the thread may send and abort. While its rank is inside
    a collective, the thread tells the root every second; the root, who hears from every
    rank, names those that never arrived and those that fell silent.
    """

    TAG = 0x7067  # point-to-point tag of arrival numbers sent to the root (COMM_WORLD)
    GRACE_S = 5.0  # other ranks wait this much longer, so the root, who can name, speaks
    SILENT_S = 3.0  # a rank inside a collective writes every second: this long is silence

    def __init__(self):
        self.limit, self.factor, self.floor = _deadline_from_env()
        self.count = 0  # collectives this rank has arrived at
        self.entered: float | None = None  # when this rank arrived at the current one
        self.last_done: float | None = None
        self.recent: deque[float] = deque(maxlen=20)  # seconds between collectives
        self.sends: list = []  # (request, buffer) of messages still in flight
        n = _COMM.Get_size()
        self.seen = np.zeros(n, dtype=np.int64)  # root: last collective reached, per rank
        self.heard = np.full(n, time.monotonic())  # root: when each rank last wrote
        self.sent = 0  # messages this rank has sent to the root
        self.received = np.zeros(n, dtype=np.int64)  # root: messages received per rank
        self.lock = threading.Lock()  # the main thread and the watchdog both send / receive
        self.thread: threading.Thread | None = None
        self.used = False  # whether the deadline was on at any arrival
        self.beat = 0.0  # seconds into the current wait of the last word to the root
        # Without MPI_THREAD_MULTIPLE (mpi4py's default, unless changed) the thread may not
        # call MPI: the waiting loop checks instead, which misses a hang inside the C call.
        self.threads = MPI.Query_thread() == MPI.THREAD_MULTIPLE

    def on(self) -> bool:
        return self.limit > 0 or self.factor > 0

    def enter(self) -> None:
        self.count += 1
        self.entered = time.monotonic()
        self.used = self.used or self.on()  # the same on every rank, as the settings are
        self.beat = 0.0
        self.tell_root()
        if self.thread is None and self.on() and self.threads:
            self.thread = threading.Thread(target=self.watch, name="pgmpi-watchdog", daemon=True)
            self.thread.start()

    def leave(self) -> None:
        now = time.monotonic()
        if self.last_done is not None:
            self.recent.append(now - self.last_done)
        self.last_done, self.entered = now, None

    def deadline(self) -> tuple[float | None, str]:
        """Seconds this rank may spend in one collective, and why (None: no deadline)."""
        limits = []
        if self.limit > 0:
            limits.append((self.limit, f"the limit of {self.limit:g} s (PGMPI_DEADLINE)"))
        recent = list(self.recent)
        if self.factor > 0 and recent:
            rule = max(self.floor, self.factor * max(recent))
            limits.append(
                (rule, f"{self.factor:g} x the longest of the last {len(recent)} intervals "
                       f"between collectives ({max(recent):.3g} s), at least {self.floor:g} s "
                       "(PGMPI_DEADLINE_FACTOR, PGMPI_DEADLINE_FLOOR)")
            )  # fmt: skip
        if not limits:
            return None, ""
        seconds, why = min(limits)
        if _COMM.Get_rank() != 0:
            seconds += self.GRACE_S + 0.1 * seconds
        return seconds, why

    def tell_root(self) -> None:
        """Root: note its own arrival and read the others'; others: send theirs (8 bytes)."""
        with self.lock:
            self.sends = [(r, b) for r, b in self.sends if not r.Test()]
            if _COMM.Get_rank() == 0:
                self.seen[0], self.heard[0] = self.count, time.monotonic()
                self.drain()
            elif self.on():
                buf = np.array([self.count], dtype=np.int64)
                self.sends.append((_COMM.Isend(buf, dest=0, tag=self.TAG), buf))
                self.sent += 1

    def drain(self) -> None:
        """Root: receive every arrival number that has come in (hold the lock)."""
        status, buf = MPI.Status(), np.zeros(1, dtype=np.int64)
        while _COMM.Iprobe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status):
            r = status.Get_source()
            _COMM.Recv(buf, source=r, tag=self.TAG)
            self.seen[r], self.heard[r] = max(self.seen[r], buf[0]), time.monotonic()
            self.received[r] += 1

    def close(self) -> None:
        """At exit: the root receives every message still on its way, so that no send is
        left pending at ``MPI_Finalize`` (over TCP that would wait forever)."""
        if not self.used:
            return  # the deadline was off at every arrival: nothing was sent
        self.entered = None
        with self.lock:
            self.limit = self.factor = 0.0  # the thread stops writing
            sent = _COMM.gather(self.sent, root=0)
            if sent is not None:
                buf = np.zeros(1, dtype=np.int64)
                for r in range(1, len(sent)):
                    for _ in range(sent[r] - int(self.received[r])):
                        _COMM.Recv(buf, source=r, tag=self.TAG)
            MPI.Request.Waitall([r for r, _ in self.sends])
            self.sends = []

    def watch(self) -> None:
        """The thread: every half second, check."""
        while True:
            time.sleep(0.5)
            self.check()

    def check(self) -> None:
        """Inside a collective: tell the root every second, and abort past the deadline."""
        entered, count = self.entered, self.count
        if entered is None or not self.on():
            return
        waited = time.monotonic() - entered
        if waited - self.beat >= 1.0:
            self.beat = waited
            self.tell_root()
        limit, why = self.deadline()
        if limit is not None and waited > limit and self.entered == entered:
            self.expire(waited, why, count)

    def expire(self, waited: float, why: str, c: int) -> None:
        """The deadline passed: say who is missing (the root knows) and abort the job."""
        me, n = _COMM.Get_rank(), _COMM.Get_size()
        if me == 0:
            with self.lock:
                self.drain()
            now = time.monotonic()
            missing = [r for r in range(n) if self.seen[r] < c]
            silent = [r for r in range(1, n) if self.seen[r] >= c]
            silent = [r for r in silent if now - self.heard[r] > self.SILENT_S]
            parts = []
            if missing:
                last = "/".join(map(str, sorted({int(self.seen[r]) for r in missing})))
                parts.append(f"rank(s) {missing} did not arrive (last arrived at {last})")
            if silent:
                quiet = min(now - self.heard[r] for r in silent)
                parts.append(
                    f"rank(s) {silent} arrived but have sent nothing for {quiet:.1f} s or "
                    "more (stopped, or their host unreachable)"
                )
            found = "; ".join(parts) or "every rank arrived and still answers"
            text = (
                f"pgmpi: watchdog: collective {c} did not complete within {waited:.1f} s, "
                f"{why}: {found}; aborting all {n} ranks"
            )
        else:
            text = (
                f"[rank {me}] pgmpi: watchdog: waited {waited:.1f} s in collective {c}, "
                f"{why} plus {self.GRACE_S:g} s and 10%, and rank 0 did not end the job: "
                f"rank 0 is not answering (stopped, or its host unreachable); "
                f"aborting all {n} ranks"
            )
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        # The launcher forwards what a rank wrote on its own schedule, and the abort can tear
        # the job down first (seen on a loaded machine: the job ended, the message lost).
        time.sleep(0.5)
        _abort(1)


def _deadline_from_env() -> tuple[float, float, float]:
    """(limit, factor, floor) in seconds from PGMPI_DEADLINE*, with the defaults."""
    values = []
    for name, default in (("", 1800.0), ("_FACTOR", 50.0), ("_FLOOR", 300.0)):
        text = os.environ.get("PGMPI_DEADLINE" + name, "")
        try:
            value = default if text == "" else 0.0 if text == "off" else float(text)
        except ValueError:
            value = -1.0
        if not value >= 0 or value == float("inf"):
            # Read the same way on every rank (the launcher passes one environment), so
            # this error is raised everywhere at the same point, at import.
            raise ConfigError(
                f"PGMPI_DEADLINE{name} must be a number of seconds >= 0 or 'off', got {text!r}"
            )
        values.append(value)
    return values[0], values[1], values[2]


def set_deadline(
    seconds: float | None = None, factor: float | None = None, floor: float | None = None
) -> None:
    """Set the watchdog on collectives (None leaves a value as it is).

    With more than one rank, a rank that waits at a collective longer than its deadline
    ends the job with ``MPI_Abort``, and the root names the ranks that did not arrive. The
    deadline is the smaller of ``seconds`` (default 1800, env ``PGMPI_DEADLINE``) and
    ``factor`` x the longest of this rank's last 20 intervals between collectives, but at
    least ``floor`` (defaults 50 and 300 s, env ``PGMPI_DEADLINE_FACTOR`` and
    ``PGMPI_DEADLINE_FLOOR``). 0 turns a rule off; both off, no deadline. Ranks other than
    the root wait 5 s and 10% longer, so the root speaks first. Call it on every rank with
    the same values; not collective.
    """
    for name, value in (("seconds", seconds), ("factor", factor), ("floor", floor)):
        if value is not None and not (0 <= value < float("inf")):
            raise ConfigError(f"set_deadline: {name} must be a finite number >= 0, got {value!r}")
    w = _WATCH
    w.limit = w.limit if seconds is None else float(seconds)
    w.factor = w.factor if factor is None else float(factor)
    w.floor = w.floor if floor is None else float(floor)


def allreduce_sum_(buffer: np.ndarray) -> np.ndarray:
    """Sum ``buffer`` element-wise over ranks, in place. Exact for integer buffers. Collective."""
    if size() > 1:
        _arrive()
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
        self.exact, self.limit = exact, 2.0 ** (62 - FIXED_POINT_BITS) / max(terms, 1)
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


def gather_stats(values: dict) -> list[dict] | None:
    """Every rank's small ``values`` dict, as a list on the root (None elsewhere). Collective."""
    _arrive()
    gathered = _COMM.gather(values, root=0)
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


def agree(settings: dict, problem: str | None = None) -> None:
    """Check, in one small collective, that every rank is fine and has the same settings.

    Args:
        settings: JSON-like values that must be equal on every rank (hyperparameters, seed,
            environment id, library version).
        problem: this rank's error message, or None if this rank found nothing wrong.

    Raises:
        ConfigError: on every rank, naming the first problem found (and the ranks that found
            it) or the first setting that differs (and the ranks that hold each value).

    Collective: every rank must call this.
    """
    reports = allgather_object((problem, settings))
    problems = [(r, p) for r, (p, _) in enumerate(reports) if p is not None]
    if problems:
        message = problems[0][1]
        ranks = [r for r, p in problems if p == message]
        where = "" if len(ranks) == len(reports) or size() == 1 else f" (on ranks {ranks})"
        raise ConfigError(message + where)
    for key in settings:
        values = [s.get(key) for _, s in reports]
        if any(v != values[0] for v in values):
            by_value: dict[str, list[int]] = {}
            for r, v in enumerate(values):
                by_value.setdefault(repr(v), []).append(r)
            held = "; ".join(f"{v} on ranks {rs}" for v, rs in by_value.items())
            raise ConfigError(f"setting {key!r} differs between ranks: {held}")


_interrupt = {"requested": False}  # set by a Ctrl-C inside deferred_interrupts()


@contextmanager
def deferred_interrupts():
    """Inside the block, Ctrl-C (SIGINT) only sets a flag that :func:`interrupt_requested`
    reports, so training can stop at the next update boundary with every rank agreed and the
    checkpoint saved. A second Ctrl-C raises KeyboardInterrupt at once, as usual.

    Outside the main thread (where Python cannot take signals) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _interrupt["requested"]:  # the second Ctrl-C: the user will not wait
            raise KeyboardInterrupt
        _interrupt["requested"] = True
        if is_root():  # os.write, not print: a handler may run in the middle of a print
            os.write(2, b"pgmpi: stopping at the end of this update (Ctrl-C again: at once)\n")

    _interrupt["requested"] = False
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        # None: a handler set outside Python, which cannot be put back; use Python's default
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
        _interrupt["requested"] = False


def interrupt_requested() -> bool:
    """True on every rank if Ctrl-C reached any rank inside :func:`deferred_interrupts`
    (each rank's flag as it stands when it calls this). Collective."""
    flag = np.array([int(_interrupt["requested"])], dtype=np.int64)
    return bool(allreduce_sum_(flag)[0])


def barrier() -> None:
    """Return once every rank has called this (waits interruptibly). Collective."""
    _arrive()
    _left()


def _excepthook(kind, value, tb) -> None:
    if isinstance(value, CollectiveError):
        # Every rank raised this at the same point: print it once and let each rank exit 1.
        if is_root():
            sys.stderr.write(f"pgmpi: error: {kind.__name__}: {value}\n")
            sys.stderr.flush()
        return
    if issubclass(kind, KeyboardInterrupt):  # Ctrl-C reaches every rank: say so once
        if is_root():
            sys.stderr.write("pgmpi: interrupted\n")
            sys.stderr.flush()
        else:
            time.sleep(0.5)  # let the root say it before this rank's abort ends the job
        _abort(130)
    lines = "".join(traceback.format_exception(kind, value, tb)).splitlines()
    sys.stderr.write("".join(f"[rank {rank()}] {line}\n" for line in lines))
    sys.stderr.write(f"[rank {rank()}] pgmpi: aborting all {size()} ranks\n")
    sys.stderr.flush()
    _abort(1)


def _abort(code: int) -> None:
    try:
        _COMM.Abort(code)
    finally:
        os._exit(code)  # if Abort ever returns (the launcher already tearing down), still exit


# With several ranks, an exception on one rank would otherwise leave the others blocked in
# their next collective until the allocation runs out. PGMPI_NO_ABORT=1 turns this off.
# One of several processes that a launcher started as lone ranks gets it too, so the
# launcher_problem() error is one line per process instead of a traceback each.
_SEVERAL = size() > 1 or launcher_problem() is not None
if _SEVERAL and os.environ.get("PGMPI_NO_ABORT") != "1":
    sys.excepthook = _excepthook

# Read after the hook is in place, so a bad PGMPI_DEADLINE* is one message, by the root.
_WATCH = _Watchdog()
if size() > 1:
    # atexit runs last-registered first: this before mpi4py's MPI_Finalize.
    atexit.register(_WATCH.close)
