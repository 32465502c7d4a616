"""Progress output on the root rank: one printed line and one CSV row per step.

The logger owns the "am I the root?" check, so algorithm code logs on every rank and only the
root prints or writes (as in Spinning Up's ``logx``). It knows no algorithm: a row is a dict
of figures, namespaced like CleanRL's (``charts/running_reward``, ``perf/steps_per_s``); the
CSV in ``log_dir/progress.csv`` has one column per key and is what ``pgmpi.plot`` reads.
The run's settings go to ``log_dir/config.json``; with ``tensorboard=True`` every row also
goes to TensorBoard scalars in ``log_dir`` (``pip install pgmpi[tensorboard]``).

A run holds a lock on its log dir (``fcntl.flock`` on ``LOG_DIR/.lock``, which the OS drops
when the process ends, however it ends), so a second run there is refused, naming the first,
instead of interleaving rows into its CSV and overwriting its checkpoint.

With tracing on, ``log_dir/trace.csv`` gets one row per update and rank (columns
``TRACE_COLUMNS``): where the update started on that rank's clock (seconds since its call
to ``train``: a later call, or a resumed run, starts again from 0) and the seconds it spent
playing, computing gradients, waiting at the Allreduce (for the slowest rank, then in the
collective itself) and applying the update. ``python -m pgmpi.plot --timeline LOG_DIR``
draws it like a profiler's timeline.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import socket
import time
from pathlib import Path

import numpy as np

from pgmpi import mpi
from pgmpi.version import __version__

TRACE_COLUMNS = ("update", "rank", "start_s", "play_s", "gradient_s", "wait_s", "update_s")


class Logger:
    """Prints and records rows of metrics on the root rank; silent elsewhere.

    Args:
        log_dir: folder for ``progress.csv`` (created and locked by the root), or None for
            print only.
        resume: append to an existing ``progress.csv`` instead of starting a new one.
        quiet: write the CSV but print nothing.
        trace: also write ``trace.csv`` (see :meth:`trace`).
        tensorboard: also write every row as TensorBoard scalars in the log dir.

    Raises:
        ConfigError: on every rank, if the log dir cannot be made or written, or another
            run holds it.

    Collective: every rank must call this.
    """

    def __init__(
        self,
        log_dir: str | Path | None,
        resume: bool = False,
        quiet: bool = False,
        trace: bool = False,
        tensorboard: bool = False,
        overwrite: bool = False,
        config: dict | None = None,
    ):
        self.path = Path(log_dir) / "progress.csv" if log_dir is not None else None
        self.trace_path = Path(log_dir) / "trace.csv" if log_dir is not None else None
        self.quiet = quiet
        self.tracing = trace
        self.problem: str | None = None  # why the root stopped writing (a full disk, say)
        self._columns: list[str] | None = None
        self._said: set[str] = set()  # what print_once has printed
        self._scalars = None
        self._rows = 0
        problem = None
        if self.path is not None and mpi.is_root():
            folder = self.path.parent
            ours = (folder / LOCK_NAME).exists()  # pgmpi has logged here before
            problem = lock_log_dir(folder)
            if problem is None and not resume:
                problem = used_problem(folder, ours, overwrite)
                if problem is not None:  # refused: leave the folder as it was found
                    unlock_log_dir(folder, remove=not ours)
            try:
                if problem is None and resume and self.path.exists():
                    with open(self.path, newline="") as f:
                        self._columns = next(csv.reader(f), None)
                elif problem is None:  # a new run: an earlier one's files go (overwrite)
                    for old in (self.path, self.trace_path, *folder.glob(EVENTS)):
                        old.unlink(missing_ok=True)
                text = json.dumps(config, indent=2) + "\n"
                saved = folder / "config.json"
                if problem is None and config is not None and not _holds(saved, text):
                    self._write(saved, text)
                    problem = self.problem
            except OSError as e:
                problem = f"cannot use log dir {str(folder)!r}: {e.strerror or e}"
            if problem is None and tensorboard:
                try:
                    from pgmpi.tensorboard import ScalarWriter

                    self._scalars = ScalarWriter(folder)
                except ImportError as e:
                    problem = str(e)
        mpi.agree({}, problem)  # a bad log dir stops every rank here, before anything is written

    def _write(self, path: Path, text: str, mode: str = "replace") -> None:
        """Write ``text`` to ``path`` (replacing it whole, atomically, or appending with
        ``mode="a"``); a failure is kept in ``problem`` and stops all further writing."""
        if self.problem is not None:
            return
        try:
            if mode == "a":
                with open(path, "a", newline="") as f:
                    f.write(text)
                return
            part = path.with_name(path.name + ".part")
            part.write_text(text)
            os.replace(part, path)
        except OSError as e:
            self.problem = f"cannot write {str(path)!r}: {e.strerror or e} (errno {e.errno})"

    def print(self, text: str) -> None:
        """Print ``text`` on the root rank."""
        if mpi.is_root() and not self.quiet:
            print(text, flush=True)

    def print_once(self, text: str) -> None:
        """Print ``text`` on the root rank, the first time this logger is given it only."""
        if text not in self._said:
            self._said.add(text)
            self.print(text)

    def log(self, row: dict, line: str, step: int | None = None) -> None:
        """Append ``row`` to the CSV (and to TensorBoard, at ``step``: default, the rows
        logged so far) and print ``line``, on the root rank only."""
        if not mpi.is_root():
            return
        self.print(line)
        self._rows += 1
        if self._scalars is not None:
            self._scalars.write(row, self._rows if step is None else step)
        if self.path is None:
            return
        new = self._columns is None
        if new:
            self._columns = list(row)
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self._columns, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)
        self._write(self.path, text.getvalue(), mode="a")

    def close(self) -> None:
        """Finish the TensorBoard file, if any (the CSV is closed after every row)."""
        if self._scalars is not None:
            self._scalars.close()
            self._scalars = None

    def trace(self, update: int, ranks: list[dict] | None) -> None:
        """Append update ``update``'s rows to ``trace.csv`` on the root rank, from every
        rank's ``start_s``, ``play_s``, ``grad_s``, ``allreduce_s`` and ``total_s`` (the
        figures :func:`rank_figures` reads; the update's own step is what is left)."""
        if not (mpi.is_root() and self.tracing and self.trace_path is not None and ranks):
            return
        text = io.StringIO()
        writer = csv.writer(text)
        if not self.trace_path.exists():
            writer.writerow(TRACE_COLUMNS)
        for r, t in enumerate(ranks):
            rest = t["total_s"] - t["play_s"] - t["grad_s"] - t["allreduce_s"]
            times = (t["start_s"], t["play_s"], t["grad_s"], t["allreduce_s"], rest)
            writer.writerow([update, r, *(f"{x:.6f}" for x in times)])
        self._write(self.trace_path, text.getvalue(), mode="a")

    def truncate(self, rows: int) -> None:
        """Keep only the first ``rows`` data rows of the CSV, and of ``trace.csv`` the rows
        of updates up to ``rows`` (used when resuming, so the logs match the checkpoint's
        counters even if the run died after logging more)."""
        if self.path is None or not mpi.is_root():
            return
        if self.path.exists():
            lines = self.path.read_text().splitlines(keepends=True)
            self.path.write_text("".join(lines[: rows + 1]))
        if self.trace_path.exists():
            lines = self.trace_path.read_text().splitlines(keepends=True)
            keep = [line for line in lines[1:] if int(line.split(",", 1)[0]) <= rows]
            self.trace_path.write_text("".join(lines[:1] + keep))


LOCK_NAME = ".lock"
EVENTS = "events.out.tfevents.*"  # TensorBoard's files


def _holds(path: Path, text: str) -> bool:
    """Whether the file at ``path`` holds ``text`` already."""
    return path.is_file() and path.read_text() == text


def used_problem(folder: Path, ours: bool, overwrite: bool) -> str | None:
    """Why a new run may not start in ``folder``, or None.

    * In a folder pgmpi never locked (``ours`` False), any file by a name pgmpi writes
      (``progress.csv``, ``config.json``, ``trace.csv``, TensorBoard's) is not pgmpi's, and
      pgmpi does not replace it, whatever it is told.
    * In pgmpi's own folder, an earlier run is a ``progress.csv`` with a row or a
      ``checkpoint.npz``: refused unless ``overwrite``. What a run that failed before its
      first row left there (its ``config.json``, a header) is pgmpi's own, and a new run
      cleans it away.
    """
    csv_path = folder / "progress.csv"
    names = [n for n in ("progress.csv", "config.json", "trace.csv") if (folder / n).is_file()]
    names += sorted(p.name for p in folder.glob(EVENTS))
    if not ours:
        if not names:
            return None
        which = " and ".join(f"a {n}" for n in names[:2]) + (" and more" if names[2:] else "")
        return (
            f"log dir {str(folder)!r} holds {which} that pgmpi did not write (it never logged "
            "there): choose another log dir (nothing was changed)"
        )
    rows = 0
    if csv_path.is_file():
        with open(csv_path, newline="") as f:
            rows = max(sum(1 for _ in f) - 1, 0)
    held = (folder / "checkpoint.npz").is_file()
    if overwrite or (rows == 0 and not held):
        return None
    what = f"{rows} rows in progress.csv" + (", a checkpoint.npz" if held else "")
    return (
        f"log dir {str(folder)!r} holds an earlier run ({what}): continue it with --resume "
        "(Agent.load), or pass --overwrite (overwrite=True) to replace it; nothing was changed"
    )


_held: dict[str, int] = {}  # log dirs this process has locked: resolved path -> lock file fd


def lock_log_dir(folder: str | Path) -> str | None:
    """Make ``folder`` and lock it for this process until it exits; the problem, or None.

    The lock file holds the host, pid and start time of the run holding it, for the message
    another run gets. A process may lock the same folder again (a resumed agent in the same
    script). ``flock`` is per host on some network file systems; the message then still
    names the holder only if both runs are on one host.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"cannot use log dir {str(folder)!r}: it exists and is not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        key = str(folder.resolve())
        if key in _held:
            return None
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        return f"cannot use log dir {str(folder)!r}: {e.strerror or e}"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 1000, 0).decode(errors="replace").strip() or "unknown holder"
        os.close(fd)
        return (
            f"log dir {str(folder)!r} is in use by another run ({holder}); "
            "wait for it to end or choose another log dir"
        )
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    os.ftruncate(fd, 0)
    os.pwrite(
        fd, f"host {socket.gethostname()}, pid {os.getpid()}, started {started}\n".encode(), 0
    )
    _held[key] = fd  # kept open: closing it would drop the lock
    return None


def unlock_log_dir(folder: str | Path, remove: bool = False) -> None:
    """Drop this process's lock on ``folder`` (and, with ``remove``, its lock file)."""
    fd = _held.pop(str(Path(folder).resolve()), None)
    if fd is not None:
        if remove:
            (Path(folder) / LOCK_NAME).unlink(missing_ok=True)
        os.close(fd)


def run_header(algorithm: str, env: str, blas: dict, details: str) -> str:
    """The first line of a run: version, algorithm, env, ranks, MPI library, BLAS threads
    per rank and where that count came from (``blas`` is :func:`threads.cap_blas_threads`'s)."""
    n = blas["threads"]
    source = f" from {blas['source']}" if blas.get("source") else ""
    return (
        f"pgmpi {__version__} {algorithm} | env {env} | ranks {mpi.size()} | "
        f"{mpi.library_version()} | BLAS {blas['blas']}, {n} thread{'s' * (n != 1)}/rank"
        f"{source} | {details}"
    )


def mean(values) -> float:
    """The mean of ``values``, or NaN if there are none (a logged figure)."""
    values = list(values)
    return float(np.mean(values)) if values else float("nan")


def rank_figures(ranks: list[dict]) -> dict:
    """The ``perf/`` columns of one update from every rank's ``steps``, ``play_s``,
    ``grad_s``, ``allreduce_s`` and ``total_s`` (seconds of the whole update).

    The last rank to reach the Allreduce waits for no one, so the fastest rank's
    ``allreduce_s`` is the collective's own cost, and what the others spent beyond it is
    waiting: ``wait_fraction`` is that wait over all ranks' update time.
    """
    wall = max(r["total_s"] for r in ranks)
    cost = min(r["allreduce_s"] for r in ranks)
    rates = [r["steps"] / max(r["play_s"], 1e-9) for r in ranks]
    return {
        "perf/steps_per_s": sum(r["steps"] for r in ranks) / max(wall, 1e-9),
        "perf/rank_steps_per_s_min": min(rates),
        "perf/rank_steps_per_s_max": max(rates),
        "perf/allreduce_s": cost,
        "perf/wait_fraction": sum(r["allreduce_s"] - cost for r in ranks) / (len(ranks) * wall),
        "perf/grad_s": max(r["grad_s"] for r in ranks),
    }
