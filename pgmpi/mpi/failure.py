"""What the job does when something fails: errors, Ctrl-C and (with several ranks) aborts.

* :class:`~pgmpi.mpi.comm.CollectiveError` and its subclasses are raised on every rank at
  the same point. With more than one rank, an uncaught one is printed once, by the root,
  and every rank exits with status 1.
* Any other uncaught exception on any rank prints its traceback labelled with the rank and
  calls ``MPI_Abort``, so the job ends promptly instead of hanging in the next collective.
* Inside :func:`deferred_interrupts` (the training loops), Ctrl-C only sets a flag; the
  ranks agree on it with :func:`interrupt_requested` at an update boundary, save, and raise
  KeyboardInterrupt together, which ends the job with status 130.

:func:`install_excepthook` is called by :func:`pgmpi.mpi.init`, not at import.
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
_received: list[int] = []  # the stop signals received inside deferred_interrupts(), in order


@contextmanager
def deferred_interrupts():
    """Inside the block, Ctrl-C (SIGINT), SIGTERM and SIGUSR1 only note the signal, which
    :func:`interrupt_requested` reports, so training can stop at the next update boundary
    with every rank agreed and the checkpoint saved. A second one stops at once: Ctrl-C
    raises KeyboardInterrupt, the others exit with status 128 + the signal's number.

    Outside the main thread (where Python cannot take signals) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _received:  # the second one: the user, or the batch system, will not wait
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + signum)
        _received.append(signum)
        if is_root():  # os.write, not print: a handler may run in the middle of a print
            name = signal.Signals(signum).name
            again = "Ctrl-C" if signum == signal.SIGINT else name
            os.write(
                2,
                f"pgmpi: {name}: stopping at the end of this update "
                f"({again} again: at once)\n".encode(),
            )

    _received.clear()
    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler_before in previous.items():
            # None: a handler set outside Python, which cannot be put back: the default
            signal.signal(s, signal.SIG_DFL if handler_before is None else handler_before)
        if previous[signal.SIGINT] is None:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        _received.clear()


def interrupt_requested(failed: bool = False) -> tuple[int | None, bool]:
    """(the stop signal that reached any rank inside :func:`deferred_interrupts`, SIGINT
    first, else None; whether any rank passed ``failed=True``), the same on every rank.
    Each rank's flags count as they stand when it calls this. Collective."""
    flags = np.array([int(s in _received) for s in STOP_SIGNALS] + [int(failed)], dtype=np.int64)
    allreduce_sum_(flags)
    stop = next((int(s) for s, f in zip(STOP_SIGNALS, flags, strict=False) if f), None)
    return stop, bool(flags[-1])


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
    line per process instead of a traceback each."""
    several = size() > 1 or launcher_problem() is not None
    if several and os.environ.get("PGMPI_NO_ABORT") != "1":
        sys.excepthook = _excepthook
