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
