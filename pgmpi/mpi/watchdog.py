"""The watchdog on collectives: a rank or host that stops answering ends the job, named.

A rank that stays in one collective past its deadline (a rank or host stopped or cut off)
ends the job with ``MPI_Abort``; the root names the ranks that did not arrive or fell silent.
The deadline is set with :func:`pgmpi.mpi.set_deadline` or ``PGMPI_DEADLINE*``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque

import numpy as np
from mpi4py import MPI

from pgmpi.mpi import comm
from pgmpi.mpi.comm import ConfigError


class Watchdog:
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
        self.limit, self.factor, self.floor = deadline_from_env()
        self.count = 0  # collectives this rank has arrived at
        self.entered: float | None = None  # when this rank arrived at the current one
        self.last_done: float | None = None
        self.recent: deque[float] = deque(maxlen=20)  # seconds between collectives
        self.sends: list = []  # (request, buffer) of messages still in flight
        n = comm._COMM.Get_size()
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

    def set(self, seconds=None, factor=None, floor=None) -> None:
        """Replace the limit, factor or floor (None leaves one as it is); see
        :func:`pgmpi.mpi.set_deadline`."""
        for name, value in (("seconds", seconds), ("factor", factor), ("floor", floor)):
            if value is not None and not (0 <= value < float("inf")):
                raise ConfigError(
                    f"set_deadline: {name} must be a finite number >= 0, got {value!r}"
                )
        self.limit = self.limit if seconds is None else float(seconds)
        self.factor = self.factor if factor is None else float(factor)
        self.floor = self.floor if floor is None else float(floor)

    def poll(self) -> None:
        """Called now and then by a rank waiting at a collective: without a thread of its
        own, the watchdog checks the deadline here (missing a hang inside the C call)."""
        if not self.threads:
            self.check()

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
                (
                    rule,
                    f"{self.factor:g} x the longest of the last {len(recent)} intervals "
                    f"between collectives ({max(recent):.3g} s), at least {self.floor:g} s "
                    "(PGMPI_DEADLINE_FACTOR, PGMPI_DEADLINE_FLOOR)",
                )
            )
        if not limits:
            return None, ""
        seconds, why = min(limits)
        if comm._COMM.Get_rank() != 0:
            seconds += self.GRACE_S + 0.1 * seconds
        return seconds, why

    def tell_root(self) -> None:
        """Root: note its own arrival and read the others'; others: send theirs (8 bytes)."""
        with self.lock:
            self.sends = [(r, b) for r, b in self.sends if not r.Test()]
            if comm._COMM.Get_rank() == 0:
                self.seen[0], self.heard[0] = self.count, time.monotonic()
                self.drain()
            elif self.on():
                buf = np.array([self.count], dtype=np.int64)
                self.sends.append((comm._COMM.Isend(buf, dest=0, tag=self.TAG), buf))
                self.sent += 1

    def drain(self) -> None:
        """Root: receive every arrival number that has come in (hold the lock)."""
        status, buf = MPI.Status(), np.zeros(1, dtype=np.int64)
        while comm._COMM.Iprobe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status):
            r = status.Get_source()
            comm._COMM.Recv(buf, source=r, tag=self.TAG)
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
            sent = comm._COMM.gather(self.sent, root=0)
            if sent is not None:
                buf = np.zeros(1, dtype=np.int64)
                for r in range(1, len(sent)):
                    for _ in range(sent[r] - int(self.received[r])):
                        comm._COMM.Recv(buf, source=r, tag=self.TAG)
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
        me, n = comm._COMM.Get_rank(), comm._COMM.Get_size()
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
        comm.abort(1)


def deadline_from_env() -> tuple[float, float, float]:
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
            # this error is raised everywhere at the same point, in pgmpi.mpi.init.
            raise ConfigError(
                f"PGMPI_DEADLINE{name} must be a number of seconds >= 0 or 'off', got {text!r}"
            )
        values.append(value)
    return values[0], values[1], values[2]
