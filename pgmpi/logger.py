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
    """The first line of a run: version, algorithm, env, ranks, MPI library, BLAS threads."""
    return (
        f"pgmpi {__version__} {algorithm} | env {env} | ranks {mpi.size()} | "
        f"{mpi.library_version()} | BLAS {blas['blas']}, {blas['threads']} thread(s)/rank"
        f" | {details}"
    )
