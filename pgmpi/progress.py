"""A run as :mod:`pgmpi.plot` reads it: ``progress.csv`` as columns (:func:`read_progress`),
the x axes it can be drawn against (:data:`X_AXES`, :func:`x_values`), the runs' labels
(:func:`run_labels`), the game's score range (:func:`game_scale`) and a constant column's
value (:func:`constant`). No matplotlib here.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

X_AXES = {  # --x choice: (progress.csv column, axis label)
    "steps": ("steps", "agent steps (all ranks)"),
    "minutes": ("time/elapsed_s", "minutes of training"),
    "episodes": ("episodes", "games played"),
    "update": ("update", "update"),
    "generation": ("generation", "generation"),
}


class PlotError(ValueError):
    """A run or an output path that cannot be plotted; the message is one line, which
    ``python -m pgmpi.plot`` prints before exiting with status 2."""


def read_progress(log_dir: str | Path) -> dict[str, list[float]]:
    """``log_dir/progress.csv`` as columns of floats (an empty cell, as a column added by a
    resumed run leaves in older rows, is NaN), in the CSV's column order.

    Raises:
        PlotError: if the folder or its ``progress.csv`` is missing, or the CSV has no rows.
    """
    log_dir = Path(log_dir)
    path = log_dir / "progress.csv"
    if not log_dir.exists():
        raise PlotError(f"no run folder {str(log_dir)!r}")
    if not log_dir.is_dir():
        raise PlotError(f"{str(log_dir)!r} is not a folder (give a run's log dir)")
    if not path.is_file():
        raise PlotError(f"{str(log_dir)!r} has no progress.csv (not a run's log dir?)")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise PlotError(f"cannot read {str(path)!r}: {e}") from None
    if not rows:
        raise PlotError(f"{str(path)!r} has no rows yet")
    return {key: [_number(r.get(key)) for r in rows] for key in rows[0] if key is not None}


def _number(text: str | None) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def x_values(columns: dict[str, list[float]], x: str, where: str | Path) -> list[float]:
    """The x coordinates of one run's rows for the ``--x`` choice ``x``; minutes are the
    seconds since ``train`` was called, with each later call (a resumed run's too) put after
    the previous one, since ``time/elapsed_s`` restarts at 0 with each.

    Raises:
        PlotError: if the run (in folder ``where``) has no such column.
    """
    key, _ = X_AXES[x]
    if key not in columns:
        others = [name for name, (k, _) in X_AXES.items() if k in columns]
        raise PlotError(
            f"{str(where)!r} has no {key!r} column for --x {x} (it has: {', '.join(others)})"
        )
    if x != "minutes":
        return columns[key]
    joined = []
    offset = 0.0
    previous = 0.0
    for seconds in columns[key]:
        if seconds < previous:  # a new call to train: its clock starts again at 0
            offset += previous
        previous = seconds if not math.isnan(seconds) else previous
        joined.append((seconds + offset) / 60)
    return joined


def run_labels(runs: list[Path]) -> list[str]:
    """Each run's folder name; where names repeat, enough of the parent folders to tell the
    runs apart (``a/seed0`` and ``b/seed0``)."""
    parts = [Path(r).resolve().parts for r in runs]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [str(r) for r in runs]  # the same folder given twice


# A game's own score range, by a word of its env id: the return panel is drawn on it.
GAME_SCALES = {"Pong": (-21.0, 21.0), "CartPole": (0.0, 500.0)}


def game_scale(log_dir: Path) -> tuple[str | None, tuple[float, float] | None]:
    """The run's env id (from ``config.json``, None if unreadable) and its score range, if
    ``GAME_SCALES`` knows the game."""
    try:
        env = json.loads((log_dir / "config.json").read_text()).get("env")
    except (OSError, ValueError, AttributeError):
        return None, None
    env = env if isinstance(env, str) else None
    for word, scale in GAME_SCALES.items():
        if env and word in env:
            return env, scale
    return env, None


def constant(values: list[float]) -> float | None:
    """The one value of a column whose finite values are all equal (NaN if it has none),
    else None."""
    finite = {v for v in values if not math.isnan(v)}
    if len(finite) > 1:
        return None
    return finite.pop() if finite else math.nan
