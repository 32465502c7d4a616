"""Progress output on the root rank: one printed line and one CSV row per update.

The logger owns the "am I the root?" check, so algorithm code logs on every rank and only the
root prints or writes (as in Spinning Up's ``logx``). Keys are namespaced like CleanRL's
(``charts/running_reward``, ``perf/steps_per_s``); the CSV in ``log_dir/progress.csv`` has
one column per key and is what ``pgmpi.plot`` reads.
"""

from __future__ import annotations

import csv
from pathlib import Path

from pgmpi import mpi
from pgmpi.version import __version__


class Logger:
    """Prints and records rows of metrics on the root rank; silent elsewhere.

    Args:
        log_dir: folder for ``progress.csv`` (created on the root), or None for print only.
        resume: append to an existing ``progress.csv`` instead of starting a new one.
        quiet: write the CSV but print nothing.
    """

    def __init__(self, log_dir: str | Path | None, resume: bool = False, quiet: bool = False):
        self.path = Path(log_dir) / "progress.csv" if log_dir is not None else None
        self.quiet = quiet
        self._columns: list[str] | None = None
        if self.path is not None and mpi.is_root():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if resume and self.path.exists():
                with open(self.path, newline="") as f:
                    self._columns = next(csv.reader(f), None)
            elif self.path.exists():
                self.path.unlink()

    def print(self, text: str) -> None:
        """Print ``text`` on the root rank."""
        if mpi.is_root() and not self.quiet:
            print(text, flush=True)

    def log(self, row: dict, line: str) -> None:
        """Append ``row`` to the CSV and print ``line``, on the root rank only."""
        if not mpi.is_root():
            return
        self.print(line)
        if self.path is None:
            return
        new = self._columns is None
        if new:
            self._columns = list(row)
        with open(self.path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._columns, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)

    def truncate(self, rows: int) -> None:
        """Keep only the first ``rows`` data rows of the CSV (used when resuming, so the log
        matches the checkpoint's counters even if the run died after logging more)."""
        if self.path is None or not mpi.is_root() or not self.path.exists():
            return
        lines = self.path.read_text().splitlines(keepends=True)
        self.path.write_text("".join(lines[: rows + 1]))


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


def progress_line(row: dict) -> str:
    """ParallelPG's printed line for one update."""
    return (
        f"upd {row['update']:5d} | games {row['episodes']:6d} | steps {row['steps']:10,d} | "
        f"running {row['charts/running_reward']:7.2f} | "
        f"mean100 {row['charts/mean_return_100']:7.2f} | "
        f"steps/s {row['perf/steps_per_s']:6.0f} "
        f"(rank {row['perf/rank_steps_per_s_min']:.0f}-{row['perf/rank_steps_per_s_max']:.0f})"
        f" | wait {100 * row['perf/wait_fraction']:4.1f}%"
        f" | allreduce {1e3 * row['perf/allreduce_s']:5.1f} ms"
    )
