"""The watchdog on collectives: a rank or host that stops answering, or ranks that make
different collectives, end the job, named.

A rank that stays in one collective past its deadline (a rank or host stopped or cut off)
ends the job with ``MPI_Abort``; the root names the ranks that did not arrive or fell silent.
The deadline is set with :func:`pgmpi.mpi.set_deadline` or ``PGMPI_DEADLINE*``.

Each arrival also carries its call site (:func:`pgmpi.mpi.sites.call_site`). When a rank's
n-th collective comes from another place than the root's n-th (``if is_root():
agent.save(path)``: the root saves while the others train), or a rank ends its script while
another waits, the root names both places and ends the job within seconds, without waiting
for the deadline. The check rides on the deadline's messages: with the deadline off
(``PGMPI_DEADLINE=0 PGMPI_DEADLINE_FACTOR=0``), nothing is checked.
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
from pgmpi.mpi.sites import END, NO_SITE, SIZE, disagreement, mismatch_text, pack, unpack


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
    # A rank at exit while another waits is a mismatch only after this long: a stop signal
    # that ends every rank can end them a collective apart, and the root's exit clears it.
    GONE_S = 3.0
    CONFIRM_S = 0.5  # the root waits at most this long, after a barrier, for the sites
    HISTORY = 64  # the root keeps its own sites of this many recent collectives

    def __init__(self):
        self.limit, self.factor, self.floor = deadline_from_env()
        self.count = 0  # collectives this rank has arrived at
        self.done = 0  # collectives this rank has completed
        self.site = NO_SITE  # (key, text) of the current or last collective
        self.message: tuple[int, np.ndarray] | None = None  # (count, buffer) last sent
        self.entered: float | None = None  # when this rank arrived at the current one
        self.last_done: float | None = None
        self.recent: deque[float] = deque(maxlen=20)  # seconds between collectives
        self.sends: list = []  # (request, buffer) of messages still in flight
        n = comm._COMM.Get_size()
        self.seen = np.zeros(n, dtype=np.int64)  # root: last collective reached, per rank
        self.heard = np.full(n, time.monotonic())  # root: when each rank last wrote
        self.sent = 0  # messages this rank has sent to the root
        self.received = np.zeros(n, dtype=np.int64)  # root: messages received per rank
        self.mine: dict[int, tuple[str, str]] = {}  # root: its site per recent collective
        self.reports: dict[int, tuple[int, str, str]] = {}  # root: each rank's last word
        self.pending: tuple | None = None  # root: (a mismatch with a rank at exit, since)
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

    def enter(self, site: tuple[str, str] = NO_SITE) -> None:
        """This rank arrived at its next collective, called from ``site`` (key, text)."""
        with self.lock:  # the thread's heartbeat reads both: never a new count, old site
            self.count += 1
            self.site = site
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
        self.last_done = now
        self.entered = None
        self.done = self.count

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
        """Root: note its own arrival, read the others' and compare the sites; others: send
        theirs (count and site, :data:`SIZE` bytes; a heartbeat sends the same buffer)."""
        with self.lock:
            self.sends = [(r, b) for r, b in self.sends if not r.Test()]
            if comm._COMM.Get_rank() == 0:
                self.seen[0], self.heard[0] = self.count, time.monotonic()
                self.note(self.count, self.site)
                self.drain()
                self.judge(disagreement(self.mine, self.reports))
            elif self.on():
                if self.message is None or self.message[0] != self.count:
                    self.message = (self.count, pack(self.count, self.site))
                self.send(self.message[1])

    def send(self, buf: np.ndarray) -> None:
        """Others: one message to the root (hold the lock)."""
        self.sends.append((comm._COMM.Isend(buf, dest=0, tag=self.TAG), buf))
        self.sent += 1

    def note(self, count: int, site: tuple[str, str]) -> None:
        """Root: its own collective ``count`` was made at ``site`` (hold the lock)."""
        self.mine[count] = site
        self.mine.pop(count - self.HISTORY, None)

    def drain(self) -> None:
        """Root: receive every message that has come in, and end the job at once if one
        names another collective than the root's at that count (hold the lock)."""
        status = MPI.Status()
        buf = np.zeros(SIZE, dtype=np.uint8)
        while comm._COMM.Iprobe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status):
            r = status.Get_source()
            comm._COMM.Recv(buf, source=r, tag=self.TAG)
            count, key, text = self.reports[r] = unpack(buf)
            if key != END[0]:
                self.seen[r] = max(self.seen[r], count)
            self.heard[r] = time.monotonic()
            self.received[r] += 1
            found = disagreement(self.mine, {r: self.reports[r]})
            if found is not None and END[0] not in (found[2][0], found[3][0]):
                self.mismatch(found)

    def judge(self, found: tuple | None) -> None:
        """Root: act on the :func:`disagreement` of the last words (hold the lock): at once,
        or, with a rank at exit, when it has lasted :attr:`GONE_S`."""
        now = time.monotonic()
        if found is None:
            self.pending = None
        elif END[0] not in (found[2][0], found[3][0]):
            self.mismatch(found)
        elif self.pending is None or self.pending[0] != found:
            self.pending = (found, now)
        elif now - self.pending[1] >= self.GONE_S:
            self.mismatch(found)

    def mismatch(self, found: tuple) -> None:
        """Root: ranks make different collectives: say where, once, and end the job."""
        sys.stderr.write(mismatch_text(found, comm._COMM.Get_size()) + "\n")
        sys.stderr.flush()
        comm.abort(1)

    def confirm(self) -> None:
        """Root, after the barrier of a collective and before its MPI call: every rank sent
        its site before it reached the barrier, so read them (those that have written
        before, for at most :attr:`CONFIRM_S`) and end the job if one differs, before
        mismatched MPI calls hang, or worse, complete with each other's data."""
        if comm._COMM.Get_rank() != 0 or not self.on():
            return
        c = self.count
        until = time.monotonic() + self.CONFIRM_S
        while True:
            with self.lock:
                self.drain()
                if np.all((self.seen[1:] >= c) | (self.received[1:] == 0)):
                    return
            if time.monotonic() > until:
                return
            time.sleep(1e-4)

    def close(self) -> None:
        """At exit: each rank tells the root it has reached :data:`END` (as its next
        collective), and the root waits for every rank to say so, ending the job if one
        waits in a collective instead (as :meth:`judge` does). Then the root receives every
        message still on its way, so that no send is left pending at ``MPI_Finalize`` (over
        TCP that would wait forever)."""
        if not self.used:
            return  # the deadline was off at every arrival: nothing was sent
        self.entered = None
        root = comm._COMM.Get_rank() == 0
        n = comm._COMM.Get_size()
        with self.lock:
            self.limit = self.factor = 0.0  # the thread stops writing
            if root:
                self.note(self.done + 1, END)
            else:
                self.send(pack(self.done + 1, END))
        while root:  # no longer than the gather below waited before there was an END
            with self.lock:
                self.drain()
                self.judge(disagreement(self.mine, self.reports))
                if all(self.reports.get(r, (0, "", ""))[1] == END[0] for r in range(1, n)):
                    break
            time.sleep(0.01)
        with self.lock:
            sent = comm._COMM.gather(self.sent, root=0)
            if sent is not None:
                buf = np.zeros(SIZE, dtype=np.uint8)
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
        entered = self.entered
        count = self.count
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
        me = comm._COMM.Get_rank()
        n = comm._COMM.Get_size()
        if me == 0:
            with self.lock:
                self.drain()
            now = time.monotonic()
            behind = [r for r in range(n) if self.seen[r] < c]
            # A rank still in an earlier collective that has written since the root arrived
            # at this one, and lately, is held up there by the others (its host's link is
            # fine): named apart, not as a cause. A rank that is computing writes nothing.
            since = self.entered if self.entered is not None else now
            held = [
                r for r in behind if since < self.heard[r] and now - self.heard[r] <= self.SILENT_S
            ]
            missing = [r for r in behind if r not in held]
            silent = [r for r in range(1, n) if self.seen[r] >= c]
            silent = [r for r in silent if now - self.heard[r] > self.SILENT_S]
            parts = []
            if missing:
                last = "/".join(map(str, sorted({int(self.seen[r]) for r in missing})))
                parts.append(f"rank(s) {missing} did not arrive (last arrived at {last})")
            if held:
                ranks = ", ".join(map(str, held))
                parts.append(f"held up in an earlier collective, still answering: {ranks}")
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
        comm.abort(1)  # flushes, and gives the launcher half a second to pass it on


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
