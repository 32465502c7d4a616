"""The MPI boundary: the only package in pgmpi that imports mpi4py.

* :mod:`pgmpi.mpi.comm`: rank, size and the collective verbs, :class:`ExactSum`,
  :func:`agree` and :func:`launcher_problem`;
* :mod:`pgmpi.mpi.watchdog`: the deadline on collectives (a rank or host that stops
  answering ends the job, named);
* :mod:`pgmpi.mpi.failure`: what an error, an uncaught exception or Ctrl-C does to the job;
* :mod:`pgmpi.mpi.counter`: a counter that hands out work without a coordinator, and a
  board of units' results and claims (playing ahead while ranks wait).

Importing it does nothing observable. :func:`init`, called by the algorithms' constructors
(and by the first collective of a script that makes no agent), installs the excepthook and
the handlers of stop signals outside training, reads ``PGMPI_DEADLINE*`` and starts the
watchdog.
"""

from __future__ import annotations

import atexit

from pgmpi.mpi import comm
from pgmpi.mpi.comm import (
    CollectiveError,
    ConfigError,
    ExactSum,
    NonFiniteError,
    WriteError,
    agree,
    allgather_object,
    allreduce_mean_,
    allreduce_sum_,
    barrier,
    broadcast_,
    broadcast_object,
    gather_object,
    global_stats,
    is_root,
    launcher_problem,
    library_version,
    rank,
    ranks_on_node,
    size,
)
from pgmpi.mpi.counter import shared_counter, unit_board
from pgmpi.mpi.failure import (
    deferred_interrupts,
    install_excepthook,
    install_signal_handlers,
    interrupt_requested,
)
from pgmpi.mpi.watchdog import Watchdog


def init() -> Watchdog:
    """Install the excepthook and stop-signal handlers (several ranks), then read
    ``PGMPI_DEADLINE*`` and make the watchdog, once per process; returns the watchdog.
    Every rank reads the same environment, so a bad value raises the same
    :class:`ConfigError` on every rank, printed once."""
    if comm.watch is None:
        install_excepthook()  # first, so that a bad PGMPI_DEADLINE* is one message
        install_signal_handlers()  # SIGTERM outside training: status 143, not a death by 15
        comm.watch = Watchdog()
        if size() > 1:
            atexit.register(_at_exit)  # before mpi4py's MPI_Finalize (LIFO)
    return comm.watch


def _at_exit() -> None:
    """Tell the root this rank reached the end of its script (the watchdog's close), then
    free what :data:`comm.exit_hooks` holds, last made first."""
    comm.inside = True  # to the end: the others may wait in the MPI calls that follow
    comm.watch.close()
    while comm.exit_hooks:
        comm.exit_hooks.pop()()


comm.on_first_collective = init  # a script that makes no agent is initialised there


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
    the root wait 5 s and 10% longer, so the root speaks first. The same messages let the
    root name ranks that make different collectives (a save called on the root only), at
    once: with both rules off, that check is off too. Call it on every rank with the same
    values; not collective.
    """
    init().set(seconds, factor, floor)


__all__ = [
    "CollectiveError",
    "ConfigError",
    "ExactSum",
    "NonFiniteError",
    "Watchdog",
    "WriteError",
    "agree",
    "allgather_object",
    "allreduce_mean_",
    "allreduce_sum_",
    "barrier",
    "broadcast_",
    "broadcast_object",
    "deferred_interrupts",
    "gather_object",
    "global_stats",
    "init",
    "interrupt_requested",
    "is_root",
    "launcher_problem",
    "library_version",
    "rank",
    "ranks_on_node",
    "set_deadline",
    "shared_counter",
    "size",
    "unit_board",
]
