"""What the job does when something fails: errors, Ctrl-C and (with several ranks) aborts.

* :class:`~pgmpi.mpi.comm.CollectiveError` and its subclasses are raised on every rank at
  the same point. An uncaught one is printed on one line, once, by the root, and every
  rank exits with status 1 (one process too).
* Any other uncaught exception on any rank prints its traceback labelled with the rank and
  calls ``MPI_Abort``, so the job ends promptly instead of hanging in the next collective.
* Inside :func:`deferred_interrupts` (the training loops), Ctrl-C only sets a flag; the
  ranks agree on it with :func:`interrupt_requested` at an update boundary, save, and raise
  KeyboardInterrupt together, which ends the job with status 130 (SIGTERM and SIGUSR1:
  SystemExit, 143 and 138). Signals that come within :data:`SAME_REQUEST_S` of each other
  are one request; a second request stops at once.
* With several ranks, SIGTERM and SIGUSR1 outside training end the job with 143 and 138.

:func:`install_excepthook` and :func:`install_signal_handlers` are called by
:func:`pgmpi.mpi.init`, not at import.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager

import numpy as np

from pgmpi.mpi import comm
from pgmpi.mpi.comm import (
    CollectiveError,
    abort,
    allreduce_sum_,
    is_root,
    launcher_problem,
    rank,
    size,
)

# The signals that stop training at the next step boundary, checkpoint saved: Ctrl-C, the
# SIGTERM of `timeout`, `scancel` and a batch system's time limit, and the SIGUSR1 a Slurm job
# asks for before its limit (`#SBATCH --signal=B:USR1@120`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)
# Stop signals this close together are one request to stop: mpirun forwards to every rank
# the signal that `scancel`, `pkill`, `docker stop` or a node's shutdown also sent each rank
# directly, so one request can reach a rank twice. Only a second request after this many
# seconds means "stop at once".
SAME_REQUEST_S = 3.0
_received: list[int] = []  # the stop signals received inside deferred_interrupts(), in order
_request_at: list[float] = []  # when this process's request to stop began (monotonic), if any


def _same_request() -> bool:
    """Whether a stop signal now belongs to the request already received."""
    return bool(_request_at) and time.monotonic() - _request_at[0] < SAME_REQUEST_S


def _stop_at_once(signum: int, why: str) -> None:
    """End the job now with status 128 + ``signum`` (Ctrl-C: KeyboardInterrupt, 130), saying
    ``why`` once. The root (one process too) says it and exits; with several ranks the
    launcher ends the others, and a rank it has not ended a second later (the root got no
    signal, or a launcher that lets the other ranks run on) ends the job with ``MPI_Abort``.
    A root inside a collective (:data:`pgmpi.mpi.comm.inside`) ends it with ``MPI_Abort``
    too: the others may be waiting for it inside an MPI call, where their own handlers never
    run. Never SystemExit: ranks leaving their scripts at different points look to the
    watchdog like a collective called on some ranks only, and one raised inside a C
    library's callback (Box2D's ray casts) comes out as that library's error instead."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    code = 128 + signum
    # os.write, not print: a handler may run in the middle of a print
    who = "" if is_root() else f"[rank {rank()}] "
    if is_root():
        os.write(2, f"pgmpi: {why} (exit status {code})\n".encode())
        if comm.inside and size() > 1:
            abort(code)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, RuntimeError):  # closed, or a print under way
                pass
        os._exit(code)
    time.sleep(1.0)  # the root's exit ends this rank first, when the root got the signal too
    os.write(2, f"{who}pgmpi: {why} (exit status {code})\n".encode())
    abort(code)


@contextmanager
def deferred_interrupts(step_name: str = "update"):
    """Inside the block, Ctrl-C (SIGINT), SIGTERM and SIGUSR1 only note the signal, which
    :func:`interrupt_requested` reports, so training can stop at the next ``step_name``
    boundary with every rank agreed and the checkpoint saved. Signals within
    :data:`SAME_REQUEST_S` of the first are the same request (one ``kill`` reaching mpirun,
    which forwards it, and the ranks). A second request stops at once: Ctrl-C raises
    KeyboardInterrupt, the others end the job with status 128 + the signal's number.

    Outside the main thread (where Python cannot take signals) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _received:
            if _same_request():  # forwarded by mpirun, or sent to every process at once
                return
            name = signal.Signals(signum).name
            _stop_at_once(signum, f"{name} again: stopping at once, nothing saved")
        _received.append(signum)
        _request_at[:] = [time.monotonic()]
        if is_root():  # os.write, not print: a handler may run in the middle of a print
            name = signal.Signals(signum).name
            again = "Ctrl-C" if signum == signal.SIGINT else name
            os.write(
                2,
                f"pgmpi: {name}: stopping at the end of this {step_name} "
                f"({again} again, {SAME_REQUEST_S:g} s or more later: at once)\n".encode(),
            )

    _received.clear()
    _request_at.clear()
    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler_before in previous.items():
            # None: a handler set outside Python, which cannot be put back: the default
            signal.signal(s, signal.SIG_DFL if handler_before is None else handler_before)
        if previous[signal.SIGINT] is None:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        _received.clear()  # _request_at stays: a late copy of this request is not a new one


def _outside_training(signum, frame) -> None:
    """SIGTERM or SIGUSR1 outside training (before it, during ``evaluate``, after it): end
    the job with status 128 + the signal's number, once, instead of the default death by
    the signal (status 15 and the launcher's banner). A copy of a request just handled
    (the one that stopped training, forwarded late) is ignored."""
    if _same_request():
        return
    _request_at[:] = [time.monotonic()]
    _stop_at_once(signum, f"stopped by {signal.Signals(signum).name}")


def install_signal_handlers() -> None:
    """With several ranks, SIGTERM and SIGUSR1 outside training end the job with status
    128 + the signal's number on every rank (see :func:`_outside_training`). Only where
    Python's default is in place (a handler the script set is kept), and only in the main
    thread."""
    if size() == 1 or threading.current_thread() is not threading.main_thread():
        return
    for s in (signal.SIGTERM, signal.SIGUSR1):
        if signal.getsignal(s) == signal.SIG_DFL:
            signal.signal(s, _outside_training)


def interrupt_requested(failed: bool = False, late: bool = False) -> tuple[int | None, bool, bool]:
    """(the stop signal that reached any rank inside :func:`deferred_interrupts`, SIGINT
    first, else None; whether any rank passed ``failed=True``; whether any rank passed
    ``late=True``), the same on every rank: one small Allreduce of every rank's flags, as
    they stand when it calls this. Collective."""
    mine = [int(s in _received) for s in STOP_SIGNALS] + [int(failed), int(late)]
    flags = allreduce_sum_(np.array(mine, dtype=np.int64))
    stop = next((int(s) for s, f in zip(STOP_SIGNALS, flags, strict=False) if f), None)
    return stop, bool(flags[-2]), bool(flags[-1])


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
        abort(130)
    lines = "".join(traceback.format_exception(kind, value, tb)).splitlines()
    sys.stderr.write("".join(f"[rank {rank()}] {line}\n" for line in lines))
    sys.stderr.write(f"[rank {rank()}] pgmpi: aborting all {size()} ranks\n")
    sys.stderr.flush()
    abort(1)


def install_excepthook() -> None:
    """With several ranks, an exception on one rank would otherwise leave the others blocked
    in their next collective until the allocation runs out: make every uncaught exception
    end the job (``PGMPI_NO_ABORT=1`` turns this off). One of several processes that a
    launcher started as lone ranks gets it too, so the ``launcher_problem()`` error is one
    line per process instead of a traceback each. With one process, a CollectiveError is
    one line too."""
    if os.environ.get("PGMPI_NO_ABORT") == "1":
        return
    if size() > 1 or launcher_problem() is not None:
        sys.excepthook = _excepthook
    elif sys.excepthook is sys.__excepthook__:  # one process: the same one line as several
        sys.excepthook = _one_process_excepthook


def _one_process_excepthook(kind, value, tb) -> None:
    """One process: a :class:`CollectiveError` (a bad setting, a blow-up, a full disk) is
    one line, as with several ranks; anything else, Python's traceback."""
    if isinstance(value, CollectiveError):
        sys.stderr.write(f"pgmpi: error: {kind.__name__}: {value}\n")
        sys.stderr.flush()
        return
    sys.__excepthook__(kind, value, tb)
